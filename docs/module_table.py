"""Write the architecture page's table of modules, one row each, from the
modules' own docstrings.

    python docs/module_table.py          # writes docs/_generated/modules.md
    python docs/module_table.py --check  # exit 1 if that file is stale

Every module of the package states its one job in the first sentence of its
docstring; this table is those sentences, so the page names every module and
cannot drift from the code (``tests/unit/test_module_table.py`` runs
``--check``). Cross-references (``[`name`][target]``) become plain code:
the table is read on the architecture page, where the API reference links
would point away from the map.
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import re
import sys
from typing import List

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "poolsplit_adapters"
OUT = ROOT / "docs" / "_generated" / "modules.md"

_REFERENCE = re.compile(r"\[(`[^`\]]+`)\]\[[^\]]*\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`\"])")


def first_sentence(docstring: str) -> str:
    """The docstring's first sentence, on one line, references as plain code."""
    paragraph = " ".join(docstring.strip().split("\n\n")[0].split())
    paragraph = _REFERENCE.sub(r"\1", paragraph)
    sentence = _SENTENCE_END.split(paragraph, maxsplit=1)[0]
    return sentence.replace("|", "\\|")


def rows() -> List[str]:
    """One table row per module, in path order."""
    out: List[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if not docstring:
            raise SystemExit("%s: no module docstring: say its one job in its first sentence" % relative)
        out.append("| `%s` | %s |" % (relative, first_sentence(docstring)))
    return out


def table() -> str:
    """The generated file's whole text."""
    head = [
        "<!-- written by docs/module_table.py from the modules' docstrings: run it again to refresh -->",
        "| module | its one job (the first sentence of its docstring) |",
        "|---|---|",
    ]
    return "\n".join(head + rows()) + "\n"


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the written table is stale")
    args = parser.parse_args(argv)
    text = table()
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print("%s is stale: run python docs/module_table.py" % OUT.relative_to(ROOT))
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
