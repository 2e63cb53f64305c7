"""PNG plots for bench/REPORT.md: latency distributions (CDFs) and throughput vs concurrency.

matplotlib (the ``test`` extra) draws with the Agg backend: no display needed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["latency_cdfs", "throughput_curves"]


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plain_log_ticks(axis) -> None:  # type: ignore[no-untyped-def]
    """Log-scale ticks as plain numbers (1, 10, 100), no labels on minor ticks."""
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    axis.set_major_formatter(FormatStrFormatter("%g"))
    axis.set_minor_formatter(NullFormatter())


def latency_cdfs(path: Path, panels: Mapping[str, Mapping[str, Sequence[float]]]) -> None:
    """One panel per area; in each, the CDF of every series (samples in seconds, shown in ms)."""
    plt = _pyplot()
    panels = {k: v for k, v in panels.items() if any(v.values())}
    cols = 2
    rows = max(1, (len(panels) + cols - 1) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 3.6 * rows), squeeze=False)
    for ax, (title, series) in zip(axes.flat, panels.items(), strict=False):
        for label, samples in series.items():
            if not samples:
                continue
            xs = sorted(s * 1000 for s in samples)
            ys = [(i + 1) / len(xs) for i in range(len(xs))]
            ax.step(xs, ys, where="post", label=f"{label} (n={len(xs)})")
        ax.set_xscale("log")
        _plain_log_ticks(ax.xaxis)
        ax.set_xlabel("latency (ms, log scale)")
        ax.set_ylabel("fraction of calls")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def throughput_curves(
    path: Path, panels: Mapping[str, Mapping[str, Sequence[tuple[int, float]]]]
) -> None:
    """One panel per workload: operations/s against concurrency, ours and the raw baseline."""
    plt = _pyplot()
    panels = {k: v for k, v in panels.items() if any(v.values())}
    fig, axes = plt.subplots(
        1, max(1, len(panels)), figsize=(6 * max(1, len(panels)), 4), squeeze=False
    )
    for ax, (title, curves) in zip(axes.flat, panels.items(), strict=False):
        for label, points in curves.items():
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, marker="o", label=label)
        ax.set_xscale("log", base=2)
        _plain_log_ticks(ax.xaxis)
        ax.set_xlabel("concurrency (clients / requests in flight)")
        ax.set_ylabel("operations/s")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
