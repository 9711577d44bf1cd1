"""Every Python example in the README runs, offline, as written."""

from __future__ import annotations

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_readme_example_runs(number, capsys):
    exec(compile(BLOCKS[number], "README.md example %d" % number, "exec"), {"__name__": "__readme__"})
