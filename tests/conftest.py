"""Shared test fixtures for both tiers.

``tests/unit`` is fast and in-process (``make unit``); ``tests/integration``
starts processes, a real Postgres, notebooks and docs. The spec oracle the
differential tests and the benchmarks compare against is ``tests/reference.py``;
the helper modules beside this file are importable from both tiers
(``pythonpath`` in pyproject.toml).
"""

import datetime
import os

from hypothesis import settings

NOW = datetime.datetime(2026, 7, 7, 12, 0, 0)

# Property tests: enough examples to find tie and boundary cases, and no
# per-example deadline (this is not a timing suite; CI machines vary).
# `make unit` loads the "unit" profile (fewer examples, the same properties)
# through HYPOTHESIS_PROFILE; `make test` and CI run the full "ci" profile.
settings.register_profile("ci", max_examples=300, deadline=None)
settings.register_profile("unit", max_examples=60, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
pytest_plugins = ["pg_server"]  # the real Postgres for tests/integration/test_postgres_*.py
