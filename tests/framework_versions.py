"""The framework versions the package's private reaches are tested against,
and the message a test fails with when one of those internals changed: the
package's own (``poolsplit_adapters.stores.internals``), which warns with
the same message at run time when a reach is missing.

The tests in ``tests/unit/test_framework_internals.py`` and
``tests/integration/test_postgres_framework_internals.py`` pin every reach,
and ``make compat`` runs them at the lowest and the newest versions the
extras allow. Where a check fails, its message says which distribution, at
which installed version, moved which name, what the package uses it for,
and the range it was last seen working in (``TESTED``).
"""

from __future__ import annotations

from poolsplit_adapters.stores.internals import TESTED, changed

__all__ = ["TESTED", "changed"]
