"""The one family of bad-input errors, and its message format.

Every mistake a user can make (a scenario key out of range, a malformed trial file, a bad
argument to a public function) raises a :class:`RelsimError`, a ``ValueError`` whose message
names *where* (file and line when there is one), *what* (the key or argument) and *what is
allowed*::

    <where>: <key>: must be <allowed>, got <value>

The command line turns a ``RelsimError`` into one line on stderr and exit status 2; anything
else that escapes is a bug and is reported as one.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RelsimError", "ScenarioError", "invalid", "show"]


class RelsimError(ValueError):
    """Bad input: the message names the file (when there is one), the key and the range."""


class ScenarioError(RelsimError):
    """A scenario that breaks the format: the message names the file, the key and the range."""


def show(value: Any, width: int = 40) -> str:
    """``repr(value)``, cut to ``width`` characters so a huge input makes a short message."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def invalid(key: str, allowed: str, value: Any, error: type[RelsimError] = RelsimError) -> RelsimError:
    """The error for ``key`` holding ``value`` outside ``allowed``, in the one format.

    Examples
    --------
    >>> str(invalid("retries", "an integer >= 0", -1))
    'retries: must be an integer >= 0, got -1'
    """
    return error(f"{key}: must be {allowed}, got {show(value)}")
