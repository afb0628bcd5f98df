"""Rendering decisions for people and for programs: the fixed JSON contract of
``simulate`` and ``explain``, and the tables a person reads in a terminal."""

from __future__ import annotations

from typing import Any

from volsched.scheduling.explanation import explain_json, preemption_json
from volsched.scheduling.simulation import PodOutcome

__all__ = [
    "explain_json",
    "explain_table",
    "pod_json",
    "preemption_json",
    "simulation_json",
    "simulation_table",
]


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
