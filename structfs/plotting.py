"""Plots: a measure against the selected features (budget paths), and a fit's convergence."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt


def plot_budget_path(n_features: Sequence[float], values: Sequence[float], baselines: dict[str, Any] | None = None,
                     ylabel: str = "measure", out: str | None = None, title: str | None = None, ax: Any = None,
                     label: str = "StructSVM (budget path)") -> Any:
    """A measure against the number of selected features, with baselines.

    ``baselines``: {name: value} (a horizontal line), {name: (n_features, value)} (a point) or
    {name: [(n_features, ...), (value, ...)]} (a path).
    Returns the path written (``out``) or the axes.
    """
    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(n_features, values, "o-", label=label)
    for i, (name, value) in enumerate((baselines or {}).items()):
        if isinstance(value, list):
            ax.plot(value[0], value[1], "s--", color=f"C{i + 1}", label=name)
        elif isinstance(value, tuple):
            ax.plot([value[0]], [value[1]], "*", markersize=12, color=f"C{i + 1}", label=name)
        else:
            ax.axhline(value, linestyle="--", color=f"C{i + 1}", label=name)
    if min(n_features) > 0 and max(n_features) >= 10 * min(n_features):
        ax.set_xscale("log")          # budget paths usually span decades
        from matplotlib.ticker import NullFormatter, ScalarFormatter

        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("selected features")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return _finish(ax, own, out, legend_loc="lower right")


def plot_convergence(history: Sequence[dict[str, Any]], out: str | None = None, ax: Any = None) -> Any:
    """Primal objective and lower bound against cutting-plane iterations, from ``estimator.history_``."""
    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(6, 4))
    it = [h["iteration"] for h in history]
    ax.plot(it, [h["objective"] for h in history], label="objective (best primal)")
    lb = [(i, h["lower_bound"]) for i, h in zip(it, history) if h["lower_bound"] > 0]
    if lb:
        ax.plot(*zip(*lb), label="lower bound")
    ax.set_yscale("log")
    ax.set_xlabel("cutting planes")
    ax.set_ylabel("objective")
    return _finish(ax, own, out)


def _finish(ax: Any, own: bool, out: str | None, legend_loc: str = "best") -> Any:
    """Legend and grid; a figure this module created is saved to ``out`` and closed."""
    ax.legend(loc=legend_loc)
    ax.grid(alpha=0.3)
    if own and out:
        ax.figure.tight_layout()
        ax.figure.savefig(out, dpi=120)
        plt.close(ax.figure)
        return out
    return ax
