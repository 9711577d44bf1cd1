"""Where the benchmark tables of the docs come from: every script in
``benchmarks/`` writes its Markdown table(s) to ``docs/benchmarks/_generated/``,
headed by the command that made them and the date, and the benchmarks page
includes those files. A figure in the docs is therefore always one a script
printed, never one copied by hand (a hand-copied log drifts from the code).
"""

from __future__ import annotations

import datetime
import os
import platform
import sys
from pathlib import Path
from typing import List, Sequence

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "docs" / "benchmarks" / "_generated"


def command_line() -> str:
    """The command as someone would type it again from the repository root."""
    script = Path(sys.argv[0]).resolve()
    try:
        shown = script.relative_to(ROOT).as_posix()
    except ValueError:
        shown = script.name
    return " ".join(["python", shown, *sys.argv[1:]])


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> str:
    """A Markdown table; ``align`` holds one letter a column ("l" or "r", default "l")."""
    marks = ["---:" if (align[i:i + 1] == "r") else "---" for i in range(len(header))]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(marks) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def separate_tables(body: str) -> str:
    """A blank line between a table and the text around it: Markdown would
    otherwise read the line after a table as one more row."""
    out: List[str] = []
    for line in body.splitlines():
        if out and out[-1].strip() and out[-1].startswith("|") != line.startswith("|") and line.strip():
            out.append("")
        out.append(line)
    return "\n".join(out)


def write_table(name: str, body: str) -> Path:
    """Write ``body`` (Markdown) to ``docs/benchmarks/_generated/<name>.md``
    under a line naming the command, the date and the machine; returns the path."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = "Python %s, %s, %d cores" % (platform.python_version(), platform.machine(), os.cpu_count() or 0)
    header = "<!-- written by benchmarks/docs_tables.py: run the command below again to refresh -->\n"
    header += "*`%s`, %s (%s).*\n\n" % (command_line(), now, machine)
    GENERATED.mkdir(parents=True, exist_ok=True)
    path = GENERATED / (name + ".md")
    path.write_text(header + separate_tables(body).rstrip("\n") + "\n", encoding="utf-8")
    print("table written to %s" % path.relative_to(ROOT))
    return path
