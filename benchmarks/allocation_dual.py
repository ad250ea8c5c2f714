"""Does the Lagrangian dual of "every task-effect node uses the same budgets" reach 1%? A probe.

    python3 benchmarks/allocation_dual.py [--points 60] [--iterations 800] [--cuts 1,2,3,4]

Issue 22 asks allocation for a bound within 1% of its answer on large scenarios; on the
200-step case with a task effect (``planner_speed.py``) the planner's bound, which lets each
task-effect node choose its own budgets (:class:`relsim.plan._relax.Relaxation`), is 6.17%
off. This script computes the Lagrangian dual of the constraints that every node uses the
same budgets. A reward ``lam`` is a bound on cost per success (every allocation with success
>= GOAL has cost / success >= lam) when the least ``sum_z w_z (cost_z - lam * success_z)``
over those allocations is >= 0, and for any ``mu >= 0`` and multipliers ``psi[z, i, k]``
with ``sum_z psi[z, i, k] = 0`` for every step ``i`` and budget ``k`` (weak duality)

.. math::

    D(\\text{lam}; \\psi, \\mu) = \\mu\\,\\text{GOAL} + \\sum_z \\min_b \\Bigl\\{
    w_z[\\text{cost}_z(b) - (\\text{lam} + \\mu)\\,\\text{success}_z(b)]
    + \\sum_i \\psi[z, i, b_i]\\Bigr\\}

is at most that least value: ``D >= 0`` for some ``psi, mu`` certifies ``lam``. ``psi = 0``
is the planner's per-node bound.

Pricing (the minimum for one node) is a dynamic programme over the node's mass ``M`` and
untainted mass ``U`` (``0 <= U <= M <= 1``): each allocation of the steps from ``i`` on has
a value affine in ``(M, U)`` plus a constant (its penalties), so the least of them,
``V_i(M, U)``, is concave. It is held at grid points ``(M, rho * M)``: ``M`` on ``points``
geometric values from 1 down to ``FLOOR`` (and the point ``M = 0``), ``rho`` on ``shares``
points spanning the shares reachable at step ``i`` (the relaxation's ``lo`` and ``hi``). A
value at another point is read as a convex combination of the four grid points around it
(linear in ``M`` along the rays ``U = rho_j M``, linear in ``rho`` between them; below
``FLOOR`` a chord to ``M = 0``), which by concavity is at most the true value, so every
value held, and every ``D``, stays a valid lower bound. The top budget (the tables' width)
stands for every budget from it up (``Tables.unbounded``): as in ``Relaxation.solve``, the
untainted mass still exhausted at the width is credited with the whole reward at no cost
(valid because every allocation's value falls by at most ``lam + mu`` per unit of untainted
mass added, and its cost does not fall when budgets rise).

Two ways of choosing the multipliers are tried. Column generation: a restricted master linear
programme (scipy's HiGHS) over per-node mixtures of the allocations found so far, with equal
chances of each budget at each step in every node and mean success >= GOAL, whose equality
duals are ``psi`` and success dual ``mu`` (its duals are extreme points that make D collapse;
shown for a few rounds). Projected supergradient ascent (:func:`ascend`) on ``psi`` constant
on a few groups of budgets, which is what gives the bound here. Every ``D`` is valid. Last,
the master over the allocations the ascent priced gives an upper bound on the dual (the dual
is that programme over every allocation): between the two lies the dual's value.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time

import numpy as np
from numba import njit, prange
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from allocation_coupling import GOAL, the_case
from relsim.plan._relax import Relaxation

FLOOR = 1e-8  # the least positive mass on the grid (below it: a chord to M = 0)


# ------------------------------------------------------------------------------ the grid
@njit(cache=True, inline="always")
def _read(values, zero, masses, log_ratio, lo, hi, shares, m_new, u_new):
    """A lower bound on the concave ``V`` at ``(m_new, u_new)`` from its grid values
    ``values`` (points x shares), ``zero`` (at M = 0): a convex combination of grid points."""
    points = masses.size
    if m_new <= 0.0:
        return zero
    span = hi - lo
    if span > 0.0:
        pos = (u_new / m_new - lo) / span * (shares - 1)
        if pos < 0.0:
            pos = 0.0
        elif pos > shares - 1:
            pos = shares - 1.0
    else:
        pos = 0.0
    r = min(int(pos), shares - 2)
    f = pos - r
    last = masses[points - 1]
    if m_new < last:  # a chord to the point M = 0
        t = m_new / last
        edge = (1.0 - f) * values[points - 1, r] + f * values[points - 1, r + 1]
        return t * edge + (1.0 - t) * zero
    m = min(int(math.log(m_new) / log_ratio), points - 2)
    if m < 0:
        m = 0
    t = (m_new - masses[m + 1]) / (masses[m] - masses[m + 1])  # weight of the larger mass
    upper = (1.0 - f) * values[m, r] + f * values[m, r + 1]
    lower = (1.0 - f) * values[m + 1, r] + f * values[m + 1, r + 1]
    return t * upper + (1.0 - t) * lower


@njit(cache=True, parallel=True)
def _price(passed, correct, spent, weights, reward, psi, masses, lo, hi, shares, credit,
           allowed, top, out_value, out_alloc):
    """Every node's least ``w (cost - reward * success) + sum_i psi[z, i, b_i]``.

    passed, correct, spent: (n, B, z) (spent = unit * attempts); psi: (z, n, B); lo, hi:
    (n + 1, z); allowed: (n, B) bool (the options a node may take); top: (n,) the option that
    stands for every budget from it up (credited when ``credit``). ``out_value[z]`` gets the
    grid's value at (1, 1) (a lower bound), ``out_alloc[z]`` the allocation read off it by a
    forward pass (no credit: a real allocation)."""
    n, width1, nodes = passed.shape
    points = masses.size
    log_ratio = math.log(masses[1]) if points > 1 else -1.0
    for z in prange(nodes):
        w = weights[z]
        values = np.empty((n + 1, points, shares))
        zero = np.empty(n + 1)
        for m in range(points):
            for r in range(shares):
                rho = lo[n, z] + (hi[n, z] - lo[n, z]) * r / (shares - 1)
                values[n, m, r] = -w * reward * rho * masses[m]
        zero[n] = 0.0
        for i in range(n - 1, -1, -1):
            best0 = np.inf
            for k in range(width1):
                if allowed[i, k] and psi[z, i, k] < best0:
                    best0 = psi[z, i, k]
            zero[i] = best0 + zero[i + 1]
            for m in range(points):
                mass = masses[m]
                for r in range(shares):
                    rho = lo[i, z] + (hi[i, z] - lo[i, z]) * r / (shares - 1)
                    clean = rho * mass
                    best = np.inf
                    for k in range(width1):
                        if not allowed[i, k]:
                            continue
                        v = w * spent[i, k, z] * mass + psi[z, i, k]
                        if credit and k == top[i]:
                            v -= w * reward * clean * max(0.0, 1.0 - passed[i, k, z])
                        v += _read(values[i + 1], zero[i + 1], masses, log_ratio, lo[i + 1, z],
                                   hi[i + 1, z], shares, mass * passed[i, k, z],
                                   clean * correct[i, k, z])
                        if v < best:
                            best = v
                    values[i, m, r] = best
        out_value[z] = values[0, 0, 0]  # M = 1, U = 1 (lo = hi = 1 at step 0)
        mass, clean = 1.0, 1.0
        for i in range(n):
            best = np.inf
            pick = 0
            for k in range(width1):
                if not allowed[i, k]:
                    continue
                v = w * spent[i, k, z] * mass + psi[z, i, k]
                v += _read(values[i + 1], zero[i + 1], masses, log_ratio, lo[i + 1, z],
                           hi[i + 1, z], shares, mass * passed[i, k, z], clean * correct[i, k, z])
                if v < best:
                    best = v
                    pick = k
            out_alloc[z, i] = pick
            mass *= passed[i, pick, z]
            clean *= correct[i, pick, z]


class Pricing:
    """The per-node dynamic programme on a grid of ``points`` masses and ``shares`` shares.

    Budgets past convergence nearly tie (the answer holds 41 where 18 leaves under 1e-9
    exhausted), which leaves the multipliers free to play one against the other; so at each
    step the budgets from ``top[i]`` up are one option, the least budget whose mass still
    exhausted, summed over the nodes by weight, is at most ``merge``. The option is priced as
    budget ``top[i]`` with the mass still exhausted there credited with the whole reward (as
    the table's width is), which keeps every value a lower bound over all budgets and costs
    at most ``reward * sum_i exhausted_i`` (printed by the script)."""

    def __init__(self, tables, points: int, shares: int, merge: float = 1e-9) -> None:
        relaxation = Relaxation(tables)
        self.tables = tables
        self.passed = np.ascontiguousarray(tables.passed[..., 0, 0])
        self.correct = np.ascontiguousarray(tables.correct[..., 0, 0])
        self.spent = np.ascontiguousarray(tables.unit[:, None, None] * tables.attempts[..., 0])
        self.weights = tables.weights
        self.lo = np.ascontiguousarray(relaxation.lo[..., 0])
        self.hi = np.ascontiguousarray(relaxation.hi[..., 0])
        self.masses = FLOOR ** (np.arange(points) / (points - 1))
        self.shares = shares
        self.points = points
        exhausted = (1.0 - self.passed) @ self.weights  # (n, B)
        below = exhausted <= merge
        self.top = np.where(below.any(axis=1), np.argmax(below, axis=1), tables.width)
        if not tables.unbounded:  # the width is a real budget: only merge where it was asked
            self.top = np.where(below.any(axis=1), self.top, tables.width)
        self.allowed = np.arange(tables.width + 1)[None, :] <= self.top[:, None]
        self.slack = float(exhausted[np.arange(tables.steps), self.top].sum())

    def clip(self, designs: np.ndarray) -> np.ndarray:
        """Allocations with each budget above ``top`` lowered to it (the option it is in)."""
        return np.minimum(designs, self.top)

    def __call__(self, reward: float, psi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.run(reward, psi, self.allowed, self.top, True)

    def run(self, reward, psi, allowed, top, credit) -> tuple[np.ndarray, np.ndarray]:
        n, width1, nodes = self.passed.shape
        value = np.empty(nodes)
        alloc = np.empty((nodes, n), dtype=np.int64)
        _price(self.passed, self.correct, self.spent, self.weights, float(reward),
               np.ascontiguousarray(psi, dtype=float), self.masses, self.lo, self.hi,
               self.shares, credit, allowed, np.asarray(top, dtype=np.int64), value, alloc)
        return value, alloc

    def single(self, reward: float, psi: np.ndarray, design: np.ndarray) -> np.ndarray:
        """The grid's value of one allocation per node (no credit): must equal its exact
        value (each allocation's value is affine in (M, U), which the reads reproduce)."""
        n, width1, _ = self.passed.shape
        allowed = np.zeros((n, width1), dtype=np.bool_)
        allowed[np.arange(n), design] = True
        return self.run(reward, psi, allowed, design, False)[0]


def node_outcomes(tables, designs):
    """Expected cost and success of allocations ``designs`` (m, n), per node: (m, z) each."""
    designs = np.atleast_2d(np.asarray(designs))
    m, z = designs.shape[0], tables.weights.size
    every, clean, cost = np.ones((m, z)), np.ones((m, z)), np.zeros((m, z))
    for i in range(tables.steps):
        b = designs[:, i]
        cost += every * tables.unit[i] * tables.attempts[i, b, :, 0]
        every = every * tables.passed[i, b, :, 0, 0]
        clean = clean * tables.correct[i, b, :, 0, 0]
    return cost, clean


# --------------------------------------------------------------------- column generation
class Master:
    """The restricted master: per-node mixtures of ``pool`` with equal marginals (a common
    chance ``y[i, k]`` of budget ``k`` at step ``i`` in every node) and mean success >= GOAL,
    least mean ``cost - lam * success``. Its duals give ``psi`` (z, n, B) and ``mu``.

    With a ``center`` and ``delta`` the marginals may differ at a price of ``delta`` per unit
    around the center's, which keeps the duals in the box ``|psi - center| <= delta`` (a
    box-step stabilisation: the bare master's duals are extreme points that swing wildly)."""

    def __init__(self, tables, lam: float, reference: np.ndarray) -> None:
        self.tables = tables
        self.lam = lam
        self.reference = reference  # consistency rows hold differences from it (fewer entries)
        self.pool = np.zeros((0, tables.steps), dtype=np.int64)
        self.cost = np.zeros((0, tables.weights.size))
        self.success = np.zeros((0, tables.weights.size))

    def add(self, designs: np.ndarray) -> int:
        """Add the allocations not in the pool yet; how many were new."""
        designs = np.unique(np.atleast_2d(designs), axis=0)
        known = {row.tobytes() for row in self.pool}
        designs = np.array([d for d in designs if d.tobytes() not in known], dtype=np.int64)
        designs = designs.reshape(-1, self.tables.steps)
        if len(designs):
            cost, success = node_outcomes(self.tables, designs)
            self.pool = np.concatenate([self.pool, designs])
            self.cost = np.concatenate([self.cost, cost])
            self.success = np.concatenate([self.success, success])
        return len(designs)

    def solve(self, center: np.ndarray | None = None, delta: float = math.inf, method: str = "highs"):
        """The master's value, psi (z, n, B), mu, and the mixture x (z, m)."""
        t = self.tables
        w, n, width1 = t.weights, t.steps, t.width + 1
        z, m = w.size, len(self.pool)
        present = np.zeros((n, width1), dtype=bool)
        present[np.arange(n)[None, :], self.pool] = True
        present[np.arange(n), self.reference] = True
        p = int(present.sum())
        pair = np.full((n, width1), -1, dtype=np.int64)
        pair[present] = np.arange(p)
        # row (z, q): sum_j x[z, j] ([b_j at step i is k] - [reference's is k]) - y[q]
        #           = -[reference's is k]   (the marginal, less the convexity row's multiple)
        differ = self.pool != self.reference[None]  # (m, n)
        j_idx, i_idx = np.nonzero(differ)
        q_new = pair[i_idx, self.pool[j_idx, i_idx]]
        q_ref = pair[i_idx, self.reference[i_idx]]
        node = np.arange(z)
        e = j_idx.size
        rows = [np.repeat(node, m),
                (z + node[:, None] * p + q_new[None]).reshape(-1),
                (z + node[:, None] * p + q_ref[None]).reshape(-1),
                (z + node[:, None] * p + np.arange(p)[None]).reshape(-1)]
        cols = [np.arange(z * m),
                (node[:, None] * m + j_idx[None]).reshape(-1),
                (node[:, None] * m + j_idx[None]).reshape(-1),
                np.tile(z * m + np.arange(p), z)]
        vals = [np.ones(z * m), np.ones(z * e), -np.ones(z * e), -np.ones(z * p)]
        ncol = z * m + p
        objective = [(w * (self.cost - self.lam * self.success)).T.reshape(-1), np.zeros(p)]
        bounds = [(0, None)] * (z * m) + [(None, None)] * p
        if np.isfinite(delta):
            c = np.zeros((z, p)) if center is None else center[:, present]
            slack = z + np.arange(z * p)
            rows += [slack, slack]
            cols += [ncol + np.arange(z * p), ncol + z * p + np.arange(z * p)]
            vals += [np.ones(z * p), -np.ones(z * p)]
            # phi = -psi is the row's dual; s+ caps phi at its cost, s- caps -phi at its own
            objective += [(delta + c).reshape(-1), (delta - c).reshape(-1)]
            bounds += [(0, None)] * (2 * z * p)
            ncol += 2 * z * p
        a_eq = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(z + z * p, ncol)).tocsr()
        ref_row = np.zeros((n, width1))
        ref_row[np.arange(n), self.reference] = 1.0
        b_eq = np.concatenate([np.ones(z), np.tile(-ref_row[present], z)])
        a_ub = np.zeros((1, ncol))
        a_ub[0, : z * m] = -(w * self.success).T.reshape(-1)
        result = linprog(np.concatenate(objective), A_ub=a_ub, b_ub=[-GOAL * (1 - 1e-7)],
                         A_eq=a_eq, b_eq=b_eq, bounds=bounds, method=method)
        if result.status != 0:
            raise RuntimeError(result.message)
        psi = np.zeros((z, n, width1))
        psi[:, present] = -result.eqlin.marginals[z:].reshape(z, p)
        mu = -float(result.ineqlin.marginals[0])
        x = result.x[: z * m].reshape(z, m)
        value = float(np.sum(x.T * w * (self.cost - self.lam * self.success)))
        return value, psi, mu, x


def certify(tables, pricing, lam, answer, rounds, delta=0.02, pool=None, seconds=math.inf,
            log=print):
    """Column generation with a box step at ``lam``: the best D found (a valid bound on the
    least mean ``cost - lam * success`` at success >= GOAL), the master's last value (with
    the box: not a bound), and the history (round, D, best, seconds)."""
    reference = pricing.clip(answer)
    master = Master(tables, lam, reference)
    master.add(reference[None] if pool is None else pricing.clip(pool))
    n, width1, z = tables.steps, tables.width + 1, tables.weights.size
    center, center_mu = np.zeros((z, n, width1)), 0.0
    begin = time.perf_counter()
    value, alloc = pricing(lam, center)
    best = float(value.sum())
    master.add(alloc)
    history = [(0, best, best, time.perf_counter() - begin)]
    log(f"  round 0: D = {best:.4f} (psi = 0, mu = 0), pool {len(master.pool)}")
    for round_ in range(1, rounds + 1):
        start = time.perf_counter()
        upper, psi, mu, _ = master.solve(center, delta)
        lp_time = time.perf_counter() - start
        start = time.perf_counter()
        value, alloc = pricing(lam + mu, psi)
        price_time = time.perf_counter() - start
        d = mu * GOAL + float(value.sum())
        new = master.add(alloc)
        serious = d > best + 1e-6
        if serious:
            best, center, center_mu = d, psi, mu
            delta *= 1.5
        elif not new:  # the box's optimum is priced out: nothing more inside the box
            delta *= 2.0
        history.append((round_, d, best, time.perf_counter() - begin))
        log(f"  round {round_}: D = {d:.4f} (best {best:.4f}), master {upper:.4f}, mu {mu:.3f}, "
            f"pool {len(master.pool)} (+{new}), delta {delta:.3g}; LP {lp_time:.1f} s, "
            f"pricing {price_time:.1f} s")
        if time.perf_counter() - begin > seconds:
            break
    return best, history, master, (center, center_mu)


# ------------------------------------------------------------------- subgradient ascent
def ascend(tables, pricing, lam, cuts, iterations, target, beta=0.5, patience=20, tied=1e-9,
           psi=None, mu=0.0, momentum=0.0, log=print, every=25):
    """Projected supergradient ascent on D over ``psi`` constant on groups of budgets (budgets
    below ``cuts[0]``, from ``cuts[0]`` below ``cuts[1]``, ..., from ``cuts[-1]`` up; every
    budget its own group when ``cuts`` is ``range(1, width + 1)``) and ``mu``, with Polyak
    steps towards ``target`` (an upper bound on D: the answer's own value), ``beta`` halved
    after ``patience`` steps without a better D. A psi constant on groups is a psi, so every
    D is valid. Returns the best D, its (psi, mu), the history (iteration, D, seconds) and
    the group of each budget."""
    n, width1, z = tables.steps, tables.width + 1, tables.weights.size
    w = tables.weights
    group = np.searchsorted(np.asarray(cuts), np.arange(width1), side="right")
    groups = len(cuts) + 1
    grouped = np.zeros((z, n, groups)) if psi is None else psi
    nodes = np.arange(z)
    seen = []  # the allocations priced, (z, n) each

    def evaluate(grouped, mu):
        full = np.ascontiguousarray(grouped[:, :, group])
        value, alloc = pricing(lam + mu, full)
        seen.append(alloc)
        _, success = node_outcomes(tables, alloc)
        g = np.zeros((z, n, groups))
        g[nodes[:, None], np.arange(n)[None], group[alloc]] = 1.0
        # a node whose mass has all but gone is indifferent to the budgets that follow (they
        # move its value by under ``tied``): any mixture of them is as good a minimiser, so
        # it takes the live nodes' mean (an epsilon-supergradient); left at its first
        # argmin, the next step pays it to dodge every penalty at no cost
        reached = np.ones((z, n))
        reached[:, 1:] = np.cumprod(pricing.passed[np.arange(n)[None], alloc, nodes[:, None]], axis=1)[:, :-1]
        gone = w[:, None] * reached * (lam + mu) < tied
        for i in np.nonzero(gone.any(axis=0) & ~gone.all(axis=0))[0]:
            g[gone[:, i], i] = g[~gone[:, i], i].mean(axis=0)
        g -= g.mean(axis=0, keepdims=True)  # keeps sum over nodes = 0
        return mu * GOAL + float(value.sum()), g, GOAL - float(w @ success[nodes, nodes])

    begin = time.perf_counter()
    d, g, g_mu = evaluate(grouped, mu)
    best, best_at = d, (grouped.copy(), mu)
    history = [(0, d, 0.0)]
    stall = 0
    direction, direction_mu = np.zeros_like(g), 0.0
    for it in range(1, iterations + 1):
        direction = g + momentum * direction
        direction_mu = g_mu + momentum * direction_mu
        norm = float(np.sum(direction * direction) + direction_mu**2)
        if norm == 0.0:
            break
        step = beta * (target - d) / norm
        grouped = grouped + step * direction
        mu = max(0.0, mu + step * direction_mu)
        d, g, g_mu = evaluate(grouped, mu)
        if d > best + 1e-6:
            best, best_at, stall = d, (grouped.copy(), mu), 0
        else:
            stall += 1
            if stall >= patience:
                beta, stall = beta / 2, 0
        history.append((it, d, time.perf_counter() - begin))
        if it % every == 0:
            log(f"    {it}: D = {d:.4f}, best {best:.4f}, mu {mu:.3f}, beta {beta:.3g}, "
                f"{time.perf_counter() - begin:.0f} s")
    return best, best_at, history, group, np.array(seen)


def coupled_upper(tables, lam, reference, columns, method="highs-ipm"):
    """The least mean ``cost - lam * success`` over per-node mixtures, node ``z`` of the
    allocations ``columns[z]`` (m_z, n) (and ``reference``), with equal chances of each budget
    at each step in every node and mean success >= GOAL: an upper bound on the dual (the
    dual is this programme over every allocation). Returns the value and each node's mean
    success, or None when infeasible."""
    w, n, width1 = tables.weights, tables.steps, tables.width + 1
    z = w.size
    sets = [np.unique(np.concatenate([reference[None], c]), axis=0) for c in columns]
    present = np.zeros((n, width1), dtype=bool)
    present[np.arange(n), reference] = True
    for c in sets:
        present[np.arange(n)[None, :], c] = True
    p = int(present.sum())
    pair = np.full((n, width1), -1, dtype=np.int64)
    pair[present] = np.arange(p)
    rows, cols, vals, objective, success_row = [], [], [], [], []
    first = 0
    for node, c in enumerate(sets):
        m = len(c)
        cost, success = node_outcomes(tables, c)
        objective.append(w[node] * (cost[:, node] - lam * success[:, node]))
        success_row.append(w[node] * success[:, node])
        rows.append(np.full(m, node))
        cols.append(first + np.arange(m))
        vals.append(np.ones(m))
        j, i = np.nonzero(c != reference[None])
        base = z + node * p
        rows += [base + pair[i, c[j, i]], base + pair[i, reference[i]]]
        cols += [first + j, first + j]
        vals += [np.ones(j.size), -np.ones(j.size)]
        first += m
    node = np.arange(z)
    rows.append((z + node[:, None] * p + np.arange(p)[None]).reshape(-1))
    cols.append(np.tile(first + np.arange(p), z))
    vals.append(-np.ones(z * p))
    ncol = first + p
    a_eq = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(z + z * p, ncol)).tocsr()
    ref_row = np.zeros((n, width1))
    ref_row[np.arange(n), reference] = 1.0
    b_eq = np.concatenate([np.ones(z), np.tile(-ref_row[present], z)])
    a_ub = np.zeros((1, ncol))
    a_ub[0, :first] = -np.concatenate(success_row)
    result = linprog(np.concatenate(objective + [np.zeros(p)]), A_ub=a_ub, b_ub=[-GOAL * (1 - 1e-7)],
                     A_eq=a_eq, b_eq=b_eq, bounds=[(0, None)] * first + [(None, None)] * p,
                     method=method)
    if result.status != 0:
        return None
    x = result.x[:first]
    spread = np.cumsum([0] + [len(c) for c in sets])
    share = np.array([x[spread[k]:spread[k + 1]] @ success_row[k] / w[k] for k in range(z)])
    return float(result.fun), share


# -------------------------------------------------------------------------------- report
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, default=60, help="masses on the grid")
    parser.add_argument("--shares", type=int, default=4, help="shares on the grid")
    parser.add_argument("--merge", type=float, default=1e-9, help="exhausted mass merged at the top")
    parser.add_argument("--rounds", type=int, default=3, help="column generation rounds")
    parser.add_argument("--iterations", type=int, default=800, help="subgradient steps")
    parser.add_argument("--cuts", default="1,2,3,4", help="budget groups of psi ('all': one each)")
    parser.add_argument("--momentum", type=float, default=0.7, help="heavy-ball momentum")
    args = parser.parse_args()
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}")
    tables, answer, incumbent, _, _, lam, per_node = the_case()
    n, width1, z = tables.steps, tables.width + 1, tables.weights.size
    w = tables.weights

    # ---- the grid and its checks
    pricing = Pricing(tables, args.points, args.shares, args.merge)
    zero = np.zeros((z, n, width1))
    pricing(lam, zero)  # compile
    start = time.perf_counter()
    value, alloc = pricing(lam, zero)
    seconds = time.perf_counter() - start
    clipped = pricing.clip(answer)
    node_cost, node_success = node_outcomes(tables, clipped)
    target = float(w @ (node_cost[0] - lam * node_success[0]))
    print(f"\ngrid: {args.points} masses from 1 to {FLOOR:g} (and 0) x {args.shares} shares; budgets "
          f"from top[i] up merged (mean top {pricing.top.mean():.1f} of {tables.width}; exhausted "
          f"mass there {pricing.slack:.2e}, at most {pricing.slack * lam:.2e} of D at this reward)")
    print(f"one pricing (36 nodes): {seconds:.2f} s")
    print(f"check psi = 0: D = {value.sum():.9f}, the per-node bound's value {per_node:.9f} "
          f"(difference {value.sum() - per_node:.2e})")
    rng = np.random.default_rng(0)
    psi = rng.normal(scale=0.05, size=(z, n, width1))
    designs = [clipped, np.maximum(clipped - 1, 0), np.zeros(n, dtype=np.int64),
               pricing.clip(rng.integers(0, width1, n))]
    worst = 0.0
    for design in designs:
        c, s = node_outcomes(tables, design)
        exact = w * (c[0] - lam * s[0]) + psi[:, np.arange(n), design].sum(axis=1)
        worst = max(worst, float(np.abs(pricing.single(lam, psi, design) - exact).max()))
    value, alloc = pricing(lam, psi)
    c, s = node_outcomes(tables, alloc)
    exact = w * (np.diag(c) - lam * np.diag(s)) + psi[np.arange(z)[:, None], np.arange(n)[None], alloc].sum(axis=1)
    print(f"check one allocation on the grid (random psi): largest |grid - exact| {worst:.1e}")
    print(f"check random psi: grid value <= exact value of the allocation read off it, at every "
          f"node: {bool(np.all(value <= exact + 1e-12))} (largest excess {float((exact - value).max()):.2e})")
    print(f"\nat lam = 0.99 x answer = {lam:.3f}: the answer's value {target:.4f} (an upper bound on "
          f"D), the per-node bound {per_node:.4f}; lam is certified iff D >= 0")

    # ---- column generation with the master's own duals
    print(f"\ncolumn generation, the restricted master's duals as they come ({args.rounds} rounds):")
    certify(tables, pricing, lam, answer, args.rounds, delta=math.inf, log=print)

    # ---- projected supergradient on grouped psi
    cuts = list(range(1, width1)) if args.cuts == "all" else [int(x) for x in args.cuts.split(",")]
    print(f"\nsupergradient ascent, psi constant on budgets grouped at {cuts}, {args.iterations} steps:")
    best, (grouped, mu), history, group, seen = ascend(tables, pricing, lam, cuts, args.iterations,
                                                       target, momentum=args.momentum, log=print,
                                                       every=100)
    seconds = history[-1][2]
    print(f"  best D = {best:.4f} ({seconds:.0f} s, {seconds / max(1, len(history) - 1):.2f} s a step); "
          f"certified lam = lam + D / GOAL = {lam + best / GOAL:.3f} = "
          f"{(lam + best / GOAL) / incumbent:.4f} x answer ({1 - (lam + best / GOAL) / incumbent:.2%} off)")
    full = np.ascontiguousarray(grouped[:, :, group])
    for points, shares in ((2 * args.points, args.shares), (4 * args.points, args.shares),
                           (args.points, 2 * args.shares)):
        finer = Pricing(tables, points, shares, args.merge)
        value, _ = finer(lam + mu, full)
        d = mu * GOAL + value.sum()
        print(f"  the same psi, mu on a grid of {points} x {shares}: D = {d:.4f}, certifying "
              f"{(lam + min(d, 0.0) / GOAL) / incumbent:.4f} x answer")

    # ---- an upper bound on the dual from the allocations the ascent priced
    print("\nthe dual is at most the least value of per-node mixtures with equal marginals:")
    for label, columns in (
        ("each node its own priced allocations, last 100 steps",
         [seen[-100:, node] for node in range(z)]),
        ("every node every allocation priced in the last 5 steps",
         [np.unique(seen[-5:].reshape(-1, n), axis=0)] * z),
    ):
        start = time.perf_counter()
        out = coupled_upper(tables, lam, clipped, columns)
        size = sum(len(np.unique(c, axis=0)) for c in columns)
        shown = "infeasible" if out is None else f"{out[0]:.4f}"
        print(f"  {label} ({size} node columns): {shown} ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
