"""The scenario, from a file to the compiled trial model every engine reads.

The package is in dependency order; each module imports only the ones above it here (and
``relsim.checks``, the one set of input checks below everything, and ``relsim.errors``):

- ``files``: the one safe TOML reader (size, FIFO, encoding and nesting limits);
- ``time_tables``: section 7's tables (``Timing``, ``Fleet``, ``Resources``, ``Infra``,
  ``Targets``);
- ``tables``: section 3-4's tables and :class:`Scenario`, each validating itself;
- ``compiled``: the frozen :class:`TrialModel` and :class:`TimeModel` (section 3 and 7 as
  arrays), what the exact engine, Monte Carlo, the timeline and the planner read.

To add a scenario key: add the field to its table (validated in its ``__post_init__``), compile
it in ``compiled.py``, and read the compiled field in each engine; ``tests/test_trial_model.py``
fails for a compiled field that an engine ignores.
"""

from relsim.errors import ScenarioError
from relsim.scenario.compiled import NO_CAP, TimeModel, TrialModel, time_model, trial_model
from relsim.scenario.files import MAX_FILE_BYTES, MAX_NESTING
from relsim.scenario.tables import (
    MAX_PER_STEP,
    MAX_ROLLBACKS,
    MAX_STEPS,
    MAX_TOTAL,
    Checkpoints,
    Confusion,
    Correlation,
    Cost,
    Retries,
    Scenario,
    Verifier,
    as_scenario,
)
from relsim.scenario.time_tables import Backoff, Duration, Fleet, Infra, Resources, Targets, Timing

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_NESTING",
    "MAX_PER_STEP",
    "MAX_ROLLBACKS",
    "MAX_STEPS",
    "MAX_TOTAL",
    "NO_CAP",
    "Backoff",
    "Checkpoints",
    "Confusion",
    "Correlation",
    "Cost",
    "Duration",
    "Fleet",
    "Infra",
    "Resources",
    "Retries",
    "Scenario",
    "ScenarioError",
    "Targets",
    "TimeModel",
    "Timing",
    "TrialModel",
    "Verifier",
    "as_scenario",
    "time_model",
    "trial_model",
]
