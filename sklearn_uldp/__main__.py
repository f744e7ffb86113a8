"""``python -m sklearn_uldp``: the command line interface."""

import sys

from .cli import main

sys.exit(main())
