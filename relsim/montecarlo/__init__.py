"""Monte Carlo engine: MODEL.md section 3 simulated by numba kernels, seeded per block.

``simulate`` is the entry point; numba is imported only when it runs.
"""

from __future__ import annotations

from relsim.montecarlo._driver import BLOCK_TRIALS, simulate

__all__ = ["BLOCK_TRIALS", "simulate"]
