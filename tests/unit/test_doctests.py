"""Every example in the package's docstrings runs and prints what it says
(the API reference shows them: a stale value there is a false document)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import poolsplit_adapters

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(poolsplit_adapters.__path__, "poolsplit_adapters.")
    if not info.name.endswith("__main__")  # importing it runs the CLI
)


@pytest.mark.parametrize("name", MODULES)
def test_the_docstring_examples_of_each_module_hold(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=False)
    assert result.failed == 0, "%d of %d docstring examples of %s fail" % (result.failed, result.attempted, name)
