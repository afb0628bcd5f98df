"""Object metadata shared by every view: identity, version, labels, ownership."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from volsched.cache.objects.fields import Fields, shown

_VERSION = re.compile(r"[0-9]{1,19}")


def is_older_version(version: int | str, than: int | str) -> bool:
    """Whether resource version ``version`` is older than ``than``, compared as
    integers as kube-scheduler's caches compare them (as a view holds them, or as the
    text of a watch event). An unknown version — 0, empty, not digits, as in a snapshot
    file — is never older, and nothing is older than it."""
    return 0 < _version_number(version) < _version_number(than)


def _version_number(version: int | str) -> int:
    if isinstance(version, int):
        return version
    return int(version) if version.isascii() and version.isdigit() else 0


@dataclass(frozen=True, slots=True)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool


@dataclass(frozen=True, slots=True)
class ObjectMeta:
    """The parts of ``metadata`` the scheduler reads.

    ``resource_version`` is an integer because the API server's versions are, and the
    assume cache compares them numerically (upstream parses them the same way).
    """

    name: str
    namespace: str = ""
    uid: str = ""
    resource_version: int = 0
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    creation_timestamp: float = 0.0
    deletion_timestamp: float | None = None
    owner_references: tuple[OwnerReference, ...] = ()

    @property
    def key(self) -> str:
        """``namespace/name`` for namespaced objects, ``name`` otherwise."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def controller(self) -> OwnerReference | None:
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None


def parse_meta(raw: object, kind: str, namespaced: bool) -> ObjectMeta:
    meta = Fields(raw, kind, "", "metadata")
    name = meta.str("name")
    meta.name = name
    if not name:
        raise meta.fail("name", "is required")
    namespace = meta.str("namespace", "default" if namespaced else "")
    if not namespaced:
        namespace = ""
    version_text = meta.raw("resourceVersion")
    if version_text is None or version_text == "":
        version = 0
    else:
        # Opaque to clients in general; the API servers volsched talks to write etcd's
        # revision, a non-negative int64, in ASCII digits.
        text = str(version_text) if isinstance(version_text, str | int) else ""
        if isinstance(version_text, bool) or not _VERSION.fullmatch(text):
            raise meta.fail("resourceVersion", f"{shown(version_text)} is not an integer")
        version = int(text)
    owners = tuple(
        OwnerReference(
            api_version=ref.str("apiVersion"),
            kind=ref.str("kind"),
            name=ref.str("name"),
            uid=ref.str("uid"),
            controller=ref.bool("controller"),
        )
        for ref in meta.items("ownerReferences")
    )
    return ObjectMeta(
        name=name,
        namespace=namespace,
        uid=meta.str("uid"),
        resource_version=version,
        labels=meta.str_map("labels"),
        annotations=meta.str_map("annotations"),
        creation_timestamp=meta.timestamp("creationTimestamp") or 0.0,
        deletion_timestamp=meta.timestamp("deletionTimestamp"),
        owner_references=owners,
    )


class NamespacedView:
    """Name, namespace and key of a namespaced view, read through its metadata."""

    __slots__ = ()
    meta: ObjectMeta

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def key(self) -> str:
        return self.meta.key
