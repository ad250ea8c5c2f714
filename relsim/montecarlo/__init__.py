"""Monte Carlo engine: docs/model.md sections 3 and 8 simulated by numba kernels, seeded per block.

``simulate`` is the entry point. The kernels (``_kernels.py``; ``_kernel_v2.py`` for section
8's tables) are compiled by numba with ``cache=True``: once per machine, kept in numba's cache
(``__pycache__`` beside them, or ``NUMBA_CACHE_DIR``). numba is imported only when something
is simulated.
"""

from __future__ import annotations

from relsim.montecarlo._driver import BLOCK_TRIALS, simulate
from relsim.montecarlo._estimate import work_estimate

__all__ = ["BLOCK_TRIALS", "simulate", "work_estimate"]
