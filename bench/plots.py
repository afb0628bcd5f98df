"""PNG plots of benchmark results (matplotlib, the ``bench`` extra).

Each function writes one file and returns its path, or returns None when matplotlib is
not installed: the JSON results never depend on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

Series = tuple[str, Sequence[float], Sequence[float]]  # label, xs, ys


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(figure: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    _pyplot().close(figure)
    return path


def _footer(axes: Any, note: str) -> None:
    if note:
        axes.annotate(
            note,
            xy=(0, 0),
            xycoords="figure fraction",
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=7,
            color="grey",
        )


def throughput_over_time(
    series: Sequence[Series], path: Path, title: str, note: str = "", target: float | None = None
) -> Path | None:
    """Pods bound per second, one line per run, against seconds since pods were created."""
    if not available():
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(8, 4.5))
    for label, xs, ys in series:
        axes.plot(xs, ys, marker="o", markersize=3, label=label)
    if target is not None:
        axes.axhline(target, color="red", linestyle="--", linewidth=1, label=f"target {target:g}")
    axes.set_xlabel("seconds since the measured pods were created")
    axes.set_ylabel("pods bound per second")
    axes.set_ylim(bottom=0)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    _footer(axes, note)
    return _save(figure, path)


def latency_vs_size(
    series: Sequence[Series],
    path: Path,
    title: str,
    xlabel: str,
    ylabel: str = "ms per pod",
    note: str = "",
    log_x: bool = False,
) -> Path | None:
    """Per-pod (or per-replica) cost against cluster size, one line per percentile/series."""
    if not available():
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(8, 4.5))
    for label, xs, ys in series:
        axes.plot(xs, ys, marker="o", label=label)
    if log_x:
        axes.set_xscale("log")
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_ylim(bottom=0)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    _footer(axes, note)
    return _save(figure, path)


def panels(
    panel_series: Sequence[tuple[str, str, Sequence[Series]]],
    path: Path,
    title: str,
    ylabel: str,
    note: str = "",
) -> Path | None:
    """Side-by-side line plots sharing a y label: (panel title, x label, series)."""
    if not available():
        return None
    plt = _pyplot()
    figure, axes_list = plt.subplots(1, len(panel_series), figsize=(6 * len(panel_series), 4.5))
    if len(panel_series) == 1:
        axes_list = [axes_list]
    for axes, (panel_title, xlabel, series) in zip(axes_list, panel_series, strict=True):
        for label, xs, ys in series:
            axes.plot(xs, ys, marker="o", label=label)
        axes.set_title(panel_title, fontsize=10)
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
    figure.suptitle(title)
    _footer(axes_list[0], note)
    return _save(figure, path)


def bars(
    labels: Sequence[str],
    values: Sequence[float],
    path: Path,
    title: str,
    ylabel: str,
    note: str = "",
    target: float | None = None,
) -> Path | None:
    if not available():
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.5))
    drawn = axes.bar(labels, values, color=["tab:blue", "tab:orange", "tab:green", "tab:red"])
    axes.bar_label(drawn, fmt="%.2f", fontsize=8)
    if target is not None:
        axes.axhline(target, color="red", linestyle="--", linewidth=1, label=f"target {target:g}")
        axes.legend(fontsize=8)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(alpha=0.3, axis="y")
    _footer(axes, note)
    return _save(figure, path)
