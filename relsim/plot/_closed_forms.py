"""Figures of the closed forms (:mod:`relsim.formulas`): uniform chains."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

import numpy as np

from relsim import checks
from relsim.plot._common import (
    MAX_AXIS_POINTS,
    axes_or_new,
    checked_target,
    floats,
    step_counts,
    target_line,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

# ---------------------------------------------------------------------- the closed forms
def compounding(
    p: float | Iterable[float] = (0.9, 0.95, 0.99),
    steps: Iterable[int] = range(1, 51),
    target: float | None = None,
    *,
    ax: "Axes | None" = None,
) -> "Axes":
    r"""End-to-end success :math:`p^n` against the number of steps ``n``, one line per ``p``.

    The lesson's compounding table as curves: 25 steps at 99% each finish 78% of the time.

    Parameters
    ----------
    p : float or iterable of float
        Per-step success, each in [0, 1]; one line each.
    steps : iterable of int
        The step counts on the x axis, each >= 1.
    target : float, optional
        Drawn as a dotted horizontal line.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax``, or a new figure's.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> ax = compounding(p=0.9, steps=[5, 10])
    >>> [round(float(y), 3) for y in ax.lines[0].get_ydata()]
    [0.59, 0.349]
    """
    from relsim import formulas

    ps = floats(p, "p")
    n = step_counts(steps, "steps")
    goal = checked_target(target)
    ax = axes_or_new(ax)
    for value in ps:
        ax.plot(n, formulas.compound(value, n), label=f"p = {value:g}")
    target_line(ax, goal)
    ax.set_xlabel("steps in the task (count)")
    ax.set_ylabel("end-to-end success (probability)")
    ax.set_ylim(0.0, 1.02)
    ax.set_title("Errors compound: success of an n-step chain")
    ax.legend()
    return ax


def retries(
    p: float,
    steps: int,
    miss: float = 0.0,
    false_reject: float = 0.0,
    max_retries: int = 10,
    target: float | None = None,
    *,
    ax: "Axes | None" = None,
) -> "Axes":
    r"""End-to-end success against the per-step retry budget, and the verifier's ceiling.

    With ``a = p(1-f)``, ``w = (1-p)m``, ``q = pf + (1-p)(1-m)`` and
    :math:`S_r = \sum_{j\le r} q^j`, a chain of ``steps`` steps with ``r`` retries per step
    succeeds with :math:`(a S_r)^n` (:func:`relsim.formulas.verified_step`); as ``r`` grows
    this rises to the ceiling :math:`(a/(a+w))^n` (:func:`relsim.formulas.verified_ceiling`),
    drawn dashed: past it, more retries buy nothing.

    Parameters
    ----------
    p, miss, false_reject : float
        Per-attempt success and the verifier's error rates, in [0, 1].
    steps : int
        Steps in the chain, >= 1.
    max_retries : int
        The x axis runs over budgets 0..max_retries (at most ``MAX_AXIS_POINTS``).
    target : float, optional
        Drawn as a dotted horizontal line.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax``, or a new figure's.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> ax = retries(0.9, 25, miss=0.1, max_retries=3)
    >>> round(float(ax.lines[1].get_ydata()[0]), 6)  # the ceiling
    0.758626
    """
    from relsim import formulas

    n = checks.integer(steps, "steps", 1)
    top = checks.integer(max_retries, "max_retries", 0, MAX_AXIS_POINTS)
    goal = checked_target(target)
    budgets = np.arange(top + 1)
    success = formulas.verified_step(p, budgets, miss, false_reject).success ** n
    ceiling = formulas.verified_ceiling(p, miss, false_reject) ** n
    ax = axes_or_new(ax)
    ax.plot(budgets, success, marker="o", label=f"{n} steps, p = {p:g}")
    ax.axhline(
        ceiling,
        linestyle="--",
        color="black",
        label=f"ceiling {ceiling:.4f} (miss = {miss:g}, false_reject = {false_reject:g})",
    )
    target_line(ax, goal)
    ax.set_xlabel("retries per step (count)")
    ax.set_ylabel("end-to-end success (probability)")
    ax.set_ylim(0.0, 1.02)
    ax.set_title("Retries help up to the verifier's ceiling")
    ax.legend()
    return ax


def required_accuracy(
    target: float | Iterable[float],
    steps: Iterable[int] = range(1, 51),
    *,
    ax: "Axes | None" = None,
) -> "Axes":
    r"""The per-step success a target needs, :math:`T^{1/n}`, against the number of steps.

    One line per target (:func:`relsim.formulas.required_step_success`).

    Parameters
    ----------
    target : float or iterable of float
        End-to-end success wanted, each in (0, 1]; one line each.
    steps : iterable of int
        The step counts on the x axis, each >= 1.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax``, or a new figure's.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> ax = required_accuracy(0.95, steps=[25])
    >>> round(float(ax.lines[0].get_ydata()[0]), 6)
    0.99795
    """
    from relsim import formulas

    n = step_counts(steps, "steps")
    targets = floats(target, "target")
    ax = axes_or_new(ax)
    for value in targets:
        ax.plot(n, formulas.required_step_success(value, n), label=f"target {value:g}")
    ax.set_xlabel("steps in the task (count)")
    ax.set_ylabel("required per-step success (probability)")
    ax.set_title("How good each step must be")
    ax.legend()
    return ax


