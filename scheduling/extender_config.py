"""The ``extenders:`` list of a KubeSchedulerConfiguration: the HTTP extenders volsched
calls as kube-scheduler does.

Fields, defaults and validation are upstream's (``k8s.io/kube-scheduler/config/v1``
``Extender`` and ``validateExtenders``): a positive ``weight`` when ``prioritizeVerb``
is set, at most one extender with a ``bindVerb``, managed resources that are valid and
unique extended resource names, ``httpTimeout`` 5 s when unset or zero. Error texts keep
upstream's ``Invalid value: …: …`` wording after the file and field path, so an operator
can search them. A few mistakes upstream only meets at the first call (a URL that is not
HTTP, a duration or base64 field it cannot decode) are refused here, with one line.

Also here, because it is a rule of the configuration and pure: extended resources an
extender manages with ``ignoredByScheduler: true`` are not checked by NodeResourcesFit
(upstream writes them into that plugin's ``ignoredResources``, replacing the list).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from volsched.cache.errors import ConfigError
from volsched.cache.objects.core import Pod
from volsched.cache.objects.durations import BEYOND_RANGE, beyond_range
from volsched.cache.objects.durations import go_duration_seconds as parse_go_duration
from volsched.cache.objects.fields import shown
from volsched.scheduling.policy import PolicySpec

DEFAULT_HTTP_TIMEOUT_SECONDS = 5.0
INT64_MAX = 2**63 - 1
# What kube-scheduler's Filter plugin for resources is called in a Policy.
FIT_PREDICATE_KIND = "PodFitsResources"

_FIELDS = (
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
)
_TLS_FIELDS = (
    "insecure",
    "serverName",
    "certFile",
    "keyFile",
    "caFile",
    "certData",
    "keyData",
    "caData",
)

_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_HELP = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_SUBDOMAIN_HELP = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. "
    "'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


@dataclass(frozen=True, slots=True)
class TLSSpec:
    """``tlsConfig``: client TLS towards the extender (data fields already decoded)."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""

    @property
    def has_ca(self) -> bool:
        return bool(self.ca_file or self.ca_data)


@dataclass(frozen=True, slots=True)
class ManagedResource:
    name: str
    ignored_by_scheduler: bool = False


@dataclass(frozen=True, slots=True)
class ExtenderSpec:
    """One entry of ``extenders:``. Its name, in logs, metrics and errors, is its URL
    prefix, as upstream names an extender."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls: TLSSpec | None = None
    http_timeout_seconds: float = DEFAULT_HTTP_TIMEOUT_SECONDS
    node_cache_capable: bool = False
    managed_resources: tuple[ManagedResource, ...] = ()
    ignorable: bool = False

    @property
    def name(self) -> str:
        return self.url_prefix

    def is_interested(self, pod: Pod) -> bool:
        """Upstream's IsInterested: an extender managing no resources sees every pod;
        otherwise only pods whose containers request (or limit) one of them."""
        if not self.managed_resources:
            return True
        managed = {resource.name for resource in self.managed_resources}
        return any(name in managed for name in pod.requests)


def _go_value(value: Any) -> str:
    """How Go's field.Invalid shows a value: strings quoted, numbers bare."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _At:
    def __init__(self, source: str, path: str) -> None:
        self.source = source
        self.path = path

    def at(self, key: str | int) -> _At:
        return _At(
            self.source, f"{self.path}[{key}]" if isinstance(key, int) else f"{self.path}.{key}"
        )

    def fail(self, problem: str) -> ConfigError:
        return ConfigError(f"{self.source}: {self.path}: {problem}")

    def invalid(self, value: Any, detail: str) -> ConfigError:
        return self.fail(f"Invalid value: {_go_value(value)}: {detail}")


def _body(value: Any, at: _At, allowed: Iterable[str]) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise at.fail("must be a mapping")
    known = set(allowed)
    for key in value:
        if key not in known:
            raise at.at(str(key)).fail("unknown field")
    return value


def _string(body: Mapping[str, Any], key: str, at: _At) -> str:
    value = body.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise at.at(key).fail(f"must be a string, not {_go_value(value)}")
    return value


def _flag(body: Mapping[str, Any], key: str, at: _At) -> bool:
    value = body.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise at.at(key).fail(f"must be true or false, not {_go_value(value)}")
    return value


def _pem(body: Mapping[str, Any], key: str, at: _At) -> bytes:
    """A ``[]byte`` field: base64 in YAML and JSON, as Go encodes bytes."""
    text = _string(body, key, at)
    if not text:
        return b""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise at.at(key).fail("must be base64-encoded PEM data") from None


def go_duration_seconds(value: Any, at: _At) -> float:
    """A metav1.Duration (``5s``, ``1m30s``, ``500ms``, ``0s``) in seconds."""
    if isinstance(value, bool) or not isinstance(value, str) or not value:
        raise at.fail(f"must be a duration such as 5s, not {_go_value(value)}")
    seconds = parse_go_duration(value)
    if seconds is None and beyond_range(value):
        raise at.fail(f"{BEYOND_RANGE}, not {_go_value(value)}")
    if seconds is None:
        raise at.fail(f"must be a duration such as 5s, not {_go_value(value)}")
    return seconds


def qualified_name_problems(name: str) -> list[str]:
    """apimachinery's IsQualifiedName, its messages."""
    parts = name.split("/")
    if len(parts) == 1:
        prefix, short = "", parts[0]
    elif len(parts) == 2:
        prefix, short = parts
        if not prefix:
            return ["prefix part must be non-empty"]
        if len(prefix) > 253:
            return ["prefix part must be no more than 253 characters"]
        if not _SUBDOMAIN.match(prefix):
            return ["prefix part " + _SUBDOMAIN_HELP]
    else:
        return [
            "a qualified name " + _NAME_HELP + " with an optional DNS subdomain prefix and "
            "'/' (e.g. 'example.com/MyName')"
        ]
    if not short:
        return ["name part must be non-empty"]
    if len(short) > 63:
        return ["name part must be no more than 63 characters"]
    if not _NAME_PART.match(short):
        return ["name part " + _NAME_HELP]
    return []


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: outside ``kubernetes.io/``, not a quota
    ``requests.`` name, and still qualified once ``requests.`` is prefixed."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not qualified_name_problems("requests." + name)


def _managed(value: Any, at: _At, seen: set[str]) -> tuple[ManagedResource, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise at.fail("must be a list")
    resources = []
    for index, item in enumerate(value):
        entry_at = at.at(index)
        body = _body(item, entry_at, ("name", "ignoredByScheduler"))
        name_at = entry_at.at("name")
        name = _string(body, "name", entry_at)
        problems = qualified_name_problems(name)
        if problems:
            raise name_at.invalid(name, problems[0])
        if not is_extended_resource_name(name):
            raise name_at.invalid(name, "is an invalid extended resource name")
        if name in seen:
            raise name_at.invalid(name, "duplicate extender managed resource name")
        seen.add(name)
        resources.append(ManagedResource(name, _flag(body, "ignoredByScheduler", entry_at)))
    return tuple(resources)


def _tls(value: Any, at: _At) -> TLSSpec | None:
    if value is None:
        return None
    body = _body(value, at, _TLS_FIELDS)
    tls = TLSSpec(
        insecure=_flag(body, "insecure", at),
        server_name=_string(body, "serverName", at),
        cert_file=_string(body, "certFile", at),
        key_file=_string(body, "keyFile", at),
        ca_file=_string(body, "caFile", at),
        cert_data=_pem(body, "certData", at),
        key_data=_pem(body, "keyData", at),
        ca_data=_pem(body, "caData", at),
    )
    if tls.insecure and tls.has_ca:
        # client-go's TLS config refuses the same, when kube-scheduler starts.
        raise at.fail("specifying a root certificates file with the insecure flag is not allowed")
    return tls


def _weight(body: Mapping[str, Any], at: _At) -> int:
    value = body.get("weight", 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise at.at("weight").fail(f"must be an integer, not {_go_value(value)}")
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        # An int64 upstream (``Extender.Weight``): its decoder refuses the file.
        raise at.at("weight").fail(
            f"must be between {-INT64_MAX - 1} and {INT64_MAX} (an int64), not {shown(value)}"
        )
    return value


def _extender(item: Any, at: _At, seen_resources: set[str]) -> ExtenderSpec:
    body = _body(item, at, _FIELDS)
    url = _string(body, "urlPrefix", at)
    if not url.startswith(("http://", "https://")) or len(url.rstrip("/")) <= len("https://"):
        raise at.at("urlPrefix").fail(f"must be an http:// or https:// URL, not {_go_value(url)}")
    spec = ExtenderSpec(
        url_prefix=url,
        filter_verb=_string(body, "filterVerb", at),
        preempt_verb=_string(body, "preemptVerb", at),
        prioritize_verb=_string(body, "prioritizeVerb", at),
        bind_verb=_string(body, "bindVerb", at),
        weight=_weight(body, at),
        enable_https=_flag(body, "enableHTTPS", at),
        tls=_tls(body.get("tlsConfig"), at.at("tlsConfig")),
        node_cache_capable=_flag(body, "nodeCacheCapable", at),
        managed_resources=_managed(
            body.get("managedResources"), at.at("managedResources"), seen_resources
        ),
        ignorable=_flag(body, "ignorable", at),
    )
    if spec.prioritize_verb and spec.weight <= 0:
        raise at.at("weight").invalid(spec.weight, "must have a positive weight applied to it")
    timeout = body.get("httpTimeout")
    if timeout is not None:
        seconds = go_duration_seconds(timeout, at.at("httpTimeout"))
        if seconds < 0:
            raise at.at("httpTimeout").invalid(timeout, "must not be negative")
        # Zero means the default, as upstream's NewHTTPExtender reads it.
        spec = replace(spec, http_timeout_seconds=seconds or DEFAULT_HTTP_TIMEOUT_SECONDS)
    return spec


def parse_extenders(value: Any, source: str, path: str = "extenders") -> tuple[ExtenderSpec, ...]:
    """The ``extenders:`` list, validated as upstream validates it."""
    at = _At(source, path)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise at.fail("must be a list")
    seen_resources: set[str] = set()
    extenders = tuple(
        _extender(item, at.at(index), seen_resources) for index, item in enumerate(value)
    )
    binders = sum(1 for extender in extenders if extender.bind_verb)
    if binders > 1:
        raise at.invalid(
            f"found {binders} extenders implementing bind", "only one extender can implement bind"
        )
    return extenders


def ignored_by_scheduler(extenders: Iterable[ExtenderSpec]) -> tuple[str, ...]:
    """The extended resources NodeResourcesFit leaves to the extenders."""
    return tuple(
        resource.name
        for extender in extenders
        for resource in extender.managed_resources
        if resource.ignored_by_scheduler
    )


def with_ignored_resources(policy: PolicySpec, names: Collection[str]) -> PolicySpec:
    """The policy with NodeResourcesFit ignoring ``names``. Upstream replaces the
    plugin's ``ignoredResources`` with the extenders' list (the profile's own list is
    dropped); nothing changes when no extender resource is ignored."""
    if not names:
        return policy
    predicates = tuple(
        replace(spec, argument={**spec.argument, "ignoredResources": tuple(names)})
        if spec.kind == FIT_PREDICATE_KIND
        else spec
        for spec in policy.predicates
    )
    return replace(policy, predicates=predicates)
