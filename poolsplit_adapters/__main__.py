"""``python -m poolsplit_adapters``: the ``poolsplit`` command."""

import sys

from .cli import main

sys.exit(main())
