"""What reading an object the fast decoder refuses costs, and what the finiteness check
of a warm start's snapshot costs.

    python -m bench.salvage_costs

A watch line of a Longhorn Setting nested N levels deep (kept without its parts past
100 levels), a list page of 500 pods with one that holds a lone surrogate (read item by
item) beside the same page decoded whole, and the scan of a snapshot part's pickled
bytes for a NaN or an infinity. Prints the figures as JSON.
"""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Callable
from typing import Any

import orjson

from volsched.cache.objects.registry import KINDS
from volsched.cache.store.rows import may_hold_non_finite
from volsched.daemon.kube.decoding import Undecodable, decoded_event, decoded_list

META = b'"metadata":{"name":"bad","namespace":"longhorn-system","resourceVersion":"17"}'


def best_seconds(run: Callable[[], Any], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return round(min(times), 4)


def deep_setting_line(depth: int) -> bytes:
    nested = b"[" * depth + b"]" * depth
    return b'{"type":"ADDED","object":{' + META + b',"value":"3","x":' + nested + b"}}\n"


def pod_page(bad: bool) -> bytes:
    pod = orjson.dumps(
        {
            "metadata": {"name": "p", "namespace": "default", "resourceVersion": "5"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
            "status": {"phase": "Running"},
        }
    )
    last = b"{" + META + (b',"x":"\\ud800"}' if bad else b',"x":"y"}')
    return (
        b'{"metadata":{"resourceVersion":"9"},"items":[' + b",".join([pod] * 499 + [last]) + b"]}"
    )


def node_view(name: str) -> Any:
    """A node's view, with the times (floats) every view holds."""
    return KINDS["Node"].parse(
        {
            "metadata": {
                "name": name,
                "resourceVersion": "3",
                "creationTimestamp": "2026-01-01T10:00:00Z",
                "labels": {"kubernetes.io/hostname": name},
            },
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
    )


def main() -> None:
    figures: dict[str, Any] = {}
    for depth in (1_500, 100_000, 750_000):
        line = deep_setting_line(depth)
        figures[f"setting nested {depth:,} deep ({len(line):,} bytes), seconds"] = best_seconds(
            lambda line=line: decoded_event(line, "LonghornSetting", True)
        )
    skipped: list[Undecodable] = []
    bad_page, clean_page = pod_page(True), pod_page(False)
    figures["page of 500 pods, one bad, read item by item, seconds"] = best_seconds(
        lambda: decoded_list(bad_page, "GET", "Pod", False, skipped.append)
    )
    figures["the same page, clean, decoded whole, seconds"] = best_seconds(
        lambda: decoded_list(clean_page, "GET", "Pod", False, skipped.append)
    )
    views = {"Node": {f"n{i}": node_view(f"n{i}") for i in range(5000)}}
    part = pickle.dumps((1, views, {}), protocol=pickle.HIGHEST_PROTOCOL)
    figures[f"scan of a snapshot part of 5,000 nodes ({len(part):,} bytes), seconds"] = (
        best_seconds(lambda: may_hold_non_finite(part))
    )
    figures["its views walked for a NaN (a false match of the scan)"] = may_hold_non_finite(part)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
