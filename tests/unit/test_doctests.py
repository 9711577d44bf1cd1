"""Every example in the package's docstrings runs and prints what it says
(the API reference shows them: a stale value there is a false document),
and no pool plan shown in a docstring or a docs page reserves nothing."""

from __future__ import annotations

import ast
import doctest
import importlib
import pathlib
import pkgutil
import re
from typing import Iterator, List

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


ROOT = pathlib.Path(poolsplit_adapters.__file__).parent.parent
DOCUMENTED = sorted([*(ROOT / "poolsplit_adapters").rglob("*.py"), *(ROOT / "docs").rglob("*.md"), ROOT / "README.md"])


def _plans(text: str) -> Iterator[ast.List]:
    """Every literal list of pools in ``text`` (``[Pool(...), ...]``, over
    one line or several), parsed."""
    for found in re.finditer(r"\[\s*Pool\(", text):
        depth, end = 0, found.start()
        for end in range(found.start(), len(text)):
            depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
        plan = ast.parse(text[found.start() : end + 1], mode="eval").body
        assert isinstance(plan, ast.List)
        yield plan


def _swallowing(plan: ast.List) -> List[str]:
    """The pools of ``plan`` without types that come before another pool:
    each admits every type, so the later pools reserve nothing."""
    pools = [p for p in plan.elts if isinstance(p, ast.Call) and getattr(p.func, "id", None) == "Pool"]
    untyped = [p for p in pools[:-1] if len(p.args) < 4 and not any(k.arg == "types" for k in p.keywords)]
    return [ast.unparse(p) for p in untyped]


def test_the_documented_plans_give_types_to_every_pool_but_a_last_catch_all():
    found = {}
    for path in DOCUMENTED:
        for plan in _plans(path.read_text(encoding="utf-8")):
            if _swallowing(plan):
                found.setdefault(str(path.relative_to(ROOT)), []).extend(_swallowing(plan))
    assert found == {}
