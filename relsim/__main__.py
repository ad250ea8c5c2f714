"""``python -m relsim``: the same as the ``relsim`` command."""

import sys

from relsim.cli import main

sys.exit(main())
