"""Settings for the whole suite.

Hypothesis draws the same examples on every run, seeded from each test (a CI run must not
pass or fail by the luck of its draw: a property test once found, at random, a corner its own
law did not hold in). ``HYPOTHESIS_PROFILE=explore python3 -m pytest`` draws fresh examples,
to look for new counterexamples on purpose.
"""

import os

from hypothesis import settings

settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))
