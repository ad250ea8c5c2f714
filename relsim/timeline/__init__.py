"""The timeline engine: docs/model.md section 7 on simpy.

``simulate_timeline(scenario, trials)`` (independent trials) or ``simulate_timeline(scenario,
replications=R)`` (a workload) runs each trial as a simpy process with section 3's draws and
decisions and the time tables' waits between them (agent slots, LLM slots and reviewers as
simpy resources; the rpm and tpm limits as token buckets; the deadline and the crash clock as
interrupts; independent trials, which share nothing, run in a numba kernel instead:
``_fast`` and ``_kernel``), and returns a :class:`TimelineOutcome` (defined, with every result type, in
:mod:`relsim.results`). ``_trial`` is one trial's simpy process (``_design`` its loop with docs/model.md section 8's
tables), ``_driver`` runs the trials and replications, ``_replications``
combines a workload's replications, judges the targets and raises the warnings. :func:`work_estimate` is the time and memory a run will
take, estimated before it starts (a run over ``relsim.limits`` is refused).
"""

from __future__ import annotations

from relsim.results import EVENT_COLUMNS, TimelineOutcome
from relsim.results import TIMELINE_PROPORTIONS as PROPORTIONS
from relsim.timeline._driver import CHUNK_TRIALS, simulate_timeline
from relsim.timeline._estimate import work_estimate

__all__ = [
    "CHUNK_TRIALS",
    "EVENT_COLUMNS",
    "PROPORTIONS",
    "TimelineOutcome",
    "simulate_timeline",
    "work_estimate",
]
