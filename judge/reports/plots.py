"""Report figures drawn with matplotlib (Agg, no pyplot state) and returned as base64 PNG."""

from __future__ import annotations

import base64
import io
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


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
