"""Shared helpers for benchmarks: medians, percentiles and a ratio table."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

__all__ = ["median_ms", "pct", "table"]


def median_ms(samples: Sequence[float]) -> float:
    return statistics.median(samples) * 1000


def pct(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def table(rows: Sequence[tuple[str, float, str, float, str]]) -> str:
    """rows: (figure, ours_ms, baseline name, baseline_ms, goal) -> a Markdown table."""
    out = [
        "| figure | ours (median) | raw baseline (median) | ratio | goal | met |",
        "|---|---|---|---|---|---|",
    ]
    for figure, ours, base_name, base, goal in rows:
        ratio = ours / base if base else float("inf")
        met = _met(goal, ours, ratio)
        cells = [
            figure,
            f"{ours:.1f} ms",
            f"{base_name}: {base:.1f} ms",
            f"{ratio:.2f}x",
            goal,
            met,
        ]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def _met(goal: str, ours_ms: float, ratio: float) -> str:
    goal = goal.strip()
    if goal.startswith("<=") and goal.endswith("ms"):
        return "yes" if ours_ms <= float(goal[2:-2]) else "no"
    if goal.startswith("<=") and goal.endswith("x"):
        return "yes" if ratio <= float(goal[2:-1]) else "no"
    return "-"
