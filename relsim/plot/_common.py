"""What the figures share: the outcome colours, the axes and the argument checks."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from relsim.errors import invalid

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

#: The outcomes a trial can end in, in the order they are stacked, with their colours:
#: success green, the dangerous silent failure red, the known detected failure orange.
OUTCOME_COLORS = {
    "success": "tab:green",
    "silent_failure": "tab:red",
    "detected_failure": "tab:orange",
    "timeout": "tab:purple",
    "infra_failure": "tab:gray",
}
OUTCOME_LABELS = {
    "success": "success",
    "silent_failure": "silent failure",
    "detected_failure": "detected failure",
    "timeout": "timeout",
    "infra_failure": "infra failure",
}


#: The most points one axis of a figure draws (a larger request is a typo, not a figure).
MAX_AXIS_POINTS = 100_000


def axes_or_new(ax: "Axes | None") -> "Axes":
    if ax is not None:
        from matplotlib.axes import Axes

        if not isinstance(ax, Axes):
            raise invalid("ax", "a matplotlib Axes or None", ax)
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    return ax


def checked_target(target: Any) -> float | None:
    """The target as a float (None stays None); checked before anything is drawn."""
    if target is None:
        return None
    try:
        value = float(target)
    except (TypeError, ValueError):
        raise invalid("target", "a number in (0, 1]", target) from None
    if not 0.0 < value <= 1.0:
        raise invalid("target", "a number in (0, 1]", target)
    return value


def target_line(ax: "Axes", target: float | None) -> None:
    if target is not None:
        ax.axhline(target, linestyle=":", color="tab:red", label=f"target {target:g}")


def literal_text(value: Any) -> str:
    """User text as matplotlib shows it literally: a ``$`` would start mathtext (``$\\foo$``
    is a parse error, not a label)."""
    return str(value).replace("$", r"\$")


def floats(value: Any, key: str) -> list[float]:
    try:
        values = np.atleast_1d(np.asarray(value, dtype=float)).ravel()
    except (TypeError, ValueError):
        raise invalid(key, "a number or a non-empty list of finite numbers", value) from None
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise invalid(key, "a number or a non-empty list of finite numbers", value)
    return [float(v) for v in values]


def step_counts(value: Iterable[int], key: str) -> np.ndarray:
    steps = np.atleast_1d(np.asarray(list(value) if not np.isscalar(value) else value))
    if steps.size == 0 or steps.dtype.kind not in "iu" or steps.min() < 1:
        raise invalid(key, "integers >= 1", value)
    return steps


def outcome_values(name: str, result: Any) -> dict[str, float]:
    """The outcome proportions of one result (Outcome-like object or mapping)."""
    values: dict[str, float] = {}
    for key in OUTCOME_COLORS:
        if isinstance(result, Mapping):
            found = result.get(key)
        else:
            found = getattr(result, key, None)
        if found is not None:
            values[key] = float(found)
    if "success" not in values or not all(math.isfinite(v) for v in values.values()):
        raise invalid(f"results[{name!r}]", "an Outcome or a mapping with the outcome keys", result)
    return values


