"""The one set of input checks, and the limits they enforce.

Every public entry point of relsim checks its input with these functions, so that a bad value
gets one message in one format wherever it is given (``relsim.errors``)::

    <key>: must be <allowed>, got <value>

Two shapes of the same checks:

- scalar checks (:func:`number`, :func:`probability`, :func:`in_range`, :func:`integer`,
  :func:`boolean`, :func:`choice`, :func:`text`, :func:`per_step`) for scenario keys and
  plain arguments;
  they return the value normalised (a ``float``, an ``int``, a tuple for a per-step list);
- array checks (:func:`floats_in`, :func:`probabilities`, :func:`integers`, ...) for the
  vectorised closed forms of ``relsim.formulas``; they return numpy arrays.

:func:`output_file` checks a path to write before any work is done.

Both take ``error``, the ``RelsimError`` subclass to raise (scenario keys raise
``ScenarioError``). :func:`check_keys` refuses unknown keys with a "did you mean";
:func:`unique_keys` refuses a JSON key given twice.

Standard library and numpy only: this module is at the bottom of the house, beside
``relsim.errors`` (the closed forms use it without loading the scenario).
"""

from __future__ import annotations

import difflib
import math
import numbers
import os
import stat
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

import numpy as np

from relsim.errors import RelsimError, invalid

__all__ = [
    "MAX_COUNT",
    "MAX_SD",
    "boolean",
    "check_keys",
    "choice",
    "floats_in",
    "integer",
    "integers",
    "in_range",
    "nonnegative",
    "nonnegatives",
    "number",
    "output_file",
    "per_step",
    "positive",
    "positives",
    "probabilities",
    "probability",
    "scalar",
    "text",
]

#: The largest count any check accepts by default: int64 arithmetic on it stays exact.
MAX_COUNT = 2**62
#: The largest logit-scale standard deviation (``task_sd``, ``step_sd``) accepted anywhere:
#: far beyond any real spread (at 1000 a step is a coin that lands 0 or 1), and the bound of
#: the quadrature's work.
MAX_SD = 1000.0

Error = type[RelsimError]
T = TypeVar("T")


# ------------------------------------------------------------------------------- scalars
def scalar(value: Any) -> Any:
    """A 0-d numpy array's one value (``np.asarray(0.9)``, an xarray's ``.values``), so that
    it is checked as the number it holds; anything else as it is.

    Examples
    --------
    >>> scalar(np.array(25)), scalar([25])
    (np.int64(25), [25])
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


def number(value: Any, key: str, allowed: str = "a number", error: Error = RelsimError) -> float:
    """``value`` as a float: a real number (a 0-d array's too), not a boolean, not NaN."""
    value = scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise invalid(key, allowed, value, error)
    try:
        result = float(value)
    except OverflowError:  # an integer beyond the float range
        raise invalid(key, allowed, value, error) from None
    if math.isnan(result):
        raise invalid(key, allowed, value, error)
    return result


def in_range(
    value: Any,
    key: str,
    low: float = -math.inf,
    high: float = math.inf,
    *,
    low_open: bool = False,
    high_open: bool = False,
    allowed: str | None = None,
    error: Error = RelsimError,
) -> float:
    """``value`` as a float in the range from ``low`` to ``high`` (the one range check).

    Infinite bounds are open (a range without an upper bound holds finite numbers only).

    Examples
    --------
    >>> in_range(0.5, "p", 0, 1)
    0.5
    >>> in_range(2, "p", 0, 1)
    Traceback (most recent call last):
    ...
    relsim.errors.RelsimError: p: must be a number in [0, 1], got 2
    """
    if allowed is None:
        allowed = _range_text(low, high, low_open, high_open)
    result = number(value, key, allowed, error)
    above = result > low if (low_open or low == -math.inf) else result >= low
    below = result < high if (high_open or high == math.inf) else result <= high
    if not (above and below):
        raise invalid(key, allowed, value, error)
    return result


def probability(value: Any, key: str, error: Error = RelsimError) -> float:
    """``value`` as a float in [0, 1]."""
    return in_range(value, key, 0.0, 1.0, allowed="a probability in [0, 1]", error=error)


def nonnegative(value: Any, key: str, error: Error = RelsimError) -> float:
    """``value`` as a finite float >= 0."""
    return in_range(value, key, 0.0, allowed="a finite number >= 0", error=error)


def positive(value: Any, key: str, error: Error = RelsimError) -> float:
    """``value`` as a finite float > 0."""
    return in_range(value, key, 0.0, low_open=True, allowed="a finite number > 0", error=error)


def integer(
    value: Any,
    key: str,
    low: int = 0,
    high: int | None = None,
    *,
    allowed: str | None = None,
    error: Error = RelsimError,
) -> int:
    """``value`` as an int in ``low..high`` (``high`` None: no upper bound): any integral
    type (numpy's too, and a 0-d array of one), never a boolean or a float, compared before
    any cast so none wraps.

    Examples
    --------
    >>> integer(3, "steps", 1)
    3
    >>> integer(2.0, "steps", 1, 10)
    Traceback (most recent call last):
    ...
    relsim.errors.RelsimError: steps: must be an integer in 1..10, got 2.0
    """
    value = scalar(value)
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if ok and value >= low and (high is None or value <= high):
        return int(value)
    if allowed is None:
        allowed = f"an integer >= {low}" if high is None else f"an integer in {low}..{_count_text(high)}"
    raise invalid(key, allowed, value, error)


def boolean(value: Any, key: str, error: Error = RelsimError) -> bool:
    """``value`` itself when it is ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise invalid(key, "true or false", value, error)
    return value


def choice(value: Any, key: str, options: Sequence[str], error: Error = RelsimError) -> str:
    """``value`` when it is one of ``options`` (text)."""
    if not isinstance(value, str) or value not in options:
        raise invalid(key, " or ".join(f'"{o}"' for o in options), value, error)
    return value


def text(value: Any, key: str, longest: int, error: Error = RelsimError) -> str:
    """``value`` when it is text of at most ``longest`` printable characters (a label shown
    beside numbers: no line break, no control character).

    Examples
    --------
    >>> text("USD", "cost.unit", 16)
    'USD'
    """
    if not isinstance(value, str) or len(value) > longest or not value.isprintable():
        raise invalid(key, f"text of at most {longest} printable characters", value, error)
    return value


def per_step(
    value: Any,
    key: str,
    check: Callable[[Any, str], T],
    steps: int | None = None,
    error: Error = RelsimError,
) -> T | tuple[T, ...]:
    """One value, or a list of values (exactly ``steps`` of them when given), each passed
    through ``check(value, key)``; a list comes back as a tuple.

    Examples
    --------
    >>> per_step([0.5, 1], "p", probability)
    (0.5, 1.0)
    >>> per_step([0.5], "p", probability, steps=2)
    Traceback (most recent call last):
    ...
    relsim.errors.RelsimError: p: must be one value or a list of one value per step (2), got a list of 1
    """
    value = scalar(value)  # a 0-d array is one value
    if isinstance(value, (list, tuple, np.ndarray)):
        if steps is not None and len(value) != steps:
            raise error(
                f"{key}: must be one value or a list of one value per step ({steps}), "
                f"got a list of {len(value)}"
            )
        return tuple(check(x, f"{key}[{i}]") for i, x in enumerate(value))
    return check(value, key)


def check_keys(
    data: Mapping[Any, Any],
    allowed: Iterable[str],
    path: str,
    homes: Mapping[str, str] | None = None,
    error: Error = RelsimError,
) -> None:
    """Refuse a key of ``data`` that is not ``allowed``, with the best hint there is: where a
    real key that was put in the wrong table belongs (``homes``: key -> its dotted path), the
    nearest allowed name, or the allowed names."""
    allowed = tuple(allowed)
    for key in data:
        if key in allowed:
            continue
        name = f"{path}.{key}" if path else str(key)
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        home = None if homes is None else homes.get(str(key))
        if home is not None and home != name:
            hint = f"; it belongs at '{home}'"
        elif close:
            hint = f"; did you mean '{close[0]}'?"
        else:
            hint = f"; allowed keys here: {', '.join(allowed)}"
        raise error(f"{name}: unknown key{hint}")


class RepeatedKey(ValueError):
    """A key given twice in one JSON object (its name in ``args[0]``): see `unique_keys`."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict, refusing a key given twice: ``json.loads(text,
    object_pairs_hook=unique_keys)`` raises `RepeatedKey` where json would keep the last value
    silently.

    Examples
    --------
    >>> import json
    >>> json.loads('{"a": 1, "b": {"c": 2}}', object_pairs_hook=unique_keys)
    {'a': 1, 'b': {'c': 2}}
    >>> json.loads('{"a": 1, "a": 2}', object_pairs_hook=unique_keys)
    Traceback (most recent call last):
    ...
    relsim.checks.RepeatedKey: a
    """
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise RepeatedKey(key)
        out[key] = value
    return out


def output_file(value: Any, key: str, *, make_folders: bool = False, error: Error = RelsimError) -> Path:
    """``value`` as the path of a file that can be written, checked before any work is done:
    text or a path, not empty, not a folder, not a FIFO or a device (writing to a FIFO blocks
    until someone reads it, ``/dev/full`` fails after the work), in a folder that exists and
    can be written (``make_folders``: a missing folder will be made, but none on its way may
    be a file). Nothing is created or changed.
    """
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise invalid(key, "the name of a file to write", value, error)
    path = Path(value)

    def refuse(reason: str) -> RelsimError:
        return error(f"{key}: must be a file that can be written, got {str(path)!r} ({reason})")

    try:
        mode: int | None = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except NotADirectoryError:
        raise refuse("a folder on its path is a file") from None
    except OSError as err:
        raise refuse(err.strerror or str(err)) from None
    if mode is not None:
        if stat.S_ISDIR(mode):
            raise refuse("a folder")
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket, not a regular file"
            raise refuse(kind)
        if not os.access(path, os.W_OK):
            raise refuse("permission denied")
        return path
    folder = path.parent
    try:
        while not folder.exists():  # the nearest folder that exists must be one, and writable
            if not make_folders:
                raise refuse(f"the folder {str(folder)!r} does not exist")
            folder = folder.parent
    except OSError as err:
        raise refuse(err.strerror or str(err)) from None
    if not folder.is_dir():
        raise refuse(f"{str(folder)!r} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise refuse(f"cannot write in {str(folder)!r}: permission denied")
    return path


# -------------------------------------------------------------------------------- arrays
def floats_in(
    value: Any, key: str, allowed: str, ok: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """``value`` as a float array whose every entry passes ``ok`` (NaN fails every
    comparison), else a RelsimError naming the first offending entry."""
    try:
        x = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise invalid(key, allowed, value) from None
    bad = ~ok(x)
    if bad.any():
        raise invalid(key, allowed, _first_bad(x, bad))
    return x


def probabilities(value: Any, key: str) -> np.ndarray:
    """``value`` as a float array in [0, 1]."""
    return floats_in(value, key, "a probability in [0, 1]", lambda x: (x >= 0.0) & (x <= 1.0))


def positives(value: Any, key: str) -> np.ndarray:
    """``value`` as a float array of finite numbers > 0."""
    return floats_in(value, key, "a finite number > 0", lambda x: (x > 0.0) & np.isfinite(x))


def nonnegatives(value: Any, key: str) -> np.ndarray:
    """``value`` as a float array of finite numbers >= 0."""
    return floats_in(value, key, "a finite number >= 0", lambda x: (x >= 0.0) & np.isfinite(x))


def integers(
    value: Any, key: str, low: int = 0, high: int = MAX_COUNT, allowed: str | None = None
) -> np.ndarray:
    """``value`` as an int64 array of integers in ``low..high``.

    Every integer type is range-checked *before* the cast to int64 (a ``numpy.uint64`` of
    2**64-1 would otherwise wrap to -1), huge Python integers included."""
    if allowed is None:
        allowed = f"an integer in {low}..{_count_text(high)}"
    x = np.asarray(value)
    if x.dtype.kind == "O":  # huge Python ints, or a list mixing ints and None
        x = floats_in(value, key, allowed, lambda x: np.ones(x.shape, dtype=bool))
    elif x.dtype.kind not in "iuf":  # text, booleans
        raise invalid(key, allowed, value)
    if x.dtype.kind == "f":
        bad = ~np.isfinite(x) | (x != np.floor(x)) | (x < low) | (x > high)
    else:  # exact integer comparisons, signed or unsigned, with no cast first
        bad = (x < low) | (x > high)
    if bad.any():
        raise invalid(key, allowed, _first_bad(x, bad))
    return x.astype(np.int64)


# ------------------------------------------------------------------------------- helpers
def _first_bad(x: np.ndarray, bad: np.ndarray) -> Any:
    """The first offending value, as a plain Python number for the message."""
    value = x[bad].flat[0] if x.ndim else x.item()
    return value.item() if hasattr(value, "item") else value


def _count_text(high: int) -> str:
    return "2**62" if high == MAX_COUNT else str(high)


def _range_text(low: float, high: float, low_open: bool, high_open: bool) -> str:
    if high == math.inf:
        if low == -math.inf:
            return "a finite number"
        return f"a finite number {'>' if low_open else '>='} {low:g}"
    if low == -math.inf:
        return f"a finite number {'<' if high_open else '<='} {high:g}"
    return f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
