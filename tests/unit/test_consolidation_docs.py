"""The usage examples in the consolidation modules' docstrings run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

# By name: the package exports the function ``consolidate``, which shadows its
# module as an attribute.
MODULES = ["memory.duplicates", "memory.validity", "memory.expiry", "memory.consolidate", "memory.consolidate_models"]
MODULES += ["consolidation_run", "stores.consolidation"]  # the ConsolidationRun example (background re-exports it)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module("poolsplit_adapters." + name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
