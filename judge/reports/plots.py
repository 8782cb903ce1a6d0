"""Report figures drawn with matplotlib (Agg, no pyplot state) and returned as base64 PNG."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter


def _png(fig: Figure) -> str:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    return base64.b64encode(buf.getvalue()).decode("ascii")


def reliability_png(cal: dict[str, Any]) -> str:
    """Observed agreement against mean confidence per bin: raw, and calibrated if present."""
    fig = Figure(figsize=(5, 4.2))
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="perfect")
    for kind, colour in (("raw", "tab:red"), ("calibrated", "tab:blue")):
        bins = cal.get(f"reliability_{kind}")
        if not bins:
            continue
        ax.plot([b["mean_prob"] for b in bins], [b["frac_agreed"] for b in bins],
                marker="o", color=colour, label=f"{kind} confidence")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("confidence (bin mean)")
    ax.set_ylabel("agreement with humans")
    ax.set_title("Reliability diagram")
    ax.legend(loc="upper left")
    return _png(fig)


def coverage_png(cal: dict[str, Any], target: float | None = None) -> str:
    """Agreement among the auto-accepted against the share auto-accepted, per threshold."""
    fig = Figure(figsize=(5, 4.2))
    ax = fig.add_subplot()
    pts = cal["coverage"]
    ax.plot([p["coverage"] for p in pts], [p["agreement"] for p in pts],
            color="tab:blue", marker=".", label="threshold sweep")
    if target is not None:
        ax.axhline(target, color="grey", linestyle="--", linewidth=1, label=f"target {target}")
    at = cal.get("at_threshold")
    if at and at.get("agreement") is not None:
        ax.plot([at["coverage"]], [at["agreement"]], marker="*", markersize=14,
                color="tab:orange", linestyle="none", label="calibration threshold")
    ax.set_xlim(0, 1.02)
    ax.set_xlabel("share auto-accepted")
    ax.set_ylabel("agreement among auto-accepted")
    ax.set_title(f"Coverage vs agreement ({cal['coverage_on']})")
    ax.legend(loc="lower left")
    return _png(fig)


def confusion_png(confusion: dict[str, int]) -> str:
    """2x2 heat map, rows human fail/pass, columns judge fail/pass."""
    grid = [[confusion.get("tp", 0), confusion.get("fn", 0)],
            [confusion.get("fp", 0), confusion.get("tn", 0)]]
    fig = Figure(figsize=(3.6, 3.2))
    ax = fig.add_subplot()
    ax.imshow(grid, cmap="Blues")
    top = max(max(r) for r in grid) or 1
    for i in range(2):
        for j in range(2):
            ax.text(j, i, str(grid[i][j]), ha="center", va="center",
                    color="white" if grid[i][j] > top / 2 else "black", fontsize=13)
    ax.set_xticks([0, 1], ["judge fail", "judge pass"])
    ax.set_yticks([0, 1], ["human fail", "human pass"])
    ax.set_title("Confusion matrix")
    return _png(fig)


#: the judge's share, in stacking order, with its colour
SHARE_COLOURS = {"auto-accepted": "#1a7f37", "review": "#d4a72c",
                 "overruled by veto": "#cf222e", "unscored": "#8c959f"}


def share_png(shares: dict[str, int]) -> str:
    """One horizontal bar of the run's verdicts: auto-accepted, review, overruled, unscored."""
    total = sum(shares.values()) or 1
    fig = Figure(figsize=(7.5, 1.05))
    ax = fig.add_subplot()
    left = 0.0
    for name, colour in SHARE_COLOURS.items():
        n = shares.get(name, 0)
        if not n:
            continue
        ax.barh([0], [n / total], left=left, color=colour, height=0.6,
                label=f"{name} {n} ({n / total:.0%})")
        if n / total > 0.08:
            ax.text(left + n / total / 2, 0, f"{n / total:.0%}", ha="center", va="center",
                    color="white", fontsize=10, fontweight="bold")
        left += n / total
    ax.set_xlim(0, 1)
    ax.set_yticks([])
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=4, frameon=False,
              fontsize=9)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    return _png(fig)


def trend_png(points: Sequence[Any]) -> str:
    """Small trend lines over the suite's runs (oldest first): pass rates, review share,
    agreement with human labels (gaps where a run had no labelled items)."""
    fig = Figure(figsize=(9.6, 2.1))
    axes = fig.subplots(1, 3)
    x = list(range(1, len(points) + 1))

    def line(ax: Any, ys: list[float | None], colour: str, label: str) -> None:
        ax.plot(x, [float("nan") if y is None else y for y in ys], marker="o",
                markersize=3.5, color=colour, linewidth=1.6, label=label)

    line(axes[0], [p.scenario_pass_rate for p in points], "#1a7f37", "scenarios")
    line(axes[0], [p.trace_pass_rate for p in points], "#0969da", "traces")
    axes[0].legend(loc="lower left", fontsize=7, frameon=False)
    line(axes[1], [p.review_share for p in points], "#d4a72c", "review share")
    line(axes[2], [p.agreement for p in points], "#8250df", "agreement")
    titles = ("pass rate", "review share", "agreement with labels")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_title(title, fontsize=10)
        ax.set_ylim(-0.03, 1.03)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.tick_params(labelsize=8)
        ax.set_xticks(x if len(x) <= 12 else x[:: max(1, len(x) // 6)])
        ax.set_xlabel("run (oldest → this one)", fontsize=8)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    if all(p.agreement is None for p in points):
        axes[2].text(0.5, 0.5, "no labelled items yet", ha="center", va="center",
                     transform=axes[2].transAxes, color="grey", fontsize=9)
    fig.tight_layout()
    return _png(fig)


def compare_png(pairs: Sequence[tuple[float, float]], change: float | None,
                ci: Sequence[float] | None, confidence: float = 0.95) -> str:
    """Two versions on the same tasks: how many tasks moved from each baseline pass share to
    each candidate pass share (the paired table; above the diagonal: better), and the
    change in pass rate with its interval."""
    fig = Figure(figsize=(9.0, 3.4))
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.15, 1.6]})
    levels = sorted({round(x, 3) for p in pairs for x in p}) or [0.0, 1.0]
    if len(levels) > 6:  # many trial counts: six bands of the share
        levels = [round(i / 5, 3) for i in range(6)]

    def band(x: float) -> int:
        return min(range(len(levels)), key=lambda i: abs(levels[i] - x))

    grid = [[0] * len(levels) for _ in levels]
    for b, c in pairs:
        grid[band(c)][band(b)] += 1
    left.imshow(grid, cmap="Blues", origin="lower")
    top = max(max(r) for r in grid) or 1
    for i, row in enumerate(grid):
        for j, n in enumerate(row):
            colour = "white" if n > top / 2 else ("#cf222e" if i < j and n else
                                                   "#1a7f37" if i > j and n else "black")
            left.text(j, i, str(n), ha="center", va="center", color=colour, fontsize=11)
    ticks = [f"{x:.0%}" for x in levels]
    left.set_xticks(range(len(levels)), ticks, fontsize=8)
    left.set_yticks(range(len(levels)), ticks, fontsize=8)
    left.set_xlabel("baseline: task's trials passed", fontsize=9)
    left.set_ylabel("candidate", fontsize=9)
    left.set_title("tasks (above the diagonal: better)", fontsize=10)
    right.axvline(0.0, color="grey", linewidth=1, linestyle="--")
    if change is not None:
        lo, hi = (ci[0], ci[1]) if ci else (change, change)
        colour = "#1a7f37" if lo > 0 else "#cf222e" if hi < 0 else "#0969da"
        right.errorbar([change], [0], xerr=[[change - lo], [hi - change]], fmt="o",
                       color=colour, capsize=6, markersize=8, linewidth=2)
        right.text(change, 0.25, f"{change:+.1%}  [{lo:+.1%}, {hi:+.1%}]", ha="center",
                   fontsize=10, color=colour)
        span = max(abs(lo), abs(hi), 0.05) * 1.3
        right.set_xlim(-span, span)
    right.set_ylim(-1, 1)
    right.set_yticks([])
    right.xaxis.set_major_formatter(PercentFormatter(1.0))
    right.set_title(f"change in pass rate, {confidence:.0%} interval", fontsize=10)
    for side in ("top", "right", "left"):
        right.spines[side].set_visible(False)
    fig.tight_layout()
    return _png(fig)
