"""MkDocs hook: the reference pages and the performance tables, generated at build time.

Where the code already holds a list — the command line's parser, the daemon's metrics,
the events it writes, the reason strings, the scheduler plugins, the Policy names, the
config keys — the page is generated from it (or checked against it), so the site cannot
drift from the code. The performance tables are rendered from ``bench/results/*.json``.

A page marks each generated part with ``<!-- volsched-generated: NAME -->``. The build
fails (``PluginError``) when a page registered below is missing, lacks one of its
markers, carries an unknown marker, or when the code or a result file it is generated
from cannot be read.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib
import inspect
import json
import pkgutil
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

MARKER = re.compile(r"<!--\s*volsched-generated:\s*([a-z0-9-]+)\s*-->")
HELP_WIDTH = 88
PLOTS_DIR = "performance"


@dataclass(frozen=True, slots=True)
class Context:
    root: Path  # the folder of mkdocs.yml: the repository's top

    @property
    def results(self) -> Path:
        return self.root / "bench" / "results"


# ---------------------------------------------------------------------------------------
# Finding the code


def import_module(name: str) -> ModuleType:
    """The module the page is generated from; one that cannot be imported fails the build."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise PluginError(f"{name} cannot be imported: {exc}") from None


def attribute(module: ModuleType, name: str) -> Any:
    try:
        return getattr(module, name)
    except AttributeError:
        raise PluginError(f"{module.__name__} has no {name!r}") from None


# ---------------------------------------------------------------------------------------
# Markdown helpers


def cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)


def code(text: str) -> str:
    return f"`{text}`" if text else ""


def first_line(doc: str | None) -> str:
    return inspect.cleandoc(doc or "").split("\n\n")[0].replace("\n", " ")


# ---------------------------------------------------------------------------------------
# Command line


def render_cli(_: Context) -> str:
    module = import_module("volsched.daemon.cli.main")
    parser: argparse.ArgumentParser = attribute(module, "build_parser")()
    formatter = functools.partial(argparse.HelpFormatter, width=HELP_WIDTH)
    commands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if len(commands) != 1:
        raise PluginError(f"{module.__name__}: the parser has no subcommands")
    action = commands[0]
    summaries = {choice.dest: choice.help or "" for choice in action._choices_actions}
    parser.formatter_class = formatter
    parts = ["## volsched", "", "```text", parser.format_help().rstrip(), "```"]
    for name, sub in action.choices.items():
        sub.formatter_class = formatter
        parts += ["", f"## volsched {name}", ""]
        if summaries.get(name):
            parts += [summaries[name][0].upper() + summaries[name][1:] + ".", ""]
        parts += ["```text", sub.format_help().rstrip(), "```"]
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------
# Metrics


def render_metrics(_: Context) -> str:
    from prometheus_client.metrics import MetricWrapperBase

    module = import_module("volsched.daemon.telemetry.metrics")
    metrics = attribute(module, "Metrics")()
    registry = attribute(metrics, "registry")
    wrappers = [v for v in vars(metrics).values() if isinstance(v, MetricWrapperBase)]
    rows: list[tuple[str, str, str, str]] = []
    described: set[str] = set()
    for wrapper in wrappers:
        (family,) = wrapper.describe()
        described.add(family.name)
        names: tuple[str, ...] = getattr(wrapper, "_labelnames", ())
        values: tuple[str, ...] = getattr(wrapper, "_labelvalues", ())
        if values:
            labels = ", ".join(f"`{n}={v}`" for n, v in zip(names, values, strict=True))
        else:
            labels = ", ".join(f"`{n}`" for n in names)
        exposed = f"{family.name}_total" if family.type == "counter" else family.name
        rows.append((f"`{exposed}`", family.type, labels, family.documentation))
    registered = {family.name for family in registry.collect()}
    if registered != described:
        missing = ", ".join(sorted(registered ^ described))
        raise PluginError(f"{module.__name__}: Metrics and its registry disagree on {missing}")
    rows.sort(key=lambda row: (not row[0].startswith("`scheduler_"), row[0]))
    return table(("Metric", "Type", "Labels", "Help"), rows)


# ---------------------------------------------------------------------------------------
# Events and reason strings


class _RecordingClient:
    """Stands in for the API client: keeps what the reporter would write."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, dict[str, Any]]] = []

    async def create(self, kind: str, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.writes.append((kind, body))
        return body

    async def patch(self, kind: str, name: str, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.writes.append((kind, body))
        return body


def render_events(_: Context) -> str:
    from volsched.cache.objects.core import parse_pod

    reporting = import_module("volsched.daemon.binding.reporting")
    preempting = import_module("volsched.daemon.binding.preempting")
    reporter_class = attribute(reporting, "Reporter")
    pod = parse_pod(
        {
            "metadata": {"name": "POD", "namespace": "NAMESPACE", "uid": "UID"},
            "spec": {"schedulerName": "volsched", "containers": []},
        }
    )
    # Each public method of the reporter, called as the daemon calls it.
    calls: dict[str, Callable[[Any], Any]] = {
        "scheduled": lambda r: r.scheduled(pod, "NODE"),
        "failed": lambda r: r.failed(pod, "MESSAGE", "REASON"),
        "gated": lambda r: r.gated(pod),
        "preempted": lambda r: r.preempted(pod, "MESSAGE"),
    }
    # The heartbeat writes the counts of events already shown, about no pod of its own.
    series = {"heartbeat", "keep_series"}
    methods = [
        name
        for name, _ in inspect.getmembers(reporter_class, inspect.iscoroutinefunction)
        if not name.startswith("_") and name not in series
    ]
    unknown = sorted(set(methods) - set(calls))
    if unknown:
        raise PluginError(
            f"{reporting.__name__}: Reporter.{unknown[0]} writes something the events page "
            "does not know yet; add it to docs/hooks/reference.py"
        )
    rows = []
    for name in methods:
        client = _RecordingClient()
        reporter = reporter_class(client, "volsched", "INSTANCE", lambda: 0.0)
        asyncio.run(calls[name](reporter))
        event = next((b for kind, b in client.writes if kind == "Event"), None)
        condition = next(
            (b["status"]["conditions"][0] for kind, b in client.writes if kind == "Pod"), None
        )
        rows.append(
            (
                f"`{name}`",
                event["type"] if event else "",
                code(event["reason"]) if event else "",
                code(event["action"]) if event else "",
                code(event["note"]) if event else "",
                code(f"PodScheduled={condition['status']}, reason {condition['reason']}")
                if condition
                else "",
                first_line(getattr(reporter_class, name).__doc__),
            )
        )
    events = table(
        ("Reporter", "Event type", "Event reason", "Action", "Event note", "Pod condition", "Note"),
        rows,
    )
    victim = table(
        ("Condition type", "Reason", "Message", "Event message"),
        [
            (
                code(attribute(preempting, "DISRUPTION_TARGET")),
                code(_preemption_reason()),
                code(attribute(preempting, "disruption_message")(pod)),
                code(attribute(preempting, "preempted_message")(pod, "NODE")),
            )
        ],
    )
    return (
        f"Written by `{reporting.__name__}.Reporter`; `MESSAGE`, `REASON`, `NAMESPACE/POD` "
        "and `NODE` stand for the values of each call.\n\n"
        + events
        + "\n\nA preemption victim, before it is deleted "
        f"(`{preempting.__name__}`; `UID` is the preemptor's):\n\n" + victim
    )


def render_event_limits(_: Context) -> str:
    module = import_module("volsched.daemon.binding.event_series")
    finish = float(attribute(module, "FINISH_SECONDS")) / 60
    refresh = float(attribute(module, "REFRESH_SECONDS")) / 60
    rows = [
        (
            "An event about a pod, the first time",
            "Created as it is: `series` unset.",
        ),
        (
            "The same event again: same pod, type, reason, action and reporting controller "
            "and instance (the note may differ)",
            "The first is patched at once: `series.count` 2, `series.lastObservedTime`.",
        ),
        ("Every later repeat", "Counted in memory; nothing is written."),
        (
            f"Every {refresh:g} minutes",
            "Each open series is patched with its count and last observed time. A patch "
            "that finds its event gone (the API server's event TTL) creates it again whole.",
        ),
        (
            f"Every {finish:g} minutes",
            f"A series not observed for {finish:g} minutes gets its final count and is "
            f"forgotten; an event that did not repeat within {finish:g} minutes is "
            "forgotten. Happening again, either starts a new Event.",
        ),
    ]
    return table(("When", "What is written"), rows) + f"\n\nThe rules of `{module.__name__}`."


def _preemption_reason() -> str:
    module = importlib.import_module("volsched.scheduling.preemption.post_filter")
    return str(attribute(module, "PREEMPTED_BY_SCHEDULER"))


# Modules whose every upper-case string constant is a reason shown to users.
REASON_MODULES = ("volsched.scheduling.replicas.reasons",)
# Texts named otherwise, wherever they are.
REASON_EXTRAS = (
    ("volsched.scheduling.plugins.scheduling_gates", "MESSAGE"),
    ("volsched.scheduling.preemption.post_filter", "PREFIX"),
    ("volsched.scheduling.preemption.post_filter", "NOT_ELIGIBLE_POLICY"),
    ("volsched.scheduling.preemption.post_filter", "NOT_ELIGIBLE_TERMINATING"),
)
# Reasons built from a template function: called with placeholders.
REASON_TEMPLATES: tuple[tuple[str, str, int], ...] = ()


def _plugin_names(module: ModuleType) -> list[str]:
    names = []
    for _, value in inspect.getmembers(module, inspect.isclass):
        name = getattr(value, "name", None)
        if value.__module__ == module.__name__ and isinstance(name, str):
            names.append(name)
    return sorted(set(names))


def render_reasons(_: Context) -> str:
    package = importlib.import_module("volsched.scheduling")
    rows: list[tuple[str, str, str, str]] = []
    extras: dict[str, set[str]] = {}
    for module_name, constant in REASON_EXTRAS:
        extras.setdefault(module_name, set()).add(constant)
    seen_extras: set[tuple[str, str]] = set()
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        short = info.name.removeprefix("volsched.scheduling.")
        plugins = ", ".join(f"`{n}`" for n in _plugin_names(module))
        for constant, value in vars(module).items():
            if not (isinstance(value, str) and constant.isupper()):
                continue
            wanted = (
                constant.startswith("REASON")
                or info.name in REASON_MODULES
                or constant in extras.get(info.name, ())
            )
            if wanted:
                seen_extras.add((info.name, constant))
                rows.append((f"`{short}`", plugins, f"`{constant}`", code(value)))
        for module_name, function, arity in REASON_TEMPLATES:
            if module_name == info.name:
                placeholders = [f"<{chr(ord('a') + i)}>" for i in range(arity)]
                text = attribute(module, function)(*placeholders)
                rows.append((f"`{short}`", plugins, f"`{function}(…)`", code(text)))
    for module_name, constant in REASON_EXTRAS:
        if (module_name, constant) not in seen_extras:
            raise PluginError(f"{module_name} has no reason constant {constant!r}")
    if not rows:
        raise PluginError("volsched.scheduling holds no REASON constants")
    return table(("Module", "Plugins of the module", "Constant", "Text"), rows)


# ---------------------------------------------------------------------------------------
# Scheduler configuration and Policy names


def render_plugins(_: Context) -> str:
    config = importlib.import_module("volsched.scheduling.scheduler_config")
    plugins: dict[str, Any] = attribute(config, "PLUGINS")
    points: tuple[str, ...] = attribute(config, "EXTENSION_POINTS")
    default = dict(attribute(config, "DEFAULT_MULTI_POINT"))
    storage = dict(attribute(config, "STORAGE_MULTI_POINT"))
    rows = []
    for name, kind in plugins.items():
        ordered = [point for point in points if point in kind.points]
        # A score plugin listed without a weight scores with weight 1, as upstream's do.
        scored = "score" in kind.points
        if name in default:
            where = "yes" + (f", weight {default[name] or 1}" if scored else "")
        elif name in storage:
            where = "with replicated storage" + (f", weight {storage[name] or 1}" if scored else "")
        else:
            where = "no"
        rows.append((f"`{name}`", ", ".join(ordered), where))
    unavailable: dict[str, str] = attribute(config, "UNAVAILABLE")
    limits: frozenset[str] = attribute(config, "IN_TREE_LIMITS")
    not_run = [(f"`{n}`", reason) for n, reason in unavailable.items()]
    not_run += [
        (
            f"`{n}`",
            "removed from v1 (kube-scheduler 1.36 refuses it enabled); "
            "`NodeVolumeLimits` counts its CSI volumes",
        )
        for n in sorted(limits)
    ]
    return (
        table(("Plugin", "Extension points", "In the default profile"), rows)
        + "\n\nUpstream plugins volsched does not run:\n\n"
        + table(("Plugin", "Why"), not_run)
    )


def render_policy_names(_: Context) -> str:
    policy = importlib.import_module("volsched.scheduling.policy")
    predicate_aliases: dict[str, str] = attribute(policy, "PREDICATE_ALIASES")
    priority_aliases: dict[str, str] = attribute(policy, "PRIORITY_ALIASES")

    def aliases(name: str, known: dict[str, str]) -> str:
        return ", ".join(f"`{alias}`" for alias, target in known.items() if target == name)

    rows = [
        (f"`{name}`", "predicate", aliases(name, predicate_aliases))
        for name in attribute(policy, "PREDICATES")
    ]
    rows += [
        (f"`{name}`", "priority", aliases(name, priority_aliases))
        for name in attribute(policy, "PRIORITIES")
    ]
    rows += [
        (f"any name, argument `{name}`", "configurable predicate", "")
        for name in attribute(policy, "PREDICATE_ARGUMENTS")
    ]
    rows += [
        (f"any name, argument `{name}`", "configurable priority", "")
        for name in attribute(policy, "PRIORITY_ARGUMENTS")
    ]
    weight = attribute(policy, "MAX_PRIORITY_WEIGHT")
    return (
        table(("Name", "Kind", "Aliases"), rows)
        + f"\n\nA priority's weight is a positive integer, at most {weight}."
    )


def check_config(markdown: str) -> None:
    """Every top-level key the loader accepts and every flag variable is on the page."""
    module = import_module("volsched.daemon.config.loading")
    keys: set[str] = attribute(module, "_KEYS")
    overrides = import_module("volsched.daemon.config.overrides")
    variables: dict[str, str] = attribute(overrides, "OVERRIDE_ENVIRONMENT")
    missing = [k for k in sorted(keys) if not re.search(rf"`{re.escape(k)}[`.]", markdown)]
    missing += [v for v in variables.values() if f"`{v}`" not in markdown]
    if missing:
        raise PluginError(
            f"reference/config.md does not document {', '.join(missing)} "
            f"(the keys of {module.__name__})"
        )


# ---------------------------------------------------------------------------------------
# Benchmark results


def _results(context: Context) -> list[dict[str, Any]]:
    files = sorted(context.results.glob("*.json"))
    reports = []
    for path in files:
        if path.name == "all.json":
            continue
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise PluginError(f"{path.name}: cannot read: {exc}") from None
        if not isinstance(report, dict) or "workload" not in report:
            raise PluginError(f"{path.name}: not a benchmark result (no 'workload')")
        report["_file"] = path.name
        reports.append(report)
    if not reports:
        raise PluginError(f"no benchmark results in {context.results}")
    reports.sort(key=lambda r: (str(r.get("started_at", "")), r["workload"]))
    return reports


def figure(value: float) -> str:
    """Two decimals below 10, one above, rounded half up as people round."""
    number = Decimal(repr(value))
    step = Decimal("0.01") if abs(number) < 10 else Decimal("0.1")
    return f"{number.quantize(step, rounding=ROUND_HALF_UP):,}"


def _grouped(text: str) -> str:
    return re.sub(r"\b\d{4,}\b", lambda m: f"{int(m.group()):,}", text)


def render_bench_runs(context: Context) -> str:
    rows = []
    for report in _results(context):
        machine = report.get("machine", {})
        rows.append(
            (
                f"`{report['workload']}`",
                code(report.get("command", "")),
                report.get("size", ""),
                report.get("started_at", ""),
                f"{report['elapsed_seconds']:,.1f} s" if "elapsed_seconds" in report else "",
                f"{machine.get('cpus', '?')} CPUs, {machine.get('implementation', '')} "
                f"{machine.get('python', '')}, {machine.get('processor', '')}",
                "yes" if machine.get("busy") else "no",
            )
        )
    return table(("Workload", "Command", "Size", "Started (UTC)", "Took", "Machine", "Busy"), rows)


def render_bench_targets(context: Context) -> str:
    rows = []
    cpus: set[object] = set()
    for report in _results(context):
        cpus.add(report.get("machine", {}).get("cpus"))
        for target in report.get("targets", []):
            name = _grouped(str(target["name"]))
            rows.append(
                (
                    name[:1].upper() + name[1:],
                    code(report.get("command", "")),
                    f"**{figure(target['measured'])}** {target['unit']}",
                    target["target"],
                    target.get("upstream") or "—",
                    "yes" if target["met"] else "**no**",
                )
            )
    if not rows:
        raise PluginError(f"no targets in the results of {context.results}")
    cores = "/".join(str(c) for c in sorted(cpus, key=str))
    return table(
        ("Figure", "Command", "volsched", f"Target ({cores} cores)", "Upstream gate", "Met"), rows
    )


def _e2e_figures(run: dict[str, Any]) -> str:
    rate = run["throughput_pods_per_second"]
    parts = []
    median = run.get("median") or {}
    if median.get("runs", 1) > 1:
        cpu = median.get("daemon_cpu_ms_per_pod")
        parts.append(
            f"median of {median['runs']} runs: {figure(median['pods_per_second'])} pods/s"
            + (f", daemon CPU {figure(cpu)} ms per pod" if cpu is not None else "")
            + "; the median run's figures follow"
        )
    parts += [
        f"{figure(rate['average'])} pods/s average (p50 {figure(rate['p50'])}, "
        f"p90 {figure(rate['p90'])})",
        f"{figure(run['overall_pods_per_second'])} pods/s from the pods' creation to the "
        "last binding",
    ]
    if "daemon_cpu_ms_per_pod" in run and "cycle_duration_ms" in run:
        parts.append(
            f"daemon CPU {figure(run['daemon_cpu_ms_per_pod'])} ms per pod, "
            f"{figure(run['cycle_duration_ms']['average'])} ms of it in the scheduling cycle"
        )
    if "binding_duration_ms" in run:
        binding = run["binding_duration_ms"]["p50"]
        shown = f"{figure(binding)} ms" if binding < 100 else f"{figure(binding / 1000)} s"
        parts.append(f"binding p50 {shown}")
    if "daemon_peak_rss_mb" in run:
        parts.append(f"daemon peak RSS {figure(run['daemon_peak_rss_mb'])} MB")
    return "; ".join(parts)


def _e2e_label(run: dict[str, Any], comparison: bool = False) -> str:
    label = f"{run['scenario']['nodes']:,} nodes"
    label += f", {run['pvs']:,} PVs" if run.get("pvs") else ""
    # Runs from before the realistic emulator had no choice: they were zero-cost.
    emulator = run.get("options", {}).get("emulator", "zero-cost")
    return label + f", {emulator} emulator" + (" (comparison)" if comparison else "")


def _per_pod(point: dict[str, Any]) -> str:
    ms = point["ms_per_pod"]
    return (
        f"p50 {figure(ms['p50'])}, p90 {figure(ms['p90'])}, p99 {figure(ms['p99'])}, "
        f"mean {figure(ms['mean'])} ms per pod"
    )


def _details(results: dict[str, Any]) -> list[tuple[str, str]]:
    """(run, figures) for each result shape the benchmarks write."""
    if "run" in results or "runs" in results:
        runs = [results["run"]] if "run" in results else results["runs"]
        rows = [(_e2e_label(run), _e2e_figures(run)) for run in runs]
        compared = results.get("zero_cost_comparison") or results.get("zero_cost_comparisons")
        if compared:
            for run in [compared] if isinstance(compared, dict) else compared:
                rows.append((_e2e_label(run, comparison=True), _e2e_figures(run)))
        return rows
    if "by_nodes" in results:
        last, pvs = results["by_nodes"][-1], results["by_pvs"]
        ratio = (
            f"; at {pvs[-1]['pvs']:,} vs {pvs[0]['pvs']:,} PVs, "
            f"{figure(results['cost_ratio_mean'])}× the mean cost per pod"
        )
        return [(f"{last['nodes']:,} nodes, {last['pvs']:,} PVs", _per_pod(last) + ratio)]
    if "series" in results and "ms_per_pod" in results["series"][-1]:
        last = results["series"][-1]
        return [(f"{last['nodes']:,} nodes", _per_pod(last))]
    if "series" in results and "ms_per_replica" in results["series"][-1]:
        last = results["series"][-1]
        ms, cluster = last["ms_per_replica"], last["cluster"]
        return [
            (
                f"{cluster['nodes']:,} nodes × {cluster['disks_per_node']} disks, "
                f"{cluster['volumes']:,} volumes",
                f"mean {figure(ms['mean'])}, p50 {figure(ms['p50'])}, p99 {figure(ms['p99'])} "
                "ms per replica",
            )
        ]
    if "cold_ready_seconds" in results:
        small = results.get("small")
        rows = []
        if small:
            rows.append(
                (
                    f"{small['objects']:,} objects",
                    f"warm {figure(small['warm_ready_seconds'])} s, cold "
                    f"{figure(small['cold_ready_seconds'])} s, median of {small['repeats']}",
                )
            )
        return [
            *rows,
            (
                f"{results['objects']:,} objects",
                f"warm {figure(results['warm_ready_seconds'])} s, cold "
                f"{figure(results['cold_ready_seconds'])} s ({figure(results['speedup'])}×), "
                f"median of {results['repeats']}; imports alone "
                f"{figure(results['import_floor_seconds'])} s; snapshot loaded in "
                f"{figure(results['warm_load_seconds'])} s, ready "
                f"{figure(results['warm_ready_after_load_seconds'])} s later; database "
                f"{figure(results['database_mb'])} MB",
            ),
        ]
    if "daemon" in results and "engine" in results:
        daemon, engine = results["daemon"], results["engine"][-1]
        return [
            (
                f"{daemon['nodes']:,} nodes, {daemon['pods']:,} pods, {daemon['pvs']:,} PVs",
                f"daemon peak RSS running {figure(daemon['peak_rss_mb'])}, through a clean "
                f"stop {figure(daemon['peak_rss_through_stop_mb'])}, warm-started "
                f"{figure(daemon['warm_peak_rss_mb'])} MB; engine "
                f"{figure(engine['peak_rss_mb'])} MB",
            )
        ]
    return []


def render_bench_details(context: Context) -> str:
    rows = [
        (f"`{report['workload']}`", run, figures)
        for report in _results(context)
        for run, figures in _details(report.get("results", {}))
    ]
    return table(("Workload", "Run", "Figures"), rows)


def _series_row(label: str, points: list[dict[str, Any]]) -> list[str]:
    return [label] + [
        f"{figure(p['ms_per_pod']['p50'])} / {figure(p['ms_per_pod']['p99'])}" for p in points
    ]


def render_bench_engine(context: Context) -> str:
    reports = {r["workload"]: r for r in _results(context)}
    for needed in ("engine-prebound", "engine-wffc-scaling"):
        if needed not in reports:
            raise PluginError(f"bench/results has no {needed}.json")
    prebound = reports["engine-prebound"]["results"]["series"]
    by_nodes = reports["engine-wffc-scaling"]["results"]["by_nodes"]
    by_pvs = reports["engine-wffc-scaling"]["results"]["by_pvs"]
    nodes = [p["nodes"] for p in prebound]
    if [p["nodes"] for p in by_nodes] != nodes:
        raise PluginError("engine-prebound and engine-wffc-scaling measured different node counts")
    per_node = sorted({p["pvs"] // p["nodes"] for p in by_nodes})
    wffc_label = f"WFC, {', '.join(str(n) for n in per_node)} PVs per node"
    first = table(
        ["nodes", *(f"{n:,}" for n in nodes)],
        [_series_row("pre-bound PVs", prebound), _series_row(wffc_label, by_nodes)],
    )
    at = sorted({p["nodes"] for p in by_pvs})
    second = table(
        [f"PVs at {', '.join(f'{n:,}' for n in at)} nodes", *(f"{p['pvs']:,}" for p in by_pvs)],
        [_series_row("WFC, p50 / p99 (ms)", by_pvs)],
    )
    return first + "\n\n" + second


def plot_files(context: Context) -> list[Path]:
    plots = []
    for report in _results(context):
        for name in report.get("plots", []):
            path = context.results / name
            if not path.is_file():
                raise PluginError(f"{report['_file']} names the plot {name}, which is missing")
            plots.append(path)
    return plots


def render_bench_plots(context: Context) -> str:
    parts = []
    for report in _results(context):
        for name in report.get("plots", []):
            parts.append(f"![{report['workload']}: {name}]({PLOTS_DIR}/{name})")
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------------------
# The pages


GENERATORS: dict[str, Callable[[Context], str]] = {
    "cli": render_cli,
    "metrics": render_metrics,
    "events": render_events,
    "event-limits": render_event_limits,
    "reasons": render_reasons,
    "plugins": render_plugins,
    "policy-names": render_policy_names,
    "bench-runs": render_bench_runs,
    "bench-targets": render_bench_targets,
    "bench-details": render_bench_details,
    "bench-engine": render_bench_engine,
    "bench-plots": render_bench_plots,
}
PAGES: dict[str, tuple[str, ...]] = {
    "reference/cli.md": ("cli",),
    "reference/config.md": (),
    "reference/kubeschedulerconfiguration.md": ("plugins",),
    "reference/policy.md": ("policy-names",),
    "reference/metrics.md": ("metrics",),
    "reference/events.md": ("events", "event-limits", "reasons"),
    "performance.md": (
        "bench-runs",
        "bench-targets",
        "bench-details",
        "bench-engine",
        "bench-plots",
    ),
}
CHECKS: dict[str, Callable[[str], None]] = {"reference/config.md": check_config}


def _context(config: MkDocsConfig) -> Context:
    return Context(Path(config.config_file_path).resolve().parent)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path in PAGES:
        if files.get_file_from_path(path) is None:
            raise PluginError(f"{path}: this reference page is missing from {config.docs_dir}")
    for plot in plot_files(_context(config)):
        files.append(
            File.generated(config, f"{PLOTS_DIR}/{plot.name}", abs_src_path=str(plot.resolve()))
        )
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    path = page.file.src_uri
    expected = PAGES.get(path, ())
    found = MARKER.findall(markdown)
    for name in found:
        if name not in GENERATORS:
            raise PluginError(f"{path}: unknown generated part {name!r}")
        if name not in expected:
            raise PluginError(f"{path}: {name!r} is generated only on its registered page")
    for name in expected:
        if name not in found:
            raise PluginError(f"{path}: the generated part {name!r} is missing from the page")
    if path in CHECKS:
        CHECKS[path](markdown)
    context = _context(config)

    def generate(match: re.Match[str]) -> str:
        name = match.group(1)
        try:
            return GENERATORS[name](context)
        except PluginError as exc:
            raise PluginError(f"{path}: {name}: {exc}") from None

    return MARKER.sub(generate, markdown)
