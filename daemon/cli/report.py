"""Rendering decisions for people and for programs: the fixed JSON contract of
``simulate`` and ``explain``, and the tables a person reads in a terminal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from volsched.cache.node_info import NodeInfo
from volsched.scheduling.framework.profile import Profile
from volsched.scheduling.framework.runner import Decision
from volsched.scheduling.plugins.volume_binding import rejection_details
from volsched.scheduling.simulation import PodOutcome


def pod_json(outcome: PodOutcome) -> dict[str, Any]:
    decision = outcome.decision
    return {
        "pod": decision.pod.meta.key,
        "node": decision.node,
        "message": decision.message if decision.node is None else None,
        "filtered": {name: list(reasons) for name, reasons in sorted(decision.filtered.items())},
        "scores": dict(sorted(decision.scores.items())),
        "volumes": outcome.volumes,
        **preemption_json(outcome),
    }


def preemption_json(outcome: PodOutcome) -> dict[str, Any]:
    """``nominatedNode``, ``victims`` and ``preemption`` (the PostFilter message: null when
    preemption did not run, "" when it succeeded, as upstream's successful PostFilter
    carries no message)."""
    preemption = outcome.preemption
    if preemption is None:
        return {"nominatedNode": None, "victims": [], "preemption": None}
    return {
        "nominatedNode": preemption.node,
        "victims": [victim.meta.key for victim in preemption.victims],
        "preemption": preemption.message or "",
    }


def simulation_json(outcomes: list[PodOutcome], volumes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"pods": [pod_json(outcome) for outcome in outcomes], "volumes": volumes}


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths[:-1], strict=True)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def _volume_text(volumes: dict[str, dict[str, Any]]) -> str:
    parts = []
    for claim, entry in volumes.items():
        if "volume" in entry:
            parts.append(f"{claim}→{entry['volume']}")
        else:
            replicas = entry.get("replicas")
            where = ""
            if replicas:
                where = " [" + ", ".join(f"{r['node']}/{r['disk']}" for r in replicas) + "]"
            parts.append(f"{claim}→provision{where}")
    return ", ".join(parts)


def simulation_table(outcomes: list[PodOutcome], volumes: list[dict[str, Any]]) -> str:
    rows = [["POD", "NODE", "SCORE", "VOLUMES / WHY PENDING"]]
    for outcome in outcomes:
        decision = outcome.decision
        if decision.node is not None:
            score = str(decision.scores.get(decision.node, ""))
            text = _volume_text(outcome.volumes)
            if outcome.preemption is not None and outcome.preemption.victims:
                evicted = ", ".join(v.meta.key for v in outcome.preemption.victims)
                text = f"preempts {evicted}" + (f"; {text}" if text else "")
            rows.append([decision.pod.meta.key, decision.node, score, text])
        else:
            rows.append([decision.pod.meta.key, "<pending>", "", decision.message or ""])
    text = _table(rows) if outcomes else "No pending pods."
    if volumes:
        volume_rows = [["VOLUME", "REPLICAS PLACED", "UNPLACED", "WHY"]]
        for entry in volumes:
            placed = ", ".join(f"{p['node']}/{p['disk']}" for p in entry["placed"]) or "-"
            volume_rows.append(
                [entry["volume"], placed, str(entry["unplaced"]), entry.get("message") or ""]
            )
        text += "\n\n" + _table(volume_rows)
    return text + "\n"


def _plugin_details(
    decision: Decision, profile: Profile, name: str, nodes: Mapping[str, NodeInfo]
) -> list[str]:
    """What the rejecting plugin says about this node, if it explains itself (which term
    or constraint rejected it); asked only here, never during a cycle."""
    rejected_by = decision.rejected_plugin.get(name)
    node = nodes.get(name)
    if rejected_by is None or node is None:
        return []
    for predicate in profile.predicates:
        if predicate.plugin.name != rejected_by:
            continue
        explain = getattr(predicate.plugin, "explain", None)
        if callable(explain):
            text = explain(decision.state, decision.pod, node)
            return [text] if isinstance(text, str) and text else []
    return []


def explain_json(
    outcome: PodOutcome,
    profile: Profile,
    all_nodes: list[str],
    nodes: Mapping[str, NodeInfo] | None = None,
) -> dict[str, Any]:
    """Per node, why the pod's filter cycle accepted or rejected it; for a pod that
    preempted, the rows are those of the cycle that failed, each candidate node with the
    victims its eviction would take."""
    final = outcome.decision
    decision = outcome.filter_decision or final
    preemption = outcome.preemption
    weights = {p.policy_name: p.weight for p in profile.priorities}
    evaluated = set(decision.evaluated) | set(decision.filtered)
    rows: list[dict[str, Any]] = []
    for name in all_nodes:
        row: dict[str, Any] = {"node": name}
        if name in decision.filtered:
            row["result"] = "rejected"
            row["predicate"] = decision.rejected_by.get(name)
            row["reasons"] = decision.filtered[name]
            details = rejection_details(decision.state, name) + _plugin_details(
                decision, profile, name, nodes or {}
            )
            if details:
                row["details"] = details
        elif name in decision.scores:
            row["result"] = "chosen" if name == decision.node else "feasible"
            row["scores"] = {
                priority: {"score": score, "weight": weights.get(priority, 0)}
                for priority, score in decision.score_parts.get(name, {}).items()
            }
            row["total"] = decision.scores[name]
        elif name in evaluated:
            row["result"] = "feasible"
        else:
            row["result"] = "not-evaluated"
        if preemption is not None:
            candidate = preemption.candidates.get(name)
            if candidate is not None:
                row["victims"] = [victim.meta.key for victim in candidate.pods]
            elif name in preemption.rejected:
                row["preemption"] = preemption.rejected[name]
        rows.append(row)
    return {
        "pod": final.pod.meta.key,
        "node": final.node,
        "message": final.message if final.node is None else None,
        "volumes": outcome.volumes,
        **preemption_json(outcome),
        "nodes": rows,
    }


def explain_table(report: dict[str, Any]) -> str:
    head = f"Pod {report['pod']}: "
    if report["node"]:
        head += f"scheduled to {report['node']}"
    else:
        head += f"pending — {report['message']}"
        if report.get("preemption"):
            head += f" {report['preemption']}"
    if report.get("victims"):
        head += f" (preempting {', '.join(report['victims'])})"
    rows = [["NODE", "RESULT", "TOTAL", "PREDICATE / PRIORITIES"]]
    for row in report["nodes"]:
        result = row["result"]
        if result == "rejected":
            text = f"{row['predicate']}: " + "; ".join(row["reasons"])
            if row.get("details"):
                text += " (" + "; ".join(row["details"]) + ")"
            if "victims" in row:
                text += "; preemption would evict " + (", ".join(row["victims"]) or "nothing")
            elif row.get("preemption"):
                text += "; preemption: " + "; ".join(row["preemption"])
            rows.append([row["node"], result, "", text])
        elif "scores" in row:
            text = " ".join(
                f"{name}={part['score']}×{part['weight']}" for name, part in row["scores"].items()
            )
            rows.append([row["node"], result, str(row["total"]), text])
        elif result == "not-evaluated":
            rows.append(
                [row["node"], result, "", "enough feasible nodes were found before this one"]
            )
        else:
            rows.append([row["node"], result, "", ""])
    return head + "\n\n" + _table(rows) + "\n"
