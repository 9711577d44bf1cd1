"""The architecture page names every module with its one job: the table
``docs/module_table.py`` writes from the modules' docstrings is current."""

from __future__ import annotations

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _module_table():
    spec = importlib.util.spec_from_file_location("module_table", ROOT / "docs" / "module_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_written_table_is_current():
    module_table = _module_table()
    written = (ROOT / "docs" / "_generated" / "modules.md").read_text(encoding="utf-8")
    assert written == module_table.table(), "run python docs/module_table.py"


def test_every_module_has_a_row():
    written = (ROOT / "docs" / "_generated" / "modules.md").read_text(encoding="utf-8")
    modules = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "poolsplit_adapters").rglob("*.py"))
    assert modules, "no module found"
    missing = [m for m in modules if "| `%s` |" % m not in written]
    assert missing == []


def test_the_architecture_page_includes_it():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert '--8<-- "_generated/modules.md"' in page


def test_a_reference_becomes_plain_code():
    module_table = _module_table()
    text = "The store behind [`MemoryIndex`][poolsplit_adapters.index.MemoryIndex] blocks. More after."
    assert module_table.first_sentence(text) == "The store behind `MemoryIndex` blocks."
