"""How much time and memory one engine call may take, and the refusal when an estimate is over.

Every engine estimates, before it allocates anything, the memory it will hold and the time it
will take (from the size of its arrays and rates measured on a small, busy machine: see
``benchmarks/limits_calibration.py``), and refuses with a :class:`relsim.errors.RelsimError`
that names the estimate, the limit and what to do instead, when the estimate is over

- ``TIME_LIMIT`` seconds (60: what a user waits for without wondering whether it hangs), or
- ``MEMORY_LIMIT`` bytes (4 GiB: what a laptop or a CI runner can hold beside everything else).

Both can be raised for one process with the environment variables ``RELSIM_TIME_LIMIT``
(seconds) and ``RELSIM_MEMORY_LIMIT`` (bytes, or with a suffix ``K``, ``M``, ``G``: powers of
1024), or by assigning the module's constants. The estimates are deliberately rough (within a
few times the truth on the calibration machine); they exist to turn hours and hundreds of
GiB into one clear line, not to predict a run to the second.

The float range is a limit too: ``TrialModel.cost_unit`` (``relsim.scenario.compiled``) is the
power of two the engines hold costs in, so that costs near it (1e160 per attempt) neither
overflow in the sums nor warn; an expected cost beyond the range is reported as infinite.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relsim.errors import RelsimError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "MEMORY_LIMIT",
    "TIME_LIMIT",
    "WorkEstimate",
    "memory_limit",
    "time_limit",
]

#: Seconds an engine call may be estimated to take (``RELSIM_TIME_LIMIT`` overrides it).
TIME_LIMIT = 60.0
#: Bytes an engine call may be estimated to hold (``RELSIM_MEMORY_LIMIT`` overrides it).
MEMORY_LIMIT = 4 * 2**30

_SUFFIXES = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def time_limit() -> float:
    """The time limit in seconds: ``RELSIM_TIME_LIMIT`` when set, else ``TIME_LIMIT``."""
    text = os.environ.get("RELSIM_TIME_LIMIT", "").strip()
    if not text:
        return float(TIME_LIMIT)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0:  # also NaN
        raise RelsimError(f"RELSIM_TIME_LIMIT: must be a number of seconds > 0, got {text!r}")
    return value


def memory_limit() -> float:
    """The memory limit in bytes: ``RELSIM_MEMORY_LIMIT`` when set, else ``MEMORY_LIMIT``."""
    text = os.environ.get("RELSIM_MEMORY_LIMIT", "").strip().upper().removesuffix("B")
    if not text:
        return float(MEMORY_LIMIT)
    number, suffix = (text[:-1], text[-1]) if text[-1:] in _SUFFIXES else (text, "")
    try:
        value = float(number) * _SUFFIXES[suffix]
    except ValueError:
        value = math.nan
    if not value > 0:
        raise RelsimError(
            "RELSIM_MEMORY_LIMIT: must be a number of bytes > 0 (suffix K, M or G allowed), "
            f"got {os.environ['RELSIM_MEMORY_LIMIT']!r}"
        )
    return value


@dataclass(frozen=True)
class WorkEstimate:
    """What an engine call is estimated to cost before it starts.

    Attributes
    ----------
    seconds : float
        Expected wall time on the calibration machine (one busy core).
    memory : float
        Peak bytes of the arrays it holds at once.
    detail : str
        What drives the estimate, in the scenario's words (for the refusal message).
    """

    seconds: float
    memory: float
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """``{"seconds", "memory", "detail"}`` (JSON-ready through ``relsim.results.jsonable``)."""
        return {"seconds": self.seconds, "memory": self.memory, "detail": self.detail}

    def to_frame(self) -> "pd.DataFrame":
        """One row with the columns of ``to_dict``, as a pandas DataFrame
        (:func:`relsim.results.one_row`)."""
        from relsim.results import one_row

        return one_row(self.to_dict())

    def check(self, key: str, advice: str) -> "WorkEstimate":
        """Raise a ``RelsimError`` when over a limit; return ``self`` otherwise.

        The message is ``"<key>: must be <within the limits>, got <the estimate> (<detail>);
        <advice>"``.
        """
        seconds, memory = time_limit(), memory_limit()
        if self.seconds <= seconds and self.memory <= memory:
            return self
        detail = f" ({self.detail})" if self.detail else ""
        raise RelsimError(
            f"{key}: must be within about {format_seconds(seconds)} and "
            f"{format_bytes(memory)}, got an estimated {format_seconds(self.seconds)} and "
            f"{format_bytes(self.memory)}{detail}; {advice} (the limits are "
            "RELSIM_TIME_LIMIT and RELSIM_MEMORY_LIMIT)"
        )


def format_seconds(seconds: float) -> str:
    """A duration in the unit a person reads it in: ``'45 s'``, ``'12 min'``, ``'3.2 h'``.

    Examples
    --------
    >>> format_seconds(45), format_seconds(720), format_seconds(11520), format_seconds(4e7)
    ('45 s', '12 min', '3.2 h', '1.3 years')
    """
    if not math.isfinite(seconds):
        return "forever"
    if seconds < 1:
        return f"{seconds:.2g} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.2g} h"
    if seconds < 365 * 86400:
        return f"{seconds / 86400:.0f} days"
    years = seconds / (365.25 * 86400)
    return f"{years:.2g} year{'s' if f'{years:.2g}' != '1' else ''}"


def format_bytes(size: float) -> str:
    """A size in binary units: ``'512 B'``, ``'3.4 MiB'``, ``'149 GiB'``.

    Examples
    --------
    >>> format_bytes(512), format_bytes(3.4 * 2**20), format_bytes(149.2 * 2**30)
    ('512 B', '3.4 MiB', '149 GiB')
    """
    if not math.isfinite(size):
        return "unbounded memory"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.3g} {unit}" if unit != "B" else f"{size:.0f} B"
        size /= 1024
    raise AssertionError("unreachable")  # pragma: no cover
