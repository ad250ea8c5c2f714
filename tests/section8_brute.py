"""A brute-force oracle for docs/model.md section 8: one trial, every random outcome enumerated.

:func:`brute_force` reads a scenario as a plain dict (the format of ``Scenario.from_dict``) and
follows MODEL.md's pseudo-code (section 3 with section 8's changes) branch by branch: the class,
every sample of every attempt (a right answer, or which wrong answer it picks), the vote's
tie-break, each verifier verdict, each wrong answer's failure mode, each fault, each confusion
move and each checkpoint verdict, each with its exact probability. Attempts are enumerated
sample by sample and then grouped by what the rest of the trial can see (accepted or not, the
result right or wrong, its mode, a fault); the trial is a recursion over its state, memoised,
returning the expectations of its outcomes, attempts and cost.

It shares no code with relsim (not even the scenario's parser: the defaults below are MODEL.md
sections 4 and 8), so the engines can be held to it. Meant for tiny scenarios: 1-3 steps,
budgets of a few retries, ``n`` up to about 4, few wrong answers; no random effects (a scenario
with ``task_sd`` or ``step_sd`` is refused). An attempt's enumeration costs
``(1 + wrong_answers) ** n`` branches (``(1 + modes) ** n`` times 2 ** n with select
``"verifier"``).

Examples
--------
One step, a binary vote of three samples with p = 0.8, no verifier: the vote is right when at
least two samples are, 0.8**3 + 3 * 0.8**2 * 0.2 = 0.896.

>>> out = brute_force({"steps": 1, "p": 0.8, "sampling": {"n": 3}})
>>> round(out["success"], 12), out["silent_by_mode"], out["expected_cost"]
(0.896, None, 3.0)
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from typing import Any

__all__ = ["brute_force", "OUTCOMES"]

#: The outcome probabilities :func:`brute_force` returns (they sum to 1).
OUTCOMES = ("success", "silent_failure", "detected_failure", "infra_failure")
_EXPECTATIONS = ("expected_attempts", "expected_cost")


def _per_step(value: Any, steps: int) -> list[float]:
    return [float(v) for v in value] if isinstance(value, (list, tuple)) else [float(value)] * steps


def _read(data: dict) -> dict:
    """The scenario's values with MODEL.md's defaults, as plain Python."""
    n = int(data["steps"])
    corr = data.get("correlation") or {}
    if corr.get("task_sd", 0.0) or corr.get("step_sd", 0.0):
        raise ValueError("brute_force: no random effects (task_sd, step_sd)")
    verifier = data.get("verifier")
    retries = data.get("retries") or {}
    total = retries.get("total")
    per_step = retries.get("per_step", total if total is not None else 0)
    ck = data.get("checkpoints")
    positions: set[int] = set()
    if ck is not None:
        if ck.get("every"):
            positions |= set(range(ck["every"], n + 1, ck["every"]))
        positions |= set(ck.get("at", ()))
        if ck.get("final", False):
            positions.add(n)
    detect = 1.0 if ck is None else float(ck.get("detect", 1.0))
    cost = data.get("cost") or {}
    attempt_cost = _per_step(cost.get("attempt", 1.0), n)
    esc = data.get("escalation")
    rung_cost = [attempt_cost]
    if esc is not None:
        costs = esc.get("attempt_cost")
        rung_cost += [attempt_cost if costs is None else _per_step(c, n) for c in costs]
    classes = data.get("classes") or [{"weight": 1.0, "p": data["p"]}]
    weight_sum = math.fsum(float(c["weight"]) for c in classes)
    kinds = []
    for c in classes:
        rungs = [_per_step(c["p"], n)]
        if esc is not None:
            own = c.get("escalation_p")
            rungs += [_per_step(p, n) for p in (own if own is not None else esc["p"])]
        kinds.append((float(c["weight"]) / weight_sum, rungs))
    sampling = data.get("sampling") or {}
    wrong = sampling.get("wrong_answers", 1)
    modes = data.get("failure_modes")
    if modes:
        names = [m["name"] for m in modes]
        mode_list = [
            (
                float(m["share"]),
                (float(m.get("miss", 0.0)) if verifier is not None else 1.0),
                float(m.get("detect", detect)),
            )
            for m in modes
        ]
    else:  # one mode that is every wrong result: the plain verifier and checkpoints
        names = None
        mode_list = [(1.0, 1.0 if verifier is None else float(verifier.get("miss", 0.0)), detect)]
    confusion = corr.get("confusion")
    utility = data.get("utility")
    return dict(
        n=n,
        kinds=kinds,
        verified=verifier is not None,
        false_reject=0.0 if verifier is None else float(verifier.get("false_reject", 0.0)),
        per_step=[int(r) for r in _per_step(per_step, n)],
        total=math.inf if total is None else int(total),
        positions=positions,
        false_alarm=0.0 if ck is None else float(ck.get("false_alarm", 0.0)),
        rollbacks=0 if ck is None else int(ck.get("rollbacks", 0)),
        rung_cost=rung_cost,
        verify_cost=float(cost.get("verify", 0.0)),
        checkpoint_cost=float(cost.get("checkpoint", 0.0)),
        rollback_cost=float(cost.get("rollback", 0.0)),
        after=list(esc["after"]) if esc is not None else [],
        samples=int(sampling.get("n", 1)),
        vote=sampling.get("select", "vote") == "vote",
        wrong_answers=0 if wrong == "distinct" else int(wrong),
        names=names,
        modes=mode_list,
        confusion=None if confusion is None else (
            float(confusion["enter"]), float(confusion["recover"]), float(confusion["factor"])),
        fault=float((data.get("faults") or {}).get("attempt", 0.0)),
        utility=utility,
    )


# ----------------------------------------------------------------------------- one attempt
def _verdicts(s: dict, correct: bool):
    """The verifier meeting one answer: ``(accepted, mode, probability)`` (mode 0: right)."""
    if correct:
        if not s["verified"]:
            return [(True, 0, 1.0)]
        return [(True, 0, 1.0 - s["false_reject"]), (False, 0, s["false_reject"])]
    out = []
    for m, (share, miss, _) in enumerate(s["modes"], start=1):
        out.append((True, m, share * miss))
        if s["verified"]:
            out.append((False, m, share * (1.0 - miss)))
    return out


def _vote(s: dict, pe: float, branches: dict) -> None:
    """Every sample's answer, the plurality winner (ties at random), then the verifier."""
    n, w = s["samples"], s["wrong_answers"]
    for answers in itertools.product(range(n + 1 if w == 0 else w + 1), repeat=n):
        # answer 0 is the right one; with "distinct" wrong sample k gives answer k + 1 only
        if w == 0 and any(a not in (0, k + 1) for k, a in enumerate(answers)):
            continue
        prob = 1.0
        for a in answers:
            prob *= pe if a == 0 else (1.0 - pe) / (w if w else 1)
        counts: dict[int, int] = defaultdict(int)
        for a in answers:
            counts[a] += 1
        top = max(counts.values())
        tied = [a for a, c in counts.items() if c == top]
        for winner in tied:
            correct = winner == 0
            for accepted, mode, p_verdict in _verdicts(s, correct):
                key = ("accepted" if accepted else "rejected", correct, mode)
                branches[key] += (1.0 - s["fault"]) * prob / len(tied) * p_verdict


def _verify_each(s: dict, pe: float, branches: dict) -> None:
    """Every sample right or wrong, each verdict (and mode); the first accepted is the result."""
    per_sample = []
    for correct, p_correct in ((True, pe), (False, 1.0 - pe)):
        for accepted, mode, p_verdict in _verdicts(s, correct):
            per_sample.append((correct, accepted, mode, p_correct * p_verdict))
    for samples in itertools.product(per_sample, repeat=s["samples"]):
        prob = math.prod(sample[3] for sample in samples)
        first = next((sample for sample in samples if sample[1]), None)
        if first is None:  # none accepted: the confusion moves on the first sample
            key = ("rejected", samples[0][0], 0)
        else:
            key = ("accepted", first[0], first[2])
        branches[key] += (1.0 - s["fault"]) * prob


def _attempt(s: dict, p: float, confused: bool) -> dict:
    """One attempt's outcomes grouped by what the trial sees next: ``{(kind, result correct,
    mode): probability}`` with kind accepted, rejected or fault."""
    pe = p * (s["confusion"][2] if confused else 1.0) if s["confusion"] else p
    branches: dict = defaultdict(float)
    if s["fault"]:
        branches[("fault", None, 0)] += s["fault"]
    (_vote if s["vote"] else _verify_each)(s, pe, branches)
    return branches


def _moves(s: dict, correct: bool | None, confused: bool):
    """The confusion moves after an attempt whose result is ``correct`` (None: a fault)."""
    if s["confusion"] is None or correct is None:
        return [(confused, 1.0)]
    enter, recover, _ = s["confusion"]
    if not correct and not confused:
        return [(True, enter), (False, 1.0 - enter)]
    if correct and confused:
        return [(False, recover), (True, 1.0 - recover)]
    return [(confused, 1.0)]


# ---------------------------------------------------------------------------- the trial
def brute_force(data: dict) -> dict:
    """The exact outcome of one trial of ``data`` (a scenario dict), by enumeration.

    Parameters
    ----------
    data : dict
        A scenario in ``Scenario.from_dict``'s format: ``steps``, ``p``, ``verifier``,
        ``retries``, ``checkpoints``, ``correlation.confusion``, ``cost`` and section 8's
        ``classes``, ``escalation``, ``sampling``, ``failure_modes``, ``faults``, ``utility``.
        Not validated: give a valid scenario.

    Returns
    -------
    dict
        ``success``, ``silent_failure``, ``detected_failure``, ``infra_failure`` (they sum to
        1), ``expected_attempts``, ``expected_cost``, ``silent_by_mode`` (``{name: share}``
        with failure modes, else None; summing to ``silent_failure``) and
        ``expected_utility`` (with ``utility``, else None).
    """
    s = _read(data)
    n = s["n"]
    names = s["names"]
    n_modes = len(s["modes"])
    # a vector: the four outcomes, attempts, cost, then silent failures by mode 1..M
    width = 4 + 2 + n_modes

    def unit(index: int, extra: tuple[int, float] | None = None) -> list[float]:
        out = [0.0] * width
        out[index] = 1.0
        if extra is not None:
            out[extra[0]] = extra[1]
        return out

    def add(acc: list[float], prob: float, values: list[float], attempts: float = 0.0,
            cost: float = 0.0) -> None:
        # the outcome shares and silent modes weigh by prob; attempts and cost spent now are
        # paid on every path below, so they weigh by prob too
        for k in range(width):
            acc[k] += prob * values[k]
        acc[4] += prob * attempts
        acc[5] += prob * cost

    def end(taint: int, doomed: int) -> list[float]:
        if not (taint or doomed):
            return unit(0)
        mode = doomed if doomed else taint
        return unit(1, (5 + mode, 1.0))

    total = [0.0] * width
    for weight, rungs in s["kinds"]:
        memo: dict = {}

        def execution(i: int, j: int, confused: bool, taint: int, doomed: int, seg_start: int,
                      retries: int, rollbacks: int) -> list[float]:
            """Expectations from attempt ``j`` of step ``i + 1`` on."""
            key = (i, j, confused, taint, doomed, seg_start, retries, rollbacks)
            if key in memo:
                return memo[key]
            rung = sum(1 for a in s["after"] if a <= j)
            p = rungs[rung][i]
            samples = s["samples"]
            spend = s["rung_cost"][rung][i] * samples
            checks = s["verify_cost"] * (1 if s["vote"] else samples)
            acc = [0.0] * width
            for (kind, correct, mode), prob in _attempt(s, p, confused).items():
                cost = spend + (0.0 if kind == "fault" else checks)
                for conf2, p_move in _moves(s, correct, confused):
                    q = prob * p_move
                    if kind == "accepted":
                        taint2 = taint if taint or correct else mode
                        after = step_done(i + 1, conf2, taint2, doomed, seg_start, retries, rollbacks)
                    elif j < s["per_step"][i] and retries < s["total"]:
                        after = execution(i, j + 1, conf2, taint, doomed, seg_start, retries + 1,
                                          rollbacks)
                    else:
                        after = unit(3 if kind == "fault" else 2)
                    add(acc, q, after, 1.0, cost)
            memo[key] = acc
            return acc

        def step_done(i: int, confused: bool, taint: int, doomed: int, seg_start: int,
                      retries: int, rollbacks: int) -> list[float]:
            """Expectations after step ``i`` was accepted (its checkpoint, if any, next)."""
            if i not in s["positions"]:
                return start(i, confused, taint, doomed, seg_start, retries, rollbacks)
            acc = [0.0] * width
            caught = s["modes"][taint - 1][2] if taint else s["false_alarm"]
            if caught:
                if rollbacks == s["rollbacks"]:
                    add(acc, caught, unit(2), 0.0, s["checkpoint_cost"])
                else:
                    back = start(seg_start, False, 0, doomed, seg_start, retries, rollbacks + 1)
                    add(acc, caught, back, 0.0, s["checkpoint_cost"] + s["rollback_cost"])
            if caught < 1.0:
                onward = start(i, confused, 0, doomed if doomed else taint, i, retries, rollbacks)
                add(acc, 1.0 - caught, onward, 0.0, s["checkpoint_cost"])
            return acc

        def start(i, confused, taint, doomed, seg_start, retries, rollbacks) -> list[float]:
            if i == n:
                return end(taint, doomed)
            return execution(i, 0, confused, taint, doomed, seg_start, retries, rollbacks)

        values = start(0, False, 0, 0, 0, 0, 0)
        for k in range(width):
            total[k] += weight * values[k]

    out = {key: total[k] for k, key in enumerate(OUTCOMES)}
    out["expected_attempts"], out["expected_cost"] = total[4], total[5]
    out["silent_by_mode"] = None if names is None else {
        name: total[6 + m] for m, name in enumerate(names)}
    out["expected_utility"] = None
    if s["utility"] is not None:
        u = s["utility"]
        values = {"success": 1.0, "silent_failure": 0.0, "detected_failure": 0.0,
                  "infra_failure": 0.0}
        values.update({k: float(v) for k, v in u.items() if k in values})
        out["expected_utility"] = math.fsum(out[k] * v for k, v in values.items()) - float(
            u.get("cost_weight", 0.0)) * out["expected_cost"]
    return out
