"""A pytest plugin for ``make compat``: a skipped test fails the run.

The framework-facing tests skip themselves where a framework is missing
(``pytest.importorskip``) or Postgres cannot start. In a compat tier every
framework is installed on purpose, so a skip there means a framework version
that no longer imports, or a test that did not run: the tier would pass
having tested nothing. ``CI=1`` already turns a Postgres server that cannot
start into a failure (tests/pg_server.py); this catches every other skip.

Loaded by name, with this directory on the path::

    PYTHONPATH=tests/compat python -m pytest -p no_skips ...
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session, naming each skip and its reason, when anything was skipped.

    With pytest-xdist this runs in the controller too, whose terminal
    reporter holds every worker's reports (collection skips included)."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(session.config, "workerinput"):
        return
    skipped = reporter.stats.get("skipped", [])
    if not skipped:
        return
    reporter.write("\n")
    reporter.write_sep("=", "%d skipped: make compat runs every test it selects" % len(skipped), red=True)
    for report in skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reporter.write_line("%s: %s" % (report.nodeid or report.fspath, reason), red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
