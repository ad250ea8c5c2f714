"""relsim: how reliable will this agent be, and what must change to reach the target?

The public API is listed in ``__all__``. Submodules load on first use (PEP 562), so
``import relsim`` costs only numpy-free Python; heavy modules (numba, pandas, scipy) are
imported inside the functions that need them.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "formulas": "relsim.formulas",
    "plan": "relsim.plan",
    "evalstats": "relsim.evalstats",
    "plot": "relsim.plot",
    "report": "relsim.report",
    "RelsimError": "relsim.errors",
    "Scenario": "relsim.scenario",
    "ScenarioError": "relsim.errors",
    "TrialModel": "relsim.scenario",
    "TimeModel": "relsim.scenario",
    "Verifier": "relsim.scenario",
    "Retries": "relsim.scenario",
    "Checkpoints": "relsim.scenario",
    "Correlation": "relsim.scenario",
    "Confusion": "relsim.scenario",
    "Cost": "relsim.scenario",
    "Outcome": "relsim.results",
    "SimulatedOutcome": "relsim.results",
    "evaluate": "relsim.exact",
    "simulate": "relsim.montecarlo",
    "simulate_timeline": "relsim.timeline",
    "TimelineOutcome": "relsim.results",
    "Timing": "relsim.scenario",
    "Fleet": "relsim.scenario",
    "Resources": "relsim.scenario",
    "Infra": "relsim.scenario",
    "Duration": "relsim.scenario",
    "Backoff": "relsim.scenario",
    "results": "relsim.results",
    "scenario": "relsim.scenario",
    "sweep": "relsim.sweeps",
    "sweeps": "relsim.sweeps",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'relsim' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    value = module if module_name == f"relsim.{name}" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
