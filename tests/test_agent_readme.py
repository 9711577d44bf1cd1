"""The "LangChain agents" README section (notes/README-agent.md until it is
merged into README.md): its Python example runs offline as written and prints
what the text says it prints."""

from __future__ import annotations

import ast
import pathlib
import re

NOTES = pathlib.Path(__file__).resolve().parent.parent / "notes" / "README-agent.md"
BLOCKS = re.findall(r"```python\n(.*?)```", NOTES.read_text(), re.S)


def test_the_agent_example_runs_and_prints_what_it_says(capsys):
    [block] = BLOCKS
    exec(compile(block, "README-agent.md example", "exec"), {"__name__": "__readme__"})
    claimed = re.search(r"^# (\[.*\])$", block, re.M)
    assert claimed is not None
    assert capsys.readouterr().out.strip() == str(ast.literal_eval(claimed.group(1)))
