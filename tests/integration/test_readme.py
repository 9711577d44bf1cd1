"""Every Python example in the README runs, offline, as written, and prints
exactly what its ``#> `` lines say it prints."""

from __future__ import annotations

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def claimed_output(block: str) -> list:
    """The ``#> `` lines of a block: its printed output, in order."""
    return [line[3:] for line in block.splitlines() if line.startswith("#> ")]


def test_readme_has_examples():
    assert len(BLOCKS) >= 4
    assert any(claimed_output(block) for block in BLOCKS)


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_readme_example_runs(number, capsys):
    block = BLOCKS[number]
    exec(compile(block, "README.md example %d" % number, "exec"), {"__name__": "__readme__"})
    printed = capsys.readouterr().out.splitlines()
    claimed = claimed_output(block)
    if claimed or printed:
        assert printed == claimed, "README example %d prints what its #> lines say" % number
