"""Shared test fixtures: the spec oracle lives in benchmarks/reference.py."""

import datetime
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

NOW = datetime.datetime(2026, 7, 7, 12, 0, 0)
