"""Monte Carlo engine: MODEL.md section 3 simulated by numba kernels, seeded per block.

``simulate`` is the entry point. The kernels (``_kernels.py``) are compiled by numba once per
machine and kept as native code (``_native.py``), so numba is imported only to build them, or
where native code cannot be used and numba's dispatcher runs them instead.
"""

from __future__ import annotations

from relsim.montecarlo._driver import BLOCK_TRIALS, simulate

__all__ = ["BLOCK_TRIALS", "simulate"]
