"""``profiles[].plugins``: which plugin runs at which point, by upstream's merge rules.

The default ``multiPoint`` set is merged with the profile's (``disabled`` removes, ``*``
removes all, an ``enabled`` plugin that is already a default replaces it in place, others
are appended); then each plugin joins every point it implements unless that point disables
it, and a plugin enabled at a specific point runs before the multi-point ones there, with
that point's weight.

volsched runs a plugin's PreFilter with its Filter, its PreScore with its Score, and
VolumeBinding's Reserve and PreBind with its Filter. Disabling one of those points is
therefore accepted where kube-scheduler's plugin works without it (it computes the same
again), and refused where kube-scheduler's plugin fails every pod without it, with the
error kube-scheduler would report for each pod.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from volsched.scheduling.scheduler_config.catalog import (
    API_VERSION,
    DERIVED_POINTS,
    EXTENSION_POINTS,
    FIXED_POINTS,
    KIND,
    MULTI_POINT,
    NEEDS_PRE_FILTER,
    NEEDS_PRE_SCORE,
    OUT_OF_TREE,
    PLACEMENT_POINTS,
    PLUGINS,
    REMOVED_IN_V1,
    UNAVAILABLE,
)
from volsched.scheduling.scheduler_config.fields import (
    INT32_MAX,
    INT32_MIN,
    Where,
    integer,
    items,
    mapping,
    name,
    quoted,
)

Weighted = tuple[str, int | None]


@dataclass(slots=True)
class PluginSet:
    """One point's ``enabled`` (name, weight) list and ``disabled`` names (with where
    each was written, for the error that names it)."""

    enabled: list[Weighted]
    disabled: dict[str, Where]

    @property
    def given(self) -> bool:
        return bool(self.enabled or self.disabled)


def removed_plugin(plugin: str) -> str:
    """kube-scheduler 1.36's validation error for a removed in-tree plugin."""
    return (
        f'Invalid value: "{plugin}": was invalid in version "{API_VERSION}" '
        f'({KIND} is version "{API_VERSION}"); NodeVolumeLimits counts the CSI volumes '
        "of these drivers"
    )


def check_plugin_name(plugin: str, where: Where) -> None:
    """Refuse a plugin volsched cannot run, naming it and saying why."""
    if plugin in REMOVED_IN_V1:
        raise where.fail(removed_plugin(plugin))
    if plugin in UNAVAILABLE:
        raise where.fail(f"{plugin} is not available: {UNAVAILABLE[plugin]}")
    if plugin in OUT_OF_TREE:
        raise where.fail(
            f"{plugin} is an out-of-tree plugin, not part of kube-scheduler; volsched runs "
            "kube-scheduler's in-tree plugins and its own"
        )
    if plugin not in PLUGINS:
        raise where.fail(f"plugin {quoted(plugin)} does not exist")


def _check_point(plugin: str, where: Where, point: str) -> None:
    check_plugin_name(plugin, where)
    if point in PLACEMENT_POINTS:
        raise where.fail(f"volsched runs no {point} plugins (it does not schedule pod groups)")
    if point != MULTI_POINT and point not in PLUGINS[plugin].points:
        raise where.fail(f"{plugin} does not extend the {point} point")


def parse_plugin_set(value: Any, where: Where, point: str) -> PluginSet:
    body = mapping(value, where, ("enabled", "disabled"))
    enabled: list[Weighted] = []
    for index, item in enumerate(items(body.get("enabled"), where.at("enabled"))):
        at = where.at("enabled").at(index)
        entry = mapping(item, at, ("name", "weight"))
        plugin = name(entry.get("name"), at.at("name"))
        _check_point(plugin, at.at("name"), point)
        weight = entry.get("weight")
        if weight is not None:
            # An int32; 0 means "not set" (the plugin's default weight, else 1), and
            # upstream only checks that the total cannot overflow, which int32 weights
            # cannot do. A weight on a plugin that does not score is ignored, as upstream.
            weight = integer(weight, at.at("weight"), INT32_MIN, INT32_MAX)
        if any(seen == plugin for seen, _ in enabled):
            raise at.at("name").fail(f'plugin "{plugin}" already registered at {point}')
        enabled.append((plugin, weight or None))
    disabled: dict[str, Where] = {}
    for index, item in enumerate(items(body.get("disabled"), where.at("disabled"))):
        at = where.at("disabled").at(index)
        entry = mapping(item, at, ("name",))
        plugin = name(entry.get("name"), at.at("name"))
        known = (*PLUGINS, *REMOVED_IN_V1, *UNAVAILABLE, *OUT_OF_TREE, "*")
        if plugin not in known:
            raise at.at("name").fail(f"plugin {quoted(plugin)} does not exist")
        disabled[plugin] = at.at("name")
    return PluginSet(enabled, disabled)


def merge(defaults: Sequence[Weighted], custom: PluginSet) -> list[Weighted]:
    """Upstream's mergePluginSet."""
    replacing = dict(custom.enabled)
    merged: list[Weighted] = []
    if "*" not in custom.disabled:
        for plugin, weight in defaults:
            if plugin in custom.disabled:
                continue
            merged.append(
                (plugin, replacing.pop(plugin)) if plugin in replacing else (plugin, weight)
            )
    merged.extend((plugin, weight) for plugin, weight in custom.enabled if plugin in replacing)
    return merged


def point_plugins(point: str, specific: PluginSet, multi: Sequence[Weighted]) -> list[Weighted]:
    """The plugins a point runs: its own enabled list first, then multi-point plugins that
    implement it and that the point neither disables nor lists itself."""
    ordered = list(specific.enabled)
    listed = {plugin for plugin, _ in ordered}
    if "*" not in specific.disabled:
        for plugin, weight in multi:
            kind = PLUGINS.get(plugin)
            if kind is None or point not in kind.points:
                continue
            if plugin in specific.disabled or plugin in listed:
                continue
            ordered.append((plugin, weight))
    return ordered


def check_fixed_points(sets: Mapping[str, PluginSet], where: Where) -> None:
    """queueSort, bind and preEnqueue hold one plugin each, which stays."""
    for point, only in FIXED_POINTS.items():
        chosen = point_plugins(point, sets[point], [(only, None)])
        if [plugin for plugin, _ in chosen] == [only]:
            continue
        at = where.at("plugins").at(point)
        if point == "preEnqueue":
            raise at.fail(
                "SchedulingGates cannot be disabled: the API server refuses to bind a gated pod"
            )
        raise at.fail(f"volsched always runs {only} here")


def check_derived_points(
    sets: Mapping[str, PluginSet],
    multi: Sequence[Weighted],
    filters: Sequence[Weighted],
    scores: Sequence[Weighted],
    where: Where,
) -> None:
    """The points volsched runs with a plugin's filter or score. Enabling one is a no-op
    when the plugin runs there. A plugin whose filter or score runs without one of these
    points — disabled there, or enabled at filter or score alone, outside multiPoint — is
    refused where upstream's plugin cannot work without it."""
    filtering = [plugin for plugin, _ in filters]
    scoring = [plugin for plugin, _ in scores]
    for point in DERIVED_POINTS:
        chosen = sets[point]
        main, running = ("score", scoring) if point == "preScore" else ("filter", filtering)
        for index, (plugin, _) in enumerate(chosen.enabled):
            if plugin not in running:
                raise (
                    where.at("plugins")
                    .at(point)
                    .at("enabled")
                    .at(index)
                    .fail(
                        f"volsched runs {plugin}'s {point} only with its {main}; "
                        f"enable {plugin} at {main} or multiPoint"
                    )
                )
        runs_here = {plugin for plugin, _ in point_plugins(point, chosen, multi)}
        for plugin in running:
            if point not in PLUGINS[plugin].points or plugin in runs_here:
                continue
            at = chosen.disabled.get(plugin) or chosen.disabled.get("*")
            if at is None:
                index = [name for name, _ in sets[main].enabled].index(plugin)
                at = where.at("plugins").at(main).at("enabled").at(index).at("name")
                advice = f"enable {plugin} at multiPoint (or at {point} as well)"
            else:
                advice = f"disable {plugin} at {main} as well"
            _refuse_missing_point(point, plugin, at, advice)


def _refuse_missing_point(point: str, plugin: str, at: Where, advice: str) -> None:
    if point == "preFilter" and plugin in NEEDS_PRE_FILTER:
        raise at.fail(
            f"{plugin}'s Filter runs without its PreFilter: kube-scheduler fails every pod "
            f'with: running "{plugin}" filter plugin: {NEEDS_PRE_FILTER[plugin]}; {advice}'
        )
    if point == "preScore" and plugin in NEEDS_PRE_SCORE:
        raise at.fail(
            f"{plugin}'s Score runs without its PreScore: kube-scheduler fails every pod "
            f'with: running Score plugins: plugin "{plugin}" failed with: '
            f"{NEEDS_PRE_SCORE[plugin]}; {advice}"
        )
    if point in ("reserve", "preBind"):
        raise at.fail(
            f"volsched runs {plugin}'s Reserve and PreBind with its Filter: the claims the "
            f"filter chose must be assumed and bound; {advice}"
        )


def parse_plugins(value: Any, where: Where) -> dict[str, PluginSet]:
    plugins = mapping(value, where, EXTENSION_POINTS)
    return {
        point: parse_plugin_set(plugins.get(point), where.at(point), point)
        for point in EXTENSION_POINTS
    }
