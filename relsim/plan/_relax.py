r"""The relaxation behind allocation's bounds on Markov scenarios, and what uses it.

:class:`Relaxation` lets each execution's budget depend on the task effect and the confusion
state (an allocation cannot), which bounds every allocation from below; :func:`lower_bound`
turns it into a bound on cost per success or expected cost under the target;
:func:`branch_and_bound` proves the optimum on short chains; :func:`rollout` reads an
allocation off it. The tables are :mod:`relsim.plan._markov`'s.
"""

from __future__ import annotations

import math

import numpy as np

from relsim.plan._markov import (
    CHUNK,
    READ_CACHE,
    SHARE_POINTS,
    SUFFIXES,
    TIE,
    Tables,
    _times_column,
    _value,
)

#: Solves of the relaxation per search for the bound (each value found is a valid bound).
BOUND_SOLVES = 8


# ------------------------------------------------------------------------------- bound
class Relaxation:
    r"""The relaxation of :func:`relax` on a box of budgets ``low..high``, ready to be solved
    at any reward (what does not depend on the reward is computed once).

    A state is (step, confusion state, untainted share :math:`\rho` of the mass there); its
    value is the least expected ``cost - reward * success`` from there on when each
    execution's budget may depend on the task effect and the confusion state (a real
    allocation cannot: this bounds every allocation in the box):

    .. math::

        v_k(c, \rho) = \min_b \Bigl[u\,a_b(c) + \sum_{c_2} P_b(c, c_2)\,
        v_{k+1}\bigl(c_2, \rho K_b(c, c_2) / P_b(c, c_2)\bigr)\Bigr],\qquad
        v_n(c, \rho) = -\text{reward}\cdot\rho.

    Each :math:`v_k(c, \cdot)` is concave (a least of affine functions), so it is held at
    grid points spanning the shares that can occur there and read between them on chords,
    which lie below it: the values never exceed the exact relaxation's. ``high = width``
    stands for any budget from ``width`` up when the tables stop short of ``MAX_BUDGET``: the
    mass still exhausted at ``width`` is credited with the whole reward at no cost.
    """

    def __init__(
        self,
        tables: Tables,
        low: np.ndarray | None = None,
        high: np.ndarray | None = None,
        points: int | None = None,
    ) -> None:
        n = tables.steps
        z, c = tables.weights.size, tables.states
        self.tables = tables
        self.points = points if points is not None else (4 if c == 1 else SHARE_POINTS)
        self.low = np.zeros(n, dtype=np.int64) if low is None else np.asarray(low)
        self.high = np.full(n, tables.width, dtype=np.int64) if high is None else np.asarray(high)
        # the shares that can occur at each (step, z, state): least and largest over all paths
        lo = np.full((n + 1, z, c), np.inf)
        hi = np.full((n + 1, z, c), -np.inf)
        lo[0, :, 0] = hi[0, :, 0] = 1.0
        ratios = []
        for i in range(n):
            passed = tables.passed[i, self.low[i] : self.high[i] + 1]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(passed > 0, tables.correct[i, self.low[i] : self.high[i] + 1] / passed, 0.0)
            ratios.append(ratio)
            live = passed > 0  # (b, z, c, c2)
            lo[i + 1] = np.where(live, lo[i][None, :, :, None] * ratio, np.inf).min(axis=(0, 2))
            hi[i + 1] = np.where(live, hi[i][None, :, :, None] * ratio, -np.inf).max(axis=(0, 2))
        reach = lo <= hi
        self.lo = np.where(reach, lo, 0.0)
        self.hi = np.where(reach, np.maximum(hi, lo), 0.0)
        self.ratios = ratios
        self.share = np.linspace(0.0, 1.0, self.points)
        self.value: list[np.ndarray] = []
        self.success: list[np.ndarray] = []
        self.reward = math.nan
        self._cache: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._cached = 0

    def grid(self, k: int) -> np.ndarray:
        """The shares held at step ``k``: (z, C, points)."""
        return self.lo[k][..., None] + (self.hi[k] - self.lo[k])[..., None] * self.share

    def _where(
        self, k: int, shares: np.ndarray, axes: tuple[int, int] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Flat indices of the grid points of step ``k`` on either side of ``shares`` and the
        weight of the right one. ``axes`` are the z and state axes of ``shares`` (default:
        the last two)."""
        points = self.points
        z, c = self.lo[k].shape
        ndim = shares.ndim
        z_axis, c_axis = axes if axes is not None else (ndim - 2, ndim - 1)
        shape = [1] * ndim
        shape[z_axis], shape[c_axis] = z, c
        lo = self.lo[k].reshape(shape)
        span = (self.hi[k] - self.lo[k]).reshape(shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            position = np.where(span > 0, (shares - lo) / span * (points - 1), 0.0)
        position = np.clip(position, 0.0, points - 1.0)
        left = np.minimum(position.astype(np.int64), max(points - 2, 0))
        base = ((np.arange(z)[:, None] * c + np.arange(c)[None, :]) * points).reshape(shape)
        return base + left, base + np.minimum(left + 1, points - 1), position - left

    def _reads(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Where step ``i``'s choices read :math:`v_{i+1}`: (b, z, c, c2, g) indices and
        weights, the same at every reward (kept while they fit in ``READ_CACHE`` bytes)."""
        if i in self._cache:
            return self._cache[i]
        query = self.grid(i)[None, :, :, None, :] * self.ratios[i][..., None]
        reads = self._where(i + 1, query, (1, 3))
        size = 3 * 8 * query.size
        if self._cached + size <= READ_CACHE:
            self._cache[i] = reads
            self._cached += size
        return reads

    def solve(self, reward: float) -> "Relaxation":
        """Fill ``value`` and ``success`` (one (z, C, points) array per step) at ``reward``."""
        tables = self.tables
        n = tables.steps
        value = -reward * self.grid(n)
        success = np.ones_like(value)
        values, successes = [value], [success]
        for i in range(n - 1, -1, -1):
            options = slice(self.low[i], self.high[i] + 1)
            passed = tables.passed[i, options]  # (b, z, c, c2)
            spent = tables.unit[i] * tables.attempts[i, options]  # (b, z, c)
            grid = self.grid(i)  # (z, c, g)
            left, right, frac = self._reads(i)  # v_{i+1}(c2, .) at the shares reached
            flat = value.reshape(-1)
            ahead = flat[left] * (1.0 - frac) + flat[right] * frac
            flat_success = success.reshape(-1)
            ahead_success = flat_success[left] * (1.0 - frac) + flat_success[right] * frac
            moved = passed[..., None]  # (b, z, c, c2, 1)
            total = spent[..., None] + np.sum(moved * ahead, axis=3)  # (b, z, c, g)
            if self.high[i] == tables.width and tables.unbounded:
                missing = np.maximum(0.0, 1.0 - passed[-1].sum(axis=-1))  # exhausted at the top
                total[-1] -= reward * missing[..., None] * grid
            best = np.argmin(total, axis=0)[None]
            value = np.take_along_axis(total, best, axis=0)[0]
            won = np.sum(tables.correct[i, options][..., None] * ahead_success, axis=3)
            success = np.take_along_axis(won, best, axis=0)[0]
            values.append(value)
            successes.append(success)
        self.value = values[::-1]
        self.success = successes[::-1]
        self.reward = reward
        return self

    def read(self, k: int, shares: np.ndarray, what: str = "value") -> np.ndarray:
        """:math:`v_k` (or the success of its choices) at ``shares`` (..., z, C)."""
        left, right, frac = self._where(k, shares)
        flat = (self.value if what == "value" else self.success)[k].reshape(-1)
        return flat[left] * (1.0 - frac) + flat[right] * frac

    def root(self) -> tuple[float, float]:
        """Expected value and success from the start (focused, untainted, share 1)."""
        w = self.tables.weights
        return float(w @ self.value[0][:, 0, 0]), float(w @ self.success[0][:, 0, 0])


# ------------------------------------------------------------------- the bound on the optimum
def lower_bound(
    relaxation: Relaxation, goal: float, objective: str, incumbent: float
) -> tuple[float, float]:
    r"""A lower bound on the objective of every allocation in the relaxation's box with
    success >= ``goal``, and the reward at which it was found.

    For any allocation and :math:`\mu \ge 0`, with :math:`h(\Lambda)` the relaxation's value
    at reward :math:`\Lambda` (a lower bound on ``cost - Lambda * success``):
    ``cost - lam * success >= cost - lam * success - mu * (success - goal) >= h(lam + mu) +
    mu * goal``. Cost per success: ``lam`` is a bound when that is >= 0 for some ``mu``; so
    the root of :math:`h` is one, and when the relaxation's success there is short of the
    goal, :math:`\max_\Lambda \Lambda + h(\Lambda)/\text{goal}` over larger :math:`\Lambda`
    (concave, at its largest where the relaxation's success is the goal) is a better one.
    Expected cost: :math:`\max_{\mu \ge 0} h(\mu) + \mu\,\text{goal}` (concave, at its
    largest where the relaxation's success is the goal). Each value found is itself a valid
    bound, so the searches stop after a few solves. ``incumbent`` is the objective of a known
    allocation (it brackets the search)."""

    def solve(reward: float) -> tuple[float, float]:
        return relaxation.solve(reward).root()

    if objective == "expected_cost":
        best, best_reward = -math.inf, 0.0
        low_mu, high_mu = 0.0, max(incumbent, 1e-300) / goal
        value, success = solve(0.0)
        best = value
        if success >= goal:
            return best, 0.0
        value, success = solve(high_mu)
        while success < goal and high_mu < 1e300:
            best = max(best, value + high_mu * goal)
            low_mu, high_mu = high_mu, 2.0 * high_mu
            value, success = solve(high_mu)
        if value + high_mu * goal > best:
            best, best_reward = value + high_mu * goal, high_mu
        for _ in range(BOUND_SOLVES):
            middle = 0.5 * (low_mu + high_mu)
            value, success = solve(middle)
            if value + middle * goal > best:
                best, best_reward = value + middle * goal, middle
            if success < goal:
                low_mu = middle
            else:
                high_mu = middle
        return best, best_reward

    # cost per success: the root of h between 0 (h >= 0: cost is never negative) and the
    # incumbent (h <= 0: the incumbent itself has cost - incumbent * success = 0)
    left, right = 0.0, incumbent
    h_left, _ = solve(left)
    h_right, _ = solve(right)
    if h_right >= 0.0:  # the incumbent is optimal in the relaxation
        return incumbent, incumbent
    best, best_reward, best_success = 0.0, 0.0, 0.0
    side = 0
    for _ in range(BOUND_SOLVES):
        # regula falsi (Illinois): h is concave, so the chord's root has h >= 0
        middle = (left * h_right - right * h_left) / (h_right - h_left)
        if not left < middle < right:
            middle = 0.5 * (left + right)
        h_middle, s_middle = solve(middle)
        if h_middle >= 0.0:
            best, best_reward, best_success = middle, middle, s_middle
            left, h_left = middle, h_middle
            if side == 1:
                h_right *= 0.5
            side = 1
        else:
            right, h_right = middle, h_middle
            if side == -1:
                h_left *= 0.5
            side = -1
        if right - left <= 1e-7 * right:
            break
    if best_success >= goal:
        return best, best_reward
    # the target binds the relaxation: Lambda + h(Lambda) / goal, largest where success = goal
    low_reward, high_reward = right, 2.0 * max(right, incumbent)
    h_high, s_high = solve(high_reward)
    for _ in range(60):
        if s_high >= goal:
            break
        candidate = high_reward + min(0.0, h_high) / goal
        if candidate > best:
            best, best_reward = candidate, high_reward
        low_reward, high_reward = high_reward, 2.0 * high_reward
        h_high, s_high = solve(high_reward)
    candidate = high_reward + min(0.0, h_high) / goal
    if candidate > best:
        best, best_reward = candidate, high_reward
    for _ in range(BOUND_SOLVES):
        middle = 0.5 * (low_reward + high_reward)
        h_middle, s_middle = solve(middle)
        candidate = middle + min(0.0, h_middle) / goal
        if candidate > best:
            best, best_reward = candidate, middle
        if s_middle < goal:
            low_reward = middle
        else:
            high_reward = middle
    return best, best_reward


# ------------------------------------------------------------------- branch and bound
def branch_and_bound(
    tables: Tables,
    goal: float,
    objective: str,
    incumbent: np.ndarray,
    rewards: list[float],
    work: int,
) -> np.ndarray | None:
    """The best allocation in ``0..width`` per step (objective within ``TIE`` of the least),
    or None when the search would examine more than ``work`` partial allocations x z nodes x
    states (or prefix-suffix pairs).

    Allocations are built a step at a time, every budget of the next step at once; a partial
    allocation is dropped when, at one of ``rewards`` (see :func:`lower_bound`), its cost so
    far plus the relaxation's value of what follows shows that no completion beats the
    incumbent (``cost - lam * success - mu * (success - goal) >= 0`` at the incumbent's
    ``lam``, for cost per success). The relaxation of the whole box serves every partial
    allocation: its values from step ``k`` on are read at the partial allocation's mass and
    untainted share in each state. The last steps (as many as have at most ``SUFFIXES``
    allocations) are not branched on: every surviving prefix is judged with every one of
    their allocations exactly, two matrix products per block of prefixes."""
    n = tables.steps
    weights = tables.weights
    cost, success = tables.outcome(incumbent)
    best_budgets = np.array(incumbent, dtype=np.int64)
    best_value = float(_value(np.float64(cost), np.float64(success), objective, 0.0))
    lam = best_value if objective == "cost_per_success" else 0.0
    offset = 0.0 if objective == "cost_per_success" else best_value
    slack = TIE * abs(best_value)
    relaxations = []
    for reward in sorted(set(rewards)):
        mu = reward - lam
        if mu < 0:
            continue
        relaxations.append((Relaxation(tables).solve(reward), mu))
    if not relaxations:
        relaxations.append((Relaxation(tables).solve(lam), 0.0))
    z, c = weights.size, tables.states
    every = np.zeros((1, z, c))
    every[:, :, 0] = 1.0
    clean = every.copy()
    before = np.zeros(1)
    prefixes = np.zeros((1, 0), dtype=np.int64)
    examined = 0
    options = np.arange(tables.width + 1)
    # the last steps are enumerated whole: every allocation of them, with its cost and success
    # from there (a product per prefix then judges every completion exactly)
    tail = 1
    while tail < n and options.size ** (tail + 1) <= SUFFIXES:
        tail += 1
    suffixes, cost_after, success_after = _suffixes(tables, n - tail)
    for k in range(n - tail + 1):
        if k == n - tail:  # complete allocations: every surviving prefix with every suffix
            weighted_every = (every * weights[:, None]).reshape(len(before), -1)
            weighted_clean = (clean * weights[:, None]).reshape(len(before), -1)
            chunk = max(1, CHUNK // max(1, len(suffixes)))
            for first in range(0, len(before), chunk):
                part = slice(first, first + chunk)
                examined += (min(first + chunk, len(before)) - first) * len(suffixes)
                if examined > work:
                    return None
                cost = before[part, None] + weighted_every[part] @ cost_after
                success = weighted_clean[part] @ success_after
                value = np.where(success >= goal, _value(cost, success, objective, 0.0), np.inf)
                m, s = np.unravel_index(int(np.argmin(value)), value.shape)
                if value[m, s] < best_value - slack:
                    best_value = float(value[m, s])
                    best_budgets = np.concatenate([prefixes[part][m], suffixes[s]])
            return best_budgets
        spent = tables.unit[k] * tables.attempts[k]  # (b, z, c)
        chunk = max(1, CHUNK // (options.size * z * c))
        kept = []
        for first in range(0, len(before), chunk):
            part = slice(first, first + chunk)
            # every budget of step k after these prefixes: (m, b, z, c)
            new_before = before[part, None] + np.einsum(
                "mzc,bzc->mb", every[part] * weights[:, None], spent
            )
            new_every = np.einsum("mzc,bzcd->mbzd", every[part], tables.passed[k])
            new_clean = np.einsum("mzc,bzcd->mbzd", clean[part], tables.correct[k])
            examined += new_every.size
            if examined > work:
                return None
            keep = np.ones(new_before.shape, dtype=bool)
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(new_every > 0, new_clean / new_every, 0.0)
            for relaxation, mu in relaxations:
                ahead = relaxation.read(k + 1, share)  # (m, b, z, c)
                bound = new_before + np.einsum("mbzc,z->mb", new_every * ahead, weights)
                keep &= bound + mu * goal - offset < -slack
            m_index, b_index = np.nonzero(keep)
            kept.append(
                (
                    np.concatenate([prefixes[part][m_index], options[b_index][:, None]], axis=1),
                    new_every[m_index, b_index],
                    new_clean[m_index, b_index],
                    new_before[m_index, b_index],
                )
            )
        prefixes, every, clean, before = (np.concatenate(x) for x in zip(*kept))
        if before.size == 0:
            return best_budgets
    return best_budgets  # pragma: no cover - the loop returns


def _suffixes(tables: Tables, first: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every allocation of steps ``first..`` (s, steps - first), and each one's expected cost
    and success from step ``first`` on, per z node and state: (z * C, s) each."""
    n = tables.steps
    width = tables.width
    count = n - first
    designs = np.array(np.meshgrid(*[np.arange(width + 1)] * count, indexing="ij")).reshape(count, -1).T
    z, c = tables.weights.size, tables.states
    cost = np.zeros((len(designs), z, c))
    success = np.ones((len(designs), z, c))
    for i in range(n - 1, first - 1, -1):
        b = designs[:, i - first]
        cost = tables.unit[i] * tables.attempts[i, b] + _times_column(tables.passed[i, b], cost)
        success = _times_column(tables.correct[i, b], success)
    return designs, cost.reshape(len(designs), -1).T.copy(), success.reshape(len(designs), -1).T.copy()


def rollout(relaxation: Relaxation, objective: str = "penalised") -> np.ndarray:
    """An allocation read off a solved relaxation: each step in turn gets the budget that
    minimises the cost so far plus the relaxation's value of what follows, for the mass
    the allocation so far brings there (one budget for every z node and state). Without
    random task effects and confusion this is the relaxation's own optimum."""
    tables = relaxation.tables
    n = tables.steps
    weights = tables.weights
    low, high = relaxation.low, relaxation.high
    z, c = weights.size, tables.states
    every = np.zeros((z, c))
    every[:, 0] = 1.0
    clean = every.copy()
    budgets = np.zeros(n, dtype=np.int64)
    for k in range(n):
        options = np.arange(low[k], high[k] + 1)
        spent = tables.unit[k] * tables.attempts[k, options]  # (b, z, c)
        new_every = np.einsum("zc,bzcd->bzd", every, tables.passed[k, options])
        new_clean = np.einsum("zc,bzcd->bzd", clean, tables.correct[k, options])
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(new_every > 0, new_clean / new_every, 0.0)
        ahead = relaxation.read(k + 1, share)  # (b, z, c)
        value = np.einsum("zc,bzc->b", every * weights[:, None], spent) + np.einsum(
            "bzc,z->b", new_every * ahead, weights
        )
        best = int(np.argmin(value))
        budgets[k] = options[best]
        every, clean = new_every[best], new_clean[best]
    return budgets
