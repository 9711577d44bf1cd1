"""The example memory in ``examples/`` as the tests read it: where it lives
and the reference time it was generated for (``examples/make_store.py``'s
``NOW``), so that recency reads the same in every test that uses it."""

from __future__ import annotations

import datetime
import pathlib

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
NOW = datetime.datetime(2026, 11, 20, 9)
