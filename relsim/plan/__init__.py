"""Planning: what must change for a scenario to reach a reliability target, and at what cost.

Each planner takes any :class:`~relsim.scenario.Scenario`, varies one design quantity, judges
every candidate with the exact engine (:func:`relsim.evaluate`) and returns a :class:`Plan`:

============  ===========================================================================
``for``       the quantity planned
============  ===========================================================================
retries       the least uniform per-step retry budget ``r`` (the task-wide cap is kept)
total         the least task-wide budget ``B`` (the per-step cap is kept; none if unset)
allocation    per-step budgets ``r_i`` of least cost per success (or expected cost)
verifier      the largest ``miss`` (and, separately, the largest ``false_reject``)
p             the least uniform per-attempt success ``p``
checkpoints   the spacing ``every = k`` of least expected cost
samples       the least ``sampling.n`` (1..64: samples per attempt, voted on or checked)
escalation    the ladder's ``after`` (when each rung takes over) of least cost per success
============  ===========================================================================

``objective="utility"`` (every planner that buys a design: all but ``verifier`` and ``p``,
which state requirements) maximises the scenario's ``expected_utility`` (its ``[utility]``
table) instead, with no target to meet; the least budget among equals
(:mod:`relsim.plan.objective`).

:func:`levers` answers the reviewer's question "which single change buys the most?": one row
per change that applies to the scenario, evaluated exactly. :func:`curve` answers "how much
does this lever buy over its whole range?": the design judged exactly at each value of one
key, varied as the planner of that key varies it (so a plan's value is on its curve), with
the ceiling of more retries.

A plan is feasible when the design meets the target by one rule, shared with the flag form
and ``relsim evaluate --require-target`` (:func:`relsim.formulas.meets_target`): log success,
taken from the failure probability where it is small, at least log target; no tolerance, so
target 1 is met only by a design that cannot fail. Before a search starts, its work and
memory are estimated and a plan over a minute (or an allocation over 2 GiB) is refused with
the estimate and what to do instead. When no value reaches the target, the plan says so (``feasible=False``), gives
the ceiling (the best success the planned quantity can buy), the constraint that binds and the
reason in words, and its ``value`` is the nearest design: the one that comes closest.

A scenario with no correlation, no checkpoints and no task-wide budget is a chain of
independent verified steps; the searches then use the closed form
:func:`relsim.formulas.verified_chain` instead of the engine (they agree to rounding), and the
final numbers of every plan come from the engine.

:func:`relsim.plan.chain.plan_chain` is the closed-form planner of a chain of identical
verified steps (``relsim solve --steps N --target T --p P``): no scenario, no engine, numpy
only, and a :class:`~relsim.plan.chain.ChainPlan`.

Names. The planners are named by the quantity they plan, as ``relsim solve --for`` names it
(``plan.retries``, ``plan.p``, ``plan.verifier``), take any scenario and return a
:class:`Plan`. The closed forms of :mod:`relsim.formulas` are named by the number they return
for a chain of identical steps: ``formulas.min_retries`` (what ``plan.retries`` finds for such
a chain), ``formulas.min_p`` and ``formulas.max_miss`` (the infimum of ``p`` and the supremum
of ``miss`` at which *unlimited* retries reach the target, where ``plan.p`` and
``plan.verifier`` keep the scenario's budgets). :class:`~relsim.plan.chain.ChainPlan` reports
the closed forms, so its fields carry the formulas' names (``retries``, ``min_p``,
``max_miss``).

Evidence from measurement (:mod:`relsim.plan.evidence`): :func:`with_audit` sets a scenario's
verifier from a grader audit (``relsim audit --json``) at the upper end of its 95% intervals
(or the estimate, or the lower end: :func:`verifier_at`), and :func:`with_fit` its task
classes from a task-difficulty fit (``relsim fit --json``; :func:`classes_from_fit`).
:func:`retries_with_confidence` plans under their uncertainty: the least per-step budget that
meets the target in at least a stated share of the worlds they leave plausible
(:func:`plausible_worlds`), with that share for the plan at the point estimates too.

:func:`resources` plans a shared resource in time (``relsim solve --for reviewers | agents |
llm_concurrency | rpm``): the least count whose targets in time (``[targets]``) are all met,
judged with the timeline engine on common random numbers; it returns a
:class:`~relsim.plan.capacity.ResourcePlan`.

Where things are (modules are named apart from the planners, so that importing one never
shadows a function of this namespace): ``chain`` (the closed-form chain planner), ``budgets``
(:func:`retries`, :func:`total`), ``rates`` (:func:`p`, :func:`verifier`), ``spacing``
(:func:`checkpoints`), ``allocate`` (:func:`allocation`), ``sampling`` (:func:`samples`),
``ladder`` (:func:`escalation`), ``objective`` (the objectives: utility), ``search`` (the
search methods), ``evidence`` (audits and fits read and applied), ``uncertainty``
(:func:`retries_with_confidence`), ``binding`` (which constraint binds), ``sensitivity``
(:func:`levers`, the single changes and what each buys in success or expected utility, and :func:`time_levers`, those
that move the targets in time), ``curves`` (:func:`curve`, the design over one lever's range), ``capacity``
(:func:`resources`), ``dominance`` (:func:`frontier`, the designs of a sweep that no other
beats beyond its noise), ``diagnosis`` (the reasons and remedies as message
templates keyed by cause), ``result`` (:class:`Plan`) and ``_common`` (tolerances, limits,
scenario transformations). Submodules load on first use, so ``relsim solve`` in flag form
imports only the chain planner.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # pragma: no cover
    from relsim.plan.result import Plan
    from relsim.scenario import Scenario

# public name -> module that defines it
_EXPORTS = {
    "QUANTITIES": "relsim.plan.result",
    "Plan": "relsim.plan.result",
    "retries": "relsim.plan.budgets",
    "total": "relsim.plan.budgets",
    "allocation": "relsim.plan.allocate",
    "verifier": "relsim.plan.rates",
    "p": "relsim.plan.rates",
    "checkpoints": "relsim.plan.spacing",
    "samples": "relsim.plan.sampling",
    "escalation": "relsim.plan.ladder",
    "ChainPlan": "relsim.plan.chain",
    "plan_chain": "relsim.plan.chain",
    "levers": "relsim.plan.sensitivity",
    "Curve": "relsim.plan.curves",
    "curve": "relsim.plan.curves",
    "time_levers": "relsim.plan.sensitivity",
    "frontier": "relsim.plan.dominance",
    "resources": "relsim.plan.capacity",
    "ResourcePlan": "relsim.plan.capacity",
    "retries_with_confidence": "relsim.plan.uncertainty",
    "plausible_worlds": "relsim.plan.uncertainty",
    "read_audit": "relsim.plan.evidence",
    "read_fit": "relsim.plan.evidence",
    "verifier_at": "relsim.plan.evidence",
    "with_audit": "relsim.plan.evidence",
    "with_fit": "relsim.plan.evidence",
    "classes_from_fit": "relsim.plan.evidence",
}

__all__ = sorted([*_EXPORTS, "solve"])


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'relsim.plan' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def solve(
    scenario: "Scenario | Mapping[str, Any]",
    for_: str,
    target: float | None = None,
    *,
    objective: str | None = None,
) -> "Plan":
    """Plan ``for_`` (one of :data:`QUANTITIES`) for ``scenario``; ``objective`` (None: the
    planner's default) as :data:`relsim.plan.objective.OBJECTIVES` allows for ``for_``
    (``verifier`` and ``p`` take none).

    Parameters
    ----------
    scenario : Scenario or mapping
        The design to plan from.
    for_ : str
        What to plan: one of :data:`QUANTITIES` (``"retries"``, ``"total"``, ...), the
        planner of that name (``relsim solve --for``).
    target : float, optional
        End-to-end success wanted, in (0, 1]; default the scenario's ``target``.
    objective : str, optional
        As the planner takes it (None: its default).

    Returns
    -------
    Plan
        What the planner ``for_`` returns.

    Examples
    --------
    >>> from relsim.scenario import Scenario
    >>> s = Scenario.from_dict({"steps": 25, "p": 0.9, "verifier": {"miss": 0.0}})
    >>> solve(s, "retries", target=0.95).value
    2
    """
    from relsim.errors import invalid
    from relsim.plan.objective import check_objective
    from relsim.plan.result import QUANTITIES

    if for_ not in QUANTITIES:
        raise invalid("for_", f"one of {', '.join(QUANTITIES)}", for_)
    planner = getattr(importlib.import_module(_EXPORTS[for_]), for_)
    if check_objective(for_, objective) is None:
        return planner(scenario, target)
    return planner(scenario, target, objective=objective)
