"""``python -m sklearn_uldp``: the command line interface."""

import sys

from ._cli import main

sys.exit(main())
