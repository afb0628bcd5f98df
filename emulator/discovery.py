"""Discovery documents: ``/api``, ``/apis``, ``/api/v1``, ``/apis/{group}/{version}``, ``/version``.

Minimal but valid: what kubernetes-asyncio, kubectl and dynamic clients read to find
resources.  Only the legacy (unaggregated) form is served; a client asking for aggregated
discovery falls back to it, as against an older server.
"""

from __future__ import annotations

from volsched.emulator.raw import Raw
from volsched.emulator.resources import ResourceTable, ResourceType

KUBERNETES_VERSION = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0-volsched-emulator",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.22.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def core_versions(address: str) -> Raw:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def _group(name: str, versions: list[str]) -> Raw:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def group_list(table: ResourceTable) -> Raw:
    groups = [_group(name, versions) for name, versions in table.groups().items() if name]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def group(table: ResourceTable, name: str) -> Raw | None:
    versions = table.groups().get(name)
    if not name or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _entry(resource: ResourceType) -> Raw:
    entry: Raw = {
        "name": resource.plural,
        "singularName": resource.singular,
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": list(resource.verbs),
    }
    if resource.short_names:
        entry["shortNames"] = list(resource.short_names)
    return entry


def resource_list(table: ResourceTable, group_name: str, version: str) -> Raw | None:
    resources = table.in_group_version(group_name, version)
    if not resources:
        return None
    entries = []
    for resource in sorted(resources, key=lambda r: r.plural):
        entries.append(_entry(resource))
        for sub in sorted(resource.subresources):
            verbs = ["create"] if sub == "binding" else ["get", "patch", "update"]
            kind = "Binding" if sub == "binding" else resource.kind
            entries.append(
                {
                    "name": f"{resource.plural}/{sub}",
                    "singularName": "",
                    "namespaced": resource.namespaced,
                    "kind": kind,
                    "verbs": verbs,
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group_name}/{version}" if group_name else version,
        "resources": entries,
    }


def root_paths(table: ResourceTable) -> Raw:
    paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"]
    for name, versions in table.groups().items():
        if name:
            paths.append(f"/apis/{name}")
            paths += [f"/apis/{name}/{v}" for v in versions]
    return {"paths": sorted(paths)}
