r"""The closed-form chain planner: least per-step retries for ``steps`` identical verified
steps, the ceiling, and what would make an out-of-reach target reachable.

With :math:`a = p(1-f)`, :math:`w = (1-p)m`, :math:`q = pf + (1-p)(1-m)` (docs/model.md
section 2), ``r`` retries per step give the task

.. math:: \text{success}(r) = \bigl(a S_r\bigr)^n, \qquad S_r = \frac{1 - q^{r+1}}{1 - q},

which rises to the ceiling :math:`(a/(a+w))^n`. :func:`plan_chain` returns the least ``r``
(:func:`relsim.formulas.min_retries`), the success it reaches, both ceilings, and the
verifier and agent that would lift the ceiling to the target
(:func:`relsim.formulas.max_miss`, :func:`relsim.formulas.min_p`).

This is the planner behind ``relsim solve --steps N --target T --p P`` and the retry plan
that trial statistics derive from an observed success. It imports numpy (through
:mod:`relsim.formulas`) and nothing heavier, so the command starts fast.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from relsim import formulas
from relsim.plan import diagnosis
from relsim.results import jsonable, one_row

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from relsim.scenario import Scenario

__all__ = ["ChainPlan", "plan_chain"]

#: The largest per-step budget a chain plan reports as feasible (2**62, the closed forms'
#: integer range): a larger one exists mathematically but is infeasible in practice.
MAX_RETRIES = 2**62


@dataclass(frozen=True)
class ChainPlan:
    """The plan of a chain of ``steps`` identical verified steps for ``target``.

    Attributes
    ----------
    steps, target, p, miss, false_reject : int, float
        The chain planned: steps, end-to-end target, per-attempt success and the verifier.
    required_step_success : float
        ``target ** (1/steps)``: the per-step success the target needs.
    retries : int or None
        The least per-step retry budget reaching the target; None when none does, and also
        when the least one exceeds :data:`MAX_RETRIES` (``p = 1e-300`` needs about 1e303
        retries: the ``reason`` says so, with the number).
    success : float or None
        The end-to-end success with ``retries`` retries; None when infeasible.
    step_ceiling, ceiling : float
        ``a/(a+w)`` and ``(a/(a+w))**steps``: what unlimited retries reach.
    feasible : bool
        Whether a finite budget reaches the target.
    max_miss : float or None
        The largest ``miss`` whose ceiling allows the target at this ``p`` (None: none does).
    min_p : float or None
        The least ``p`` whose ceiling allows the target at this verifier (None: none does).
    reason : str or None
        When infeasible: why, in words (:data:`relsim.plan.diagnosis.CHAIN_REASONS`).
    """

    steps: int
    target: float
    p: float
    miss: float
    false_reject: float
    required_step_success: float
    retries: int | None
    success: float | None
    step_ceiling: float
    ceiling: float
    feasible: bool
    max_miss: float | None
    min_p: float | None
    reason: str | None = None

    @property
    def remedies(self) -> list[str]:
        """When infeasible: what would make the target reachable, one line each (empty when
        feasible); :data:`relsim.plan.diagnosis.CHAIN_REMEDIES`."""
        if self.feasible:
            return []
        return diagnosis.chain_remedies(asdict(self))

    def command(self) -> str:
        """The ``relsim solve`` command line that prints this plan."""
        line = f"relsim solve --steps {self.steps} --target {self.target:g} --p {self.p:.6g}"
        if self.miss:
            line += f" --miss {self.miss:g}"
        if self.false_reject:
            line += f" --false-reject {self.false_reject:g}"
        return line

    def to_scenario(self) -> "Scenario":
        """The planned design as a scenario (needs ``retries``: a feasible plan)."""
        from relsim.errors import invalid
        from relsim.scenario import Retries, Scenario, Verifier

        if self.retries is None:
            raise invalid("retries", "a budget (an infeasible plan has no design)", None)

        return Scenario(
            steps=self.steps,
            p=self.p,
            verifier=Verifier(miss=self.miss, false_reject=self.false_reject),
            retries=Retries(per_step=self.retries),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the attributes, in their order (the keys of ``relsim solve --json``)."""
        return jsonable(asdict(self))

    def to_frame(self) -> "pd.DataFrame":
        """A one-row pandas DataFrame of :meth:`to_dict`'s fields (None as NaN, as every
        result's frame: :func:`relsim.results.flatten`)."""
        return one_row(asdict(self))


def plan_chain(
    steps: int, target: float, p: float, miss: float = 0.0, false_reject: float = 0.0
) -> ChainPlan:
    r"""Plan the least per-step retry budget for ``steps`` identical verified steps.

    The least :math:`r \ge 0` with :math:`(a S_r)^n \ge T` (see the module docstring); None
    when the ceiling :math:`(a/(a+w))^n` is below the target, or equals it with
    :math:`q > 0` (only unlimited retries reach it). Bad arguments raise
    :class:`relsim.errors.RelsimError` naming the argument (from :mod:`relsim.formulas`).

    Parameters
    ----------
    steps : int
        Number of identical steps, an integer >= 1.
    target : float
        End-to-end success wanted, in (0, 1].
    p : float
        Per-attempt success of every step, in [0, 1].
    miss, false_reject : float, default 0
        The verifier, as in :func:`relsim.formulas.verified_step`.

    Returns
    -------
    ChainPlan
        The least budget (``retries``; None when none reaches the target) and its
        ``success``, the ceilings, ``max_miss`` and ``min_p``, and the ``reason`` when
        infeasible; each a Python number (the keys of ``relsim solve --json``).

    Examples
    --------
    The lesson's exercise (docs/model.md section 2): 25 steps at 95% with ``p = 0.9`` need two
    retries behind a perfect verifier, and no budget is enough behind one that misses 10%.

    >>> plan = plan_chain(25, 0.95, 0.9)
    >>> plan.retries, round(plan.success, 6)
    (2, 0.975298)
    >>> plan = plan_chain(25, 0.95, 0.9, miss=0.1)
    >>> plan.feasible, round(plan.step_ceiling, 6), round(plan.ceiling, 6)
    (False, 0.989011, 0.758626)
    """
    from relsim.errors import invalid

    given = {"steps": steps, "target": target, "p": p, "miss": miss, "false_reject": false_reject}
    for name, value in given.items():
        if not np.isscalar(value) and getattr(value, "ndim", None) != 0:
            # one chain (formulas.min_retries plans arrays of them)
            raise invalid(name, "one number", value)
    retries = formulas.min_retries(p, steps, target, miss, false_reject)  # checks the ranges
    # the plan holds Python numbers, whatever numpy scalars it was given
    steps, target, p = int(steps), float(target), float(p)
    miss, false_reject = float(miss), float(false_reject)
    step_ceiling = float(formulas.verified_ceiling(p, miss, false_reject))
    first = formulas.verified_step(p, 0, miss, false_reject)
    accepted = first.success + first.silent_failure
    wrong_share = first.silent_failure / accepted if accepted > 0 else 1.0
    ceiling = _power(step_ceiling, wrong_share, steps)
    needed = None
    if retries is not None and retries > MAX_RETRIES:  # exists, but no agent can run it
        needed, retries = retries, None
    feasible = retries is not None
    success = None
    if feasible:
        step = formulas.verified_step(p, retries, miss, false_reject)
        success = _power(step.success, step.silent_failure + step.exhausted, steps)
    reason = None
    if not feasible:
        cause = "astronomical" if needed is not None else diagnosis.chain_cause(
            p, false_reject, ceiling, target
        )
        reason = diagnosis.CHAIN_REASONS[cause].format(
            step_ceiling=step_ceiling,
            ceiling=ceiling,
            steps=steps,
            target=target,
            p=p,
            miss=miss,
            false_reject=false_reject,
            needed=_scientific(needed) if needed is not None else None,
            limit=MAX_RETRIES,
        )
    return ChainPlan(
        steps=steps,
        target=target,
        p=p,
        miss=miss,
        false_reject=false_reject,
        required_step_success=float(formulas.required_step_success(target, steps)),
        retries=retries,
        success=success,
        step_ceiling=step_ceiling,
        ceiling=ceiling,
        feasible=feasible,
        max_miss=formulas.max_miss(p, steps, target, false_reject),
        min_p=formulas.min_p(steps, target, miss, false_reject),
        reason=reason,
    )


def _scientific(number: int) -> str:
    """``number`` as ``1.38e+301``, also beyond the float range (a Python int)."""
    digits = str(number)
    return f"{digits[0]}.{digits[1:3]}e+{len(digits) - 1}"


def _power(success: float, failure: float, steps: int) -> float:
    """``success ** steps`` from the step's failure where it is small, so that a step success
    that rounds to 1 (failure 1e-20) still gives 2**62 steps their true ``exp(-steps *
    failure)``."""
    import math

    if success == 0.0:
        return 0.0
    log_success = math.log1p(-failure) if failure < 0.5 else math.log(success)
    return math.exp(steps * log_success)
