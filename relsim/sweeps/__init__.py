"""Sweeps over grids of designs: every point judged by one engine, resumable, on dask.

:func:`sweep` (also ``relsim.sweep``) judges every point of a grid file (:class:`Grid`) and
returns one row per point; :func:`relsim.plan.frontier` picks the non-dominated rows and
:func:`relsim.plot.pareto` draws them.

Where things are: ``grid`` (grid files, points, :func:`point_seed`), ``methods`` (one entry
per engine in :data:`METHODS`), ``execute`` (:func:`sweep`: in process or on dask) and
``store`` (the resume journal and the output file).

Heavy modules load only when used: pandas when a frame is built, dask when a cluster is asked
for.
"""

from __future__ import annotations

from relsim.sweeps.execute import sweep
from relsim.sweeps.grid import Grid, point_seed, scenario_keys
from relsim.sweeps.methods import METHODS

__all__ = ["Grid", "METHODS", "point_seed", "scenario_keys", "sweep"]
