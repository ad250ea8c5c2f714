r"""Figures for design reviews, drawn with matplotlib.

Every function takes ``ax=None``: it draws on ``ax`` when given, else on a new figure
(``matplotlib.pyplot.subplots``), labels its axes with their units and returns the
``Axes``. None calls ``plt.show()``: show, save or embed the figure as you like
(``ax.figure.savefig("fig.png")``). matplotlib is imported only when a figure is drawn, so
``import relsim.plot`` stays light.

================================  ==========================================================
function                          what it draws
================================  ==========================================================
:func:`compounding`               end-to-end success :math:`p^n` of uniform chains against
                                  the number of steps
:func:`retries`                   a uniform verified chain's success against the per-step
                                  retry budget, with the verifier's ceiling (closed forms)
:func:`required_accuracy`         the per-step success a target needs, :math:`T^{1/n}`
:func:`curve`                     a design's success over one lever's range
                                  (:func:`relsim.plan.curve`'s result), with its ceiling
:func:`outcome_split`             stacked bars of success / silent / detected (/ timeout /
                                  infra) for several results
:func:`levers`                    a tornado chart of :func:`relsim.plan.levers`'s table
:func:`pareto`                    every design of a sweep and the cost-reliability frontier
                                  (:func:`relsim.plan.frontier`'s rows) through them
:func:`convergence`               the running Monte Carlo estimate of success against the
                                  exact value, with a band of 5 standard errors
:func:`pass_k`                    pass@k and pass^k against k with their intervals
:func:`pass_k_extrapolated`       pass@k and pass^k of a task-difficulty fit beyond the
                                  trials run, with bands, and the observed pass^k
:func:`paired_differences`        a comparison's paired differences with their intervals
:func:`durations`                 the distribution of trial durations (timeline engine), with
                                  the deadline
:func:`timeline`                  a Gantt chart of recorded trials: work against waiting
================================  ==========================================================

The numbers drawn come from the closed forms (:mod:`relsim.formulas`: the first three, whose
titles say they are of a uniform chain) or from the results given (an engine's, a planner's,
an analysis'): a figure runs no engine, planner or estimator; the caller does and hands it
the result.

The figures live in private modules by what they draw (``_closed_forms``, ``_results``,
``_trials``, ``_time``; ``_common`` holds the colours and checks they share); this namespace
is the public one.
"""

from __future__ import annotations

from relsim.plot._closed_forms import compounding, required_accuracy, retries
from relsim.plot._common import OUTCOME_COLORS
from relsim.plot._results import BAND_SE, ZOOM_TRIALS, convergence, curve, levers, outcome_split, pareto
from relsim.plot._time import REVIEW_COLOR, WAIT_COLORS, WORK_COLOR, WORK_EVENTS, durations, timeline
from relsim.plot._trials import paired_differences, pass_k, pass_k_extrapolated

__all__ = [
    "BAND_SE",
    "OUTCOME_COLORS",
    "REVIEW_COLOR",
    "WAIT_COLORS",
    "WORK_COLOR",
    "WORK_EVENTS",
    "ZOOM_TRIALS",
    "compounding",
    "convergence",
    "curve",
    "durations",
    "levers",
    "outcome_split",
    "pareto",
    "paired_differences",
    "pass_k",
    "pass_k_extrapolated",
    "required_accuracy",
    "retries",
    "timeline",
]

# The figures are relsim.plot's: say so where Python shows a function's home (help, repr,
# the API reference), whichever private module defines it.
for _name in __all__:
    _value = globals()[_name]
    if callable(_value):
        _value.__module__ = __name__
del _name, _value
