"""Sweeps over grids of designs: every point judged by one engine, resumable, on dask.

``relsim.sweep(grid, out, workers=..., scheduler=...)`` judges every point of a grid file
(:class:`Grid`) and returns one row per point; ``frontier`` picks the non-dominated rows and
``pareto`` draws them. The module itself is callable, so ``relsim.sweep(...)`` is
:func:`relsim.sweep.execute.sweep` while ``relsim.sweep.Grid`` and friends stay reachable.

Heavy modules load only when used: pandas when a frame is built, dask when a cluster is asked
for, matplotlib when a figure is drawn.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from relsim.sweep.execute import sweep
from relsim.sweep.frontier import frontier
from relsim.sweep.grid import Grid, point_seed, scenario_keys
from relsim.sweep.methods import METHODS
from relsim.sweep.pareto_plot import pareto

__all__ = ["Grid", "METHODS", "frontier", "pareto", "point_seed", "scenario_keys", "sweep"]


class _CallableModule(types.ModuleType):
    """This package, callable as :func:`sweep` (``relsim.sweep(...)``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return sweep(*args, **kwargs)


# Assigning a module's __class__ to a ModuleType subclass is supported Python (3.5+). It lets
# ``relsim.sweep`` be both the function the issue names and the package holding Grid, which a
# plain function re-export cannot be: importing ``relsim.sweep.grid`` rebinds the attribute.
sys.modules[__name__].__class__ = _CallableModule
