"""Kubernetes names: which strings can name an object, and how a name goes into a URL.

A name that reaches an API path comes from outside more often than it seems: a pod's
``claimName`` in an AdmissionReview (the API server validates a pod only after its
mutating webhooks ran, and then checks only that the claim name is not empty), a
``volumeName`` in a claim, a setting. Pasted into a path as it is, ``x?watch=true``
opens a watch, ``a/b/c`` or ``..`` reaches another resource. So every name is checked
against the rule kube-apiserver applies to that kind before anything is sent — a name
that fails it cannot exist, so there is nothing to ask for — and is then
percent-escaped as one path segment (a no-op for a valid name; the escaping is there
so that no future rule can open the path again).

The rules are upstream's ``ValidateObjectMeta`` name checks: a DNS-1123 subdomain
(at most 253 characters) for most kinds — PersistentVolumes, claims, pods, nodes,
StorageClasses, Leases, custom resources —, a DNS-1123 label for namespaces and a
DNS-1035 label for Services (at most 63 each). Pure, so the API client and the
settings that name objects (a lease) share one reading.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from volsched.cache.errors import InvalidName

SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")

# kind -> (pattern, longest name, what the pattern is called upstream)
_RULES: dict[str, tuple[re.Pattern[str], int, str]] = {
    "Namespace": (LABEL, 63, "a lowercase RFC 1123 label"),
    "Service": (DNS1035_LABEL, 63, "a DNS-1035 label"),
}
_SUBDOMAIN_RULE = (SUBDOMAIN, 253, "a lowercase RFC 1123 subdomain")

# How much of a name (or any text from a request) a log line or a message shows.
SHOWN_CHARACTERS = 253


def name_problem(kind: str, name: str) -> str | None:
    """Why no ``kind`` can be named ``name`` (None when one can)."""
    pattern, longest, called = _RULES.get(kind, _SUBDOMAIN_RULE)
    if not name:
        return "a name must not be empty"
    if len(name) > longest:
        return f"must be no more than {longest} characters"
    if pattern.fullmatch(name) is None:
        return f"must be {called}"
    return None


def path_segment(kind: str, name: str) -> str:
    """``name`` as one segment of an API path; ``InvalidName`` (a 404: no such object
    can exist) when it is not a valid name of ``kind``, and nothing is sent."""
    problem = name_problem(kind, name)
    if problem is not None:
        raise InvalidName(f"{kind} {shown(name)}: no object can have this name: {problem}")
    return quote(name, safe="")


def shown(text: str, limit: int = SHOWN_CHARACTERS) -> str:
    """``text`` from a request, fit for one log line: cut after ``limit`` characters
    with "…", and control characters escaped (a newline in a name forges no line)."""
    cut = text if len(text) <= limit else text[:limit] + "…"
    if cut.isprintable():
        return cut
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)
