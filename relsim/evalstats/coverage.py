r"""What the coverage of each interval was measured to be, and the note the output gives
where it fell short of 95%.

``tests/test_coverage.py`` simulates evals of known worlds (typical and low success,
heavy-tailed lognormal metrics, counts, costs, categories; paired changes and none) at 10, 20
and 50 tasks x 1, 3 and 5 trials and measures how often each 95% interval ``analyze`` and
``compare`` report holds the truth. :data:`MEASURED` is the least coverage over those worlds
for each quantity and design, written down here (a test holds the two together), and
:func:`coverage_note` says so in the output where it is below :data:`NOTE_BELOW`: the
interval there is the best of those measured, and still covered less than asked. The full
table is in docs/commands/trials.md ("Measured coverage").
"""

from __future__ import annotations

__all__ = ["MEASURED", "NOTE_BELOW", "coverage_note"]

#: A coverage is reported short of 95% when measured below this: 95% less two Monte Carlo
#: standard errors of the measurement (2,000 simulated evals a cell: 0.5 points each).
NOTE_BELOW = 0.94

#: The least coverage measured over the simulated worlds, by quantity and (tasks, trials).
MEASURED: dict[str, dict[tuple[int, int], float]] = {
    "success": {
        (10, 1): 0.985, (10, 3): 0.966, (10, 5): 0.946, (20, 1): 0.932, (20, 3): 0.958,
        (20, 5): 0.945, (50, 1): 0.958, (50, 3): 0.951, (50, 5): 0.952,
    },
    "pass@k": {
        (10, 3): 0.965, (10, 5): 0.97, (20, 3): 0.94, (20, 5): 0.951, (50, 3): 0.953,
        (50, 5): 0.955,
    },
    "pass^k": {
        (10, 3): 0.979, (10, 5): 0.955, (20, 3): 0.961, (20, 5): 0.94, (50, 3): 0.947,
        (50, 5): 0.958,
    },
    "success difference": {
        (10, 1): 0.977, (10, 3): 0.981, (10, 5): 0.977, (20, 1): 0.947, (20, 3): 0.964,
        (20, 5): 0.968, (50, 1): 0.952, (50, 3): 0.947, (50, 5): 0.952,
    },
    "pass@k difference": {
        (10, 3): 0.979, (10, 5): 0.986, (20, 3): 0.956, (20, 5): 0.951, (50, 3): 0.943,
        (50, 5): 0.946,
    },
    "pass^k difference": {
        (10, 3): 0.979, (10, 5): 0.979, (20, 3): 0.952, (20, 5): 0.954, (50, 3): 0.946,
        (50, 5): 0.96,
    },
    "metric": {
        (10, 1): 0.937, (10, 3): 0.925, (10, 5): 0.939, (20, 1): 0.948, (20, 3): 0.933,
        (20, 5): 0.943, (50, 1): 0.957, (50, 3): 0.944, (50, 5): 0.938,
    },
    "metric per success": {
        (10, 1): 0.93, (10, 3): 0.927, (10, 5): 0.934, (20, 1): 0.934, (20, 3): 0.933,
        (20, 5): 0.944, (50, 1): 0.931, (50, 3): 0.948, (50, 5): 0.947,
    },
    "rate": {
        (10, 1): 0.922, (10, 3): 0.904, (10, 5): 0.92, (20, 1): 0.929, (20, 3): 0.914,
        (20, 5): 0.927, (50, 1): 0.933, (50, 3): 0.943, (50, 5): 0.937,
    },
    "cost per success": {
        (10, 1): 0.968, (10, 3): 0.958, (10, 5): 0.935, (20, 1): 0.931, (20, 3): 0.954,
        (20, 5): 0.949, (50, 1): 0.953, (50, 3): 0.943, (50, 5): 0.939,
    },
    "category share": {
        (10, 1): 0.996, (10, 3): 0.968, (10, 5): 0.967, (20, 1): 0.969, (20, 3): 0.959,
        (20, 5): 0.956, (50, 1): 0.953, (50, 3): 0.955, (50, 5): 0.948,
    },
    "metric difference": {
        (10, 1): 0.949, (10, 3): 0.948, (10, 5): 0.949, (20, 1): 0.954, (20, 3): 0.952,
        (20, 5): 0.948, (50, 1): 0.952, (50, 3): 0.952, (50, 5): 0.946,
    },
    "cost per success difference": {
        (10, 1): 0.968, (10, 3): 0.956, (10, 5): 0.953, (20, 1): 0.964, (20, 3): 0.951,
        (20, 5): 0.96, (50, 1): 0.952, (50, 3): 0.955, (50, 5): 0.952,
    },
}


def coverage_note(quantity: str, tasks: int, trials: float) -> str | None:
    """The note for a 95% interval of ``quantity`` (a key of :data:`MEASURED`) on an eval of
    ``tasks`` tasks and ``trials`` trials a task (the median), or None where the measured
    coverage of the nearest design measured is at least :data:`NOTE_BELOW`.

    Examples
    --------
    >>> coverage_note("rate", 12, 3)
    'measured coverage 90.4% at 10 tasks x 3 trials, below the 95% asked (docs/commands/trials.md: Measured coverage)'
    >>> coverage_note("success", 50, 3) is None
    True
    """
    cells = MEASURED.get(quantity)
    if not cells:
        return None
    size = 10 if tasks < 14 else 20 if tasks < 32 else 50
    count = 1 if trials < 2 else 3 if trials < 4 else 5
    design = min(cells, key=lambda cell: (abs(cell[0] - size), abs(cell[1] - count)))
    measured = cells[design]
    if measured >= NOTE_BELOW:
        return None
    return (
        f"measured coverage {100 * measured:.1f}% at {design[0]} tasks x {design[1]} trial"
        f"{'s' if design[1] > 1 else ''}, below the 95% asked (docs/commands/trials.md: Measured coverage)"
    )
