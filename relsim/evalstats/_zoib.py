r"""The zero-one-inflated beta-binomial: its likelihood and a batched maximum-likelihood fit.

Private to :mod:`relsim.evalstats.difficulty`. A task with :math:`n` trials and :math:`c`
successes has the probability

.. math::

    P(c \mid n) = w_1 [c = n] + w_0 [c = 0]
        + w_b \binom{n}{c} \frac{B(\alpha + c, \beta + n - c)}{B(\alpha, \beta)},
    \qquad w_1 + w_0 + w_b = 1

(a task always passes, never passes, or has a per-trial success :math:`p \sim
\mathrm{Beta}(\alpha, \beta)`). The Beta is searched in the stable coordinates
:math:`u = \operatorname{logit}\mu`, :math:`v = \log s` (mean :math:`\mu = \alpha/(\alpha +
\beta)`, precision :math:`s = \alpha + \beta`) inside :data:`U_RANGE` x :data:`V_RANGE`; for
each Beta the weights that maximise the likelihood are found exactly (in closed form when
every task has the same number of trials, by a safeguarded Newton iteration otherwise), so the
search is over two coordinates only: a grid, then a pattern search from each replicate's best
point on it.
Every array is batched over replicates (the data, or bootstrap resamples of its tasks), so the
bootstrap of :func:`relsim.evalstats.difficulty.fit_difficulty` is a few array operations.

A *model* is a subset of the components: the weights outside it are 0 and its free
parameters number (components - 1) + 2 with the Beta. :func:`allowed` keeps the models the
data can identify and :func:`fit` returns, for each replicate, the most likely of them (the one
with fewer parameters when two are equally likely to :data:`TIE`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["MODELS", "Cells", "Fitted", "allowed", "fit", "parameters"]

#: The models, as (always, never, beta) flags, in the order ties are broken among models with
#: as many parameters.
MODELS = (
    (True, False, False),
    (False, True, False),
    (True, True, False),
    (False, False, True),
    (True, False, True),
    (False, True, True),
    (True, True, True),
)
#: The search box of the Beta: logit of its mean, log of its precision alpha + beta. Beyond
#: them the Beta is a point mass (s large: every such task has the same p) or two point masses
#: at 0 and 1 (s small), which the model's own point masses already are.
U_RANGE = (-10.0, 10.0)
V_RANGE = (math.log(0.05), math.log(5000.0))
#: Two models this close in log-likelihood are equally likely: the one with fewer parameters
#: is kept (a weight at its bound of 0 is a smaller model).
TIE = 1e-6
#: The coarse grid's spacing in (u, v), the pattern search's stencil and its rounds.
_STEP = 0.5
_OFFSETS = np.array([(a, b) for a in range(-2, 3) for b in range(-2, 3)], dtype=float)
_ROUNDS = 20
_FINEST = 1e-7
_CENTRE = 12
#: The stencil's spacing in a coordinate is multiplied by these when the best point is 0, 1
#: or 2 steps from the centre in that coordinate.
_RESCALE = np.array([1 / 3, 1.0, 2.0])
_ROUNDING = 1e-10
#: Newton steps for the weights on the coarse grid (unequal trial counts).
_COARSE_STEPS = 3
#: Up to this many trials a task, log-probabilities are sums of logs (faster than betaln).
_MOST_SUMMED = 256


def parameters(model: tuple[bool, bool, bool]) -> int:
    """The number of free parameters of a model: its weights less one, and the Beta's two."""
    always, never, beta = model
    return always + never + beta - 1 + 2 * beta


@dataclass(frozen=True)
class Cells:
    """The distinct (trials, successes) pairs of a harness, and which task is which pair."""

    n: np.ndarray  # (J,) trials of each cell
    c: np.ndarray  # (J,) successes of each cell
    task_cell: np.ndarray  # (T,) the cell of each task
    log_choose: np.ndarray  # (J,) log C(n, c)

    @classmethod
    def of(cls, n: np.ndarray, c: np.ndarray) -> "Cells":
        from scipy.special import gammaln

        pairs, task_cell = np.unique(np.stack([n, c], axis=1), axis=0, return_inverse=True)
        cell_n, cell_c = pairs[:, 0].astype(float), pairs[:, 1].astype(float)
        log_choose = gammaln(cell_n + 1) - gammaln(cell_c + 1) - gammaln(cell_n - cell_c + 1)
        return cls(cell_n, cell_c, task_cell.ravel(), log_choose)

    @property
    def zero(self) -> np.ndarray:
        return self.c == 0

    @property
    def top(self) -> np.ndarray:
        return self.c == self.n

    @property
    def interior(self) -> np.ndarray:
        return (self.c > 0) & (self.c < self.n)

    @property
    def equal(self) -> bool:
        """Every task has the same number of trials (the weights have a closed form)."""
        return bool(np.all(self.n == self.n[0]))

    def counts(self, tasks: np.ndarray | None = None) -> np.ndarray:
        """The tasks per cell, ``(1, J)`` for the data or ``(R, J)`` for rows of task indices
        ``tasks`` ``(R, T)`` (a bootstrap resample per row)."""
        cells = len(self.n)
        if tasks is None:
            return np.bincount(self.task_cell, minlength=cells)[None, :].astype(float)
        drawn = self.task_cell[tasks]
        rows = drawn.shape[0]
        flat = (drawn + cells * np.arange(rows)[:, None]).ravel()
        return np.bincount(flat, minlength=rows * cells).reshape(rows, cells).astype(float)


@dataclass(frozen=True)
class Fitted:
    """The fit of each replicate: ``(R,)`` arrays (alpha and beta NaN without the Beta)."""

    always: np.ndarray
    never: np.ndarray
    beta_weight: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    loglik: np.ndarray
    model: np.ndarray  # index into MODELS


def _beta_terms(u: np.ndarray, v: np.ndarray, most: int) -> tuple[np.ndarray, ...]:
    r"""Cumulative sums :math:`\sum_{i<c} \log(x + i)` for c = 0..most and x = alpha, beta,
    alpha + beta of the Beta at (u, v): each ``u.shape + (most + 1,)``.

    :math:`B(\alpha + c, \beta + n - c) / B(\alpha, \beta) = \prod_{i<c} (\alpha + i)
    \prod_{i<n-c} (\beta + i) / \prod_{i<n} (\alpha + \beta + i)` for integer counts, so a
    cell's log-probability is three look-ups in these sums.
    """
    from scipy.special import expit

    mean, size = expit(u), np.exp(v)
    starts = np.stack([mean * size, (1.0 - mean) * size, size])[..., None]
    out = np.zeros(starts.shape[:-1] + (most + 1,))
    np.cumsum(np.log(starts + np.arange(most, dtype=float)), axis=-1, out=out[..., 1:])
    return out[0], out[1], out[2]


def log_beta_binomial(
    cells: Cells, u: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log P(c | n) under the Beta of (u, v) for every cell (shape ``u.shape + (J,)``), and
    log P(c = 0 | n) and log P(c = n | n) for the first cell's n (``u.shape``)."""
    n, c = cells.n.astype(int), cells.c.astype(int)
    first = int(n[0])
    if n.max() > _MOST_SUMMED:
        from scipy.special import betaln, expit

        mean, size = expit(u), np.exp(v)
        alpha, beta = mean * size, (1.0 - mean) * size
        whole = betaln(alpha, beta)
        cell = (cells.log_choose + betaln(alpha[..., None] + cells.c, beta[..., None] + cells.n
                                          - cells.c) - whole[..., None])
        return cell, betaln(alpha, beta + first) - whole, betaln(alpha + first, beta) - whole
    alpha, beta, both = _beta_terms(u, v, int(n.max()))
    cell = cells.log_choose + alpha[..., c] + beta[..., n - c] - both[..., n]
    return cell, beta[..., first] - both[..., first], alpha[..., first] - both[..., first]


def allowed(cells: Cells, counts: np.ndarray) -> np.ndarray:
    """``(R, len(MODELS))``: which models each replicate's data identify.

    A point mass at 1 needs a task that passed every trial, one at 0 a task that failed every
    trial; the Beta is in the model exactly when some task both passed and failed (without one
    it is not identified: every task is all-or-nothing); and a model has at most as many free
    parameters as the most trials of a task (trials of ``n`` see ``n`` moments of the
    per-trial success, so a fifth parameter at 3 trials would lie on a ridge of equally likely
    fits).
    """
    present = counts > 0
    top = (present & cells.top).any(axis=1)
    zero = (present & cells.zero).any(axis=1)
    inner = (present & cells.interior).any(axis=1)
    most = np.max(np.where(present, cells.n, 0), axis=1)
    out = np.zeros((counts.shape[0], len(MODELS)), dtype=bool)
    for index, model in enumerate(MODELS):
        always, never, beta = model
        ok = (beta == inner) & (top | ~np.bool_(always)) & (zero | ~np.bool_(never))
        if not beta:  # without the Beta every task is all-or-nothing: both masses as seen
            ok &= (top == always) & (zero == never)
        out[:, index] = ok & (parameters(model) <= most)
    return out


# ------------------------------------------------------------------------ profile likelihood
def _profile_equal(
    cells: Cells, counts: np.ndarray, log_b: np.ndarray, log_b0: np.ndarray,
    log_bn: np.ndarray, model: tuple[bool, bool, bool],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The log-likelihood maximised over the weights, every task having ``n`` trials.

    ``counts`` ``(R, 1, J)``; ``log_b`` ``(R or 1, K, J)``; ``log_b0``, ``log_bn`` ``(R or 1,
    K)``. Setting the derivatives of the log-likelihood in the free weights to zero (the
    Lagrange multiplier of a mixture's weights is the number of tasks T) gives, with
    :math:`m_0, m_n, M` the tasks at 0, at n and between: :math:`w_b = (T - m_n) / (T (1 -
    b_n))` with a mass at 1 only, symmetrically with a mass at 0 only, and :math:`w_b = M / (T
    (1 - b_0 - b_n))`, :math:`w_0 = m_0/T - w_b b_0`, :math:`w_1 = m_n/T - w_b b_n` with both.
    A weight outside [0, 1] means the optimum is on a smaller model: -inf here.
    """
    always, never, _ = model
    total = counts.sum(axis=-1)
    m0 = (counts * cells.zero).sum(axis=-1)
    mn = (counts * cells.top).sum(axis=-1)
    inner_counts = np.where(cells.interior, counts, 0.0)[:, 0, :]  # (R, J)
    if log_b.shape[0] == 1:  # one grid for every replicate: a matrix product
        interior = inner_counts @ log_b[0].T
    else:
        interior = np.einsum("rj,rkj->rk", inner_counts, log_b)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # at the optimum each mass's cell has exactly its share of the tasks: m/T
        top_term = mn * np.log(mn / total) if always else mn * log_bn
        zero_term = m0 * np.log(m0 / total) if never else m0 * log_b0
        if always and never:
            b0, bn = np.exp(log_b0), np.exp(log_bn)
            inner = total - m0 - mn
            weight = inner / (total * (1.0 - b0 - bn))
            w0 = m0 / total - weight * b0
            w1 = mn / total - weight * bn
            value = inner * np.log(weight) + interior + top_term + zero_term
            value[~((w0 >= 0) & (w1 >= 0) & (weight > 0))] = -np.inf
        elif always or never:
            rest = total - (mn if always else m0)
            weight = rest / (total * -np.expm1(log_bn if always else log_b0))
            value = rest * np.log(weight) + interior + top_term + zero_term
            value[~(weight <= 1.0)] = -np.inf
            w1, w0 = (1.0 - weight, 0.0) if always else (0.0, 1.0 - weight)
        else:
            value, w1, w0 = interior + top_term + zero_term, 0.0, 0.0
    value[~np.isfinite(value)] = -np.inf
    return value, w1, w0


def _newton_start(cells, counts, b, model, shape):
    """Where Newton's method starts: the closed form of :func:`_profile_equal` with each
    mass's Beta probability averaged over its tasks (exact when the trial counts are equal),
    moved inside the feasible region."""
    always, never, _ = model
    total = counts.sum(-1)
    m0, mn = (counts * cells.zero).sum(-1), (counts * cells.top).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        b0 = np.nan_to_num((counts * cells.zero * b).sum(-1) / m0)
        bn = np.nan_to_num((counts * cells.top * b).sum(-1) / mn)
        if always and never:
            weight = (total - m0 - mn) / (total * (1.0 - b0 - bn))
            w1, w0 = mn / total - weight * bn, m0 / total - weight * b0
        elif always:
            w1 = 1.0 - (total - mn) / (total * (1.0 - bn))
            w0 = 0.0
        else:
            w0 = 1.0 - (total - m0) / (total * (1.0 - b0))
            w1 = 0.0
    # inside: at least a thousandth of each mass's share, and room left for the Beta
    w1 = np.clip(np.nan_to_num(np.broadcast_to(w1, shape)), 1e-3 * mn / total, 0.98 * mn / total)
    w0 = np.clip(np.nan_to_num(np.broadcast_to(w0, shape)), 1e-3 * m0 / total, 0.98 * m0 / total)
    zeros = np.zeros(shape)
    return (w1 if always else zeros), (w0 if never else zeros)


def _profile_newton(
    cells: Cells, counts: np.ndarray, log_b: np.ndarray, model: tuple[bool, bool, bool],
    steps: int = 30, start: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """As :func:`_profile_equal` for any trial counts: the weights by Newton's method.

    The log-likelihood is concave in the weights (a sum of logs of linear functions), so a
    Newton iteration that keeps the weights feasible and halves any step that does not raise
    the log-likelihood climbs to the one maximum; a maximum on a bound (a weight of 0) is
    approached geometrically, and the smaller model ties with it.
    """
    always, never, _ = model
    b = np.exp(log_b)
    shape = np.broadcast_shapes(counts.shape, b.shape)[:-1]
    observed = counts > 0
    zeros = np.zeros(shape)
    if not (always or never):
        value = np.where(observed, counts * log_b, 0.0).sum(axis=-1)
        return np.broadcast_to(value, shape), zeros, zeros
    # the free weights' directions: dP/dw1 = [c = n] - b, dP/dw0 = [c = 0] - b
    d1 = cells.top - b if always else None
    d0 = cells.zero - b if never else None
    if start is None:
        w1, w0 = _newton_start(cells, counts, b, model, shape)
    else:  # the weights at a point near these: inside the region, a little off its bounds
        w1, w0 = (np.broadcast_to(np.clip(w, 1e-12, 0.999)[:, None], shape).copy()
                  for w in start)
        w1, w0 = (w1 if always else zeros), (w0 if never else zeros)
        scale = np.minimum(1.0, 0.999 / (w1 + w0))
        w1, w0 = w1 * scale, w0 * scale

    def probability(a1, a0):
        out = b
        if always:
            out = out + a1[..., None] * d1
        if never:
            out = out + a0[..., None] * d0
        return out

    def value_at(a1, a0):
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(observed, counts * np.log(probability(a1, a0)), 0.0).sum(axis=-1)
        return np.where(np.isfinite(out), out, -np.inf)

    current = value_at(w1, w0)
    for _ in range(steps):
        scaled = np.where(observed, counts / probability(w1, w0), 0.0)
        curvature = scaled / probability(w1, w0)
        if always and never:
            g1, g0 = (scaled * d1).sum(-1), (scaled * d0).sum(-1)
            h11, h00 = -(curvature * d1 * d1).sum(-1), -(curvature * d0 * d0).sum(-1)
            h10 = -(curvature * d1 * d0).sum(-1)
            det = h11 * h00 - h10 * h10
            with np.errstate(divide="ignore", invalid="ignore"):
                s1 = -(h00 * g1 - h10 * g0) / det
                s0 = -(h11 * g0 - h10 * g1) / det
        elif always:
            with np.errstate(divide="ignore", invalid="ignore"):
                s1 = (scaled * d1).sum(-1) / (curvature * d1 * d1).sum(-1)
            s0 = zeros
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                s0 = (scaled * d0).sum(-1) / (curvature * d0 * d0).sum(-1)
            s1 = zeros
        s1, s0 = np.nan_to_num(s1), np.nan_to_num(s0)
        before1, before0 = w1, w0
        # the largest step keeping both weights >= 0 and their sum <= 1, shortened a little
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.minimum(np.where(s1 < 0, -w1 / s1, np.inf), np.where(s0 < 0, -w0 / s0, np.inf))
            both = s1 + s0
            room = np.minimum(room, np.where(both > 0, (1.0 - w1 - w0) / both, np.inf))
        length = np.minimum(1.0, 0.99 * room)
        pending = np.ones(shape, dtype=bool)
        for _ in range(30):
            t1, t0 = w1 + length * s1, w0 + length * s0
            value = value_at(t1, t0)
            # at the maximum a step changes the log-likelihood by rounding only
            better = pending & (value >= current - _ROUNDING)
            w1, w0 = np.where(better, t1, w1), np.where(better, t0, w0)
            current = np.where(better, np.maximum(value, current), current)
            pending &= ~better
            if not pending.any():
                break
            length = length / 2.0
        if np.max(np.abs(w1 - before1) + np.abs(w0 - before0)) < 1e-12:
            break
    return current, w1, w0


def _profile(cells, counts, terms, model, newton, steps=30, start=None):
    """The profile log-likelihood and weights at the Beta points whose
    :func:`log_beta_binomial` are ``terms`` (``(R or 1, K)`` points); ``steps``: the most
    Newton steps (the coarse grid, which only ranks points, takes few)."""
    log_b, log_b0, log_bn = terms
    if newton:
        return _profile_newton(cells, counts[:, None, :], log_b, model, steps, start)
    return _profile_equal(cells, counts[:, None, :], log_b, log_b0, log_bn, model)


def _grid(cells: Cells):
    """The coarse grid's points ``(1, G)`` and their :func:`log_beta_binomial`."""
    u = np.arange(U_RANGE[0], U_RANGE[1] + 1e-9, _STEP)
    v = np.arange(V_RANGE[0], V_RANGE[1] + 1e-9, _STEP)
    uu, vv = np.meshgrid(u, v, indexing="ij")
    uu, vv = uu.ravel()[None, :], vv.ravel()[None, :]
    return uu, vv, log_beta_binomial(cells, uu, vv)


def _search(cells, counts, model, newton, grid):
    """The best Beta point of each replicate for one model: ``(value, u, v, w1, w0)``.

    The coarse grid's best point, then a pattern search on a 5 x 5 stencil whose spacing in
    each coordinate grows while the best point is on that coordinate's edge (the likelihood
    can rise slowly along a ridge, as the precision grows for tasks of one p) and shrinks when
    it is in the middle.
    """
    u, v, terms = grid
    value, _, _ = _profile(cells, counts, terms, model, newton, steps=_COARSE_STEPS)
    best = np.argmax(value, axis=1)
    rows = np.arange(counts.shape[0])
    bu, bv = np.broadcast_to(u, value.shape)[rows, best], np.broadcast_to(v, value.shape)[rows, best]
    step_u = np.full(len(rows), _STEP / 2)
    step_v = np.full(len(rows), _STEP / 2)
    start = None
    for _ in range(_ROUNDS):
        pu = np.clip(bu[:, None] + step_u[:, None] * _OFFSETS[:, 0], *U_RANGE)
        pv = np.clip(bv[:, None] + step_v[:, None] * _OFFSETS[:, 1], *V_RANGE)
        value, w1, w0 = _profile(cells, counts, log_beta_binomial(cells, pu, pv), model, newton,
                                 start=start)
        value = np.array(value, copy=True)  # writable
        # the centre wins ties, so a flat or clipped direction shrinks
        value[:, _CENTRE] += _ROUNDING
        best = np.argmax(value, axis=1)
        value[:, _CENTRE] -= _ROUNDING
        bu, bv = pu[rows, best], pv[rows, best]
        if newton:  # the next round's Newton steps start from the weights at the best point
            start = (_pick(w1, rows, best), _pick(w0, rows, best))
        step_u *= _RESCALE[np.abs(_OFFSETS[best, 0]).astype(int)]
        step_v *= _RESCALE[np.abs(_OFFSETS[best, 1]).astype(int)]
        if max(step_u.max(), step_v.max()) < _FINEST:
            break
    return value[rows, best], bu, bv, _pick(w1, rows, best), _pick(w0, rows, best)


def _pick(weight, rows, best):
    """The weight at each replicate's best point (a weight fixed at 0 is the float 0.0)."""
    if isinstance(weight, float):
        return np.full(len(rows), weight)
    return np.broadcast_to(weight, (len(rows), weight.shape[-1]))[rows, best]


def fit(cells: Cells, counts: np.ndarray, *, newton: bool | None = None) -> Fitted:
    """The maximum-likelihood fit of each replicate (row of ``counts``) over the models it
    identifies (:func:`allowed`), the fewer parameters winning a tie.

    ``newton``: weights by Newton's method (default: only when trial counts differ).
    """
    if counts.shape[0] > 1:  # resamples repeat one another: fit each distinct one once
        distinct, back = np.unique(counts, axis=0, return_inverse=True)
        if len(distinct) < counts.shape[0]:
            once = fit(cells, distinct, newton=newton)
            back = back.ravel()
            return Fitted(*(getattr(once, name)[back] for name in Fitted.__dataclass_fields__))
    from scipy.special import expit

    if newton is None:
        newton = not cells.equal
    rows = counts.shape[0]
    permitted = allowed(cells, counts)
    values = np.full((rows, len(MODELS)), -np.inf)
    found: dict[int, tuple[Any, ...]] = {}
    grid = None
    total = counts.sum(axis=1)
    m0 = (counts * cells.zero).sum(axis=1)
    mn = (counts * cells.top).sum(axis=1)
    for index, model in enumerate(MODELS):
        use = permitted[:, index]
        if not use.any():
            continue
        if not model[2]:  # all-or-nothing: each mass's share of the tasks
            w1, w0 = mn / total, m0 / total
            with np.errstate(divide="ignore", invalid="ignore"):
                value = (np.where(mn > 0, mn * np.log(w1), 0.0)
                         + np.where(m0 > 0, m0 * np.log(w0), 0.0))
            found[index] = (value, np.full(rows, np.nan), np.full(rows, np.nan), w1, w0)
        else:
            subset = np.flatnonzero(use)
            if grid is None:
                grid = _grid(cells)
            value, u, v, w1, w0 = _search(cells, counts[subset], model, newton, grid)
            full = [np.full(rows, np.nan) for _ in range(5)]
            for array, part in zip(full, (value, u, v, w1, w0)):
                array[subset] = part
            found[index] = tuple(full)
        values[:, index] = np.where(use, found[index][0], -np.inf)
    best = values.max(axis=1)
    # fewest parameters among the models within TIE of the best (MODELS' order among equals)
    sizes = np.array([parameters(model) for model in MODELS])
    score = np.where(permitted & (values >= best[:, None] - TIE), sizes, np.iinfo(np.int64).max)
    chosen = np.argmin(score, axis=1)
    out = {key: np.full(rows, np.nan) for key in ("always", "never", "u", "v", "loglik")}
    for index in np.unique(chosen):
        where = chosen == index
        value, u, v, w1, w0 = found[index]
        out["loglik"][where] = value[where]
        out["u"][where], out["v"][where] = u[where], v[where]
        out["always"][where] = w1[where] if MODELS[index][0] else 0.0
        out["never"][where] = w0[where] if MODELS[index][1] else 0.0
    has_beta = np.array([MODELS[i][2] for i in chosen])
    mean, size = expit(out["u"]), np.exp(out["v"])
    weight = np.where(has_beta, 1.0 - out["always"] - out["never"], 0.0)
    return Fitted(
        always=out["always"], never=out["never"], beta_weight=np.clip(weight, 0.0, 1.0),
        alpha=np.where(has_beta, mean * size, np.nan),
        beta=np.where(has_beta, (1.0 - mean) * size, np.nan),
        loglik=out["loglik"], model=chosen,
    )
