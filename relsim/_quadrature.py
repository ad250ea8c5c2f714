"""Adaptive Gauss-Kronrod quadrature against the standard normal density (the exact engine's
integral over the task effect).

Private to ``relsim.exact``. QUADPACK's 7-15 rule and error estimate, vectorised: every round
evaluates all unfinished panels in one call of the integrand.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

# Gauss-Kronrod 7-15 on [-1, 1] (QUADPACK qk15): the Kronrod nodes and weights, and the weights
# of the 7-point Gauss rule on the odd-indexed nodes.
_XGK = np.array([
    0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
    0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
    0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
    0.207784955007898467600689403773245, 0.0,
])  # fmt: skip
_WGK = np.array([
    0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
    0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
    0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
    0.204432940075298892414161999234649, 0.209482141084727828012999174891714,
])  # fmt: skip
_WG = np.array([
    0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
    0.381830050505118944950369775488975, 0.417959183673469387755102040816327,
])  # fmt: skip


GK_NODES = np.concatenate([-_XGK[:-1], [0.0], _XGK[:-1][::-1]])
GK_WEIGHTS = np.concatenate([_WGK, _WGK[:-1][::-1]])
G_WEIGHTS = np.zeros(15)
G_WEIGHTS[1:7:2] = _WG[:3]
G_WEIGHTS[7] = _WG[3]
G_WEIGHTS[8:] = G_WEIGHTS[:7][::-1]

#: Integration range for a standard normal effect; P(|Z| > 8.5) = 1.9e-17.
LIMIT = 8.5
_START_EDGES = np.array([-LIMIT, -5.0, -2.5, 0.0, 2.5, 5.0, LIMIT])
_MIN_WIDTH = 1e-6
_EPS = float(np.finfo(float).eps)


def integrate_normal(
    f: Callable[[np.ndarray], np.ndarray], tol: float
) -> tuple[np.ndarray, int]:
    r"""Adaptive Gauss-Kronrod integral of a vector function against the normal density.

    .. math::

        I = \int_{-8.5}^{8.5} f(x)\,\phi(x)\,dx

    ``f`` maps nodes of shape ``(m,)`` to values of shape ``(..., m)``; every round evaluates
    all new panels in one call. A panel is kept when its error estimate (QUADPACK's
    :math:`(200\,|K_{15} - G_7|)^{3/2}`, relative to :math:`\max(1, |I|)` per component) is
    within its share of ``tol``, and halved otherwise; so the kept errors sum to at most
    ``tol``. Returns the integral and the number of nodes used.
    """
    pending = np.stack([_START_EDGES[:-1], _START_EDGES[1:]], axis=1)  # (panels, 2)
    total: np.ndarray | float = 0.0
    used = 0
    while len(pending):
        middle = pending.mean(axis=1)
        half = (pending[:, 1] - pending[:, 0]) / 2
        x = middle[:, None] + half[:, None] * GK_NODES  # (panels, 15)
        values = f(x.ravel())
        values = values.reshape(values.shape[:-1] + x.shape)
        used += x.size
        weight = half[:, None] * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
        kronrod = np.einsum("...pk,pk->...p", values, weight * GK_WEIGHTS)
        gauss = np.einsum("...pk,pk->...p", values, weight * G_WEIGHTS)
        scale = np.maximum(1.0, np.abs(total + kronrod.sum(axis=-1)))[..., None]
        raw = np.abs(kronrod - gauss) / scale
        estimate = np.minimum(raw, (200.0 * raw) ** 1.5)
        # QUADPACK's floor: an estimate within 50 rounding errors of the panel's own size is
        # noise; halving cannot lower it, so a tol below rounding stops there, not at 1e-6.
        noise = 50 * _EPS * np.abs(kronrod) / scale
        worst = np.maximum(estimate - noise, 0.0).reshape(-1, len(pending)).max(axis=0)
        done = (worst <= tol * 2 * half / (2 * LIMIT)) | (half < _MIN_WIDTH)
        total = total + kronrod[..., done].sum(axis=-1)
        split = pending[~done]
        cut = split.mean(axis=1)
        pending = np.concatenate(
            [np.stack([split[:, 0], cut], axis=1), np.stack([cut, split[:, 1]], axis=1)]
        )
    return np.asarray(total), used
