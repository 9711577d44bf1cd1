"""Shared test fixtures: the spec oracle lives in benchmarks/reference.py."""

import datetime
import pathlib
import sys

from hypothesis import settings

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

NOW = datetime.datetime(2026, 7, 7, 12, 0, 0)

# Property tests: enough examples to find tie and boundary cases, and no
# per-example deadline (this is not a timing suite; CI machines vary).
settings.register_profile("ci", max_examples=300, deadline=None)
settings.load_profile("ci")
pytest_plugins = ["pg_server"]  # the real Postgres for tests/test_postgres_*.py
