"""The Python examples of the documentation: README.md and every page of the
site under docs/. One reader for both the offline examples
(tests/integration/test_docs.py) and the Postgres ones
(tests/test_postgres_readme.py), so the two cannot disagree on what a block is."""

from __future__ import annotations

import pathlib
import re
from typing import List, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Pages are read from the source folder, including the tables the benchmarks write.
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

Block = Tuple[str, int, str]  # (file relative to the repository, number in that file, code)


def fence(info: str) -> re.Pattern[str]:
    """A fence opening at the start of a line with exactly this info string:
    ```` ```python ```` is not ```` ```python {.postgres} ````."""
    return re.compile(r"^```%s\n(.*?)^```" % re.escape(info), re.S | re.M)


def code_blocks(info: str) -> List[Block]:
    """Every block fenced ```` ```<info> ```` in the documentation, in file order."""
    found: List[Block] = []
    for path in DOC_FILES:
        name = path.relative_to(ROOT).as_posix()
        for number, code in enumerate(fence(info).findall(path.read_text(encoding="utf-8"))):
            found.append((name, number, code))
    return found


def indented_python_fences() -> List[str]:
    """Python fences that do not start a line (inside a list or an admonition):
    the readers above would not see them, so an example there would never run."""
    return [
        "%s:%d" % (path.relative_to(ROOT).as_posix(), number)
        for path in DOC_FILES
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.match(r"\s+```python", line)
    ]


def claimed_output(code: str) -> List[str]:
    """The ``#> `` lines of a block: its printed output, in order."""
    return [line[3:] for line in code.splitlines() if line.startswith("#> ")]


def promised_output(code: str) -> List[str]:
    """What a block says it prints last: its ``#> `` lines, else the
    comment after its last line's ``print(...)`` (``print(x)  # [1, 2]``);
    empty when it says neither."""
    claimed = claimed_output(code)
    if claimed:
        return claimed
    last = re.search(r"print\(.*\)\s*#\s*(.+)\s*$", code.strip())
    return [last.group(1).strip()] if last else []


def wide_code_lines(limit: int = 88) -> List[str]:
    """Lines of fenced code blocks under docs/ wider than ``limit`` columns,
    as ``file:line (width)``. A fence's own indentation (inside a list or an
    admonition) does not count: the page shows the code without it."""
    opening = re.compile(r"^(\s*)(```+|~~~+)")
    wide = []
    for path in DOC_FILES:
        if ROOT / "docs" not in path.parents:  # README.md is not a page of the site
            continue
        name = path.relative_to(ROOT).as_posix()
        fence = None  # (indentation, marker) of the open fence
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found = opening.match(line)
            if fence is None:
                if found:
                    fence = (len(found.group(1)), found.group(2))
                continue
            if found and found.group(2).startswith(fence[1]) and not line[found.end() :].strip():
                fence = None
                continue
            width = len(line) - (fence[0] if line[: fence[0]].isspace() else 0)
            if width > limit:
                wide.append("%s:%d (%d)" % (name, number, width))
    return wide
