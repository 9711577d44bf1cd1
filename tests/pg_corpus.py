"""The memory the Postgres tests store: a busy turn where fresh, highly similar
deploy notes flood any plain top-k, next to a thin tail of skills and growth
notes and a few standing corrections that share no word with the query.

Entries are plain dicts (the package's schema); each test turns them into its
framework's objects. Every entry carries an explicit ``type``: dict filters in
a database see only what is stored (see the dialect tests).
"""

from __future__ import annotations

import datetime
from typing import Any, Dict, List, Optional

from langchain_core.documents import Document

from poolsplit_adapters import Pool

NOW = datetime.datetime(2026, 7, 7, 12, 0, 0)
QUERY = "did the checkout deploy to staging finish"
POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("content", 400, 6, ("note", "task", "fact")),
    Pool("skills", 120, 2, ("skill",)),
    Pool("growth", 80, 1, ("growth",)),
]
CORRECTIONS = [
    "Never force-push to the main branch; open a pull request instead.",
    "Run the linter before proposing any diff.",
    "Quote money amounts in integer cents, never floats.",
]
SKILLS = [
    "Skill: bisect a regression with git bisect run and the failing test.",
    "Skill: read a flame graph from the slowest frame upward.",
    "Skill: write the migration and its rollback in one commit.",
]
GROWTH = [
    "Growth: ask what done looks like before writing code.",
    "Growth: say what I do not know yet, early.",
]


def _entry(entry_id: str, content: str, kind: str, created: str, source: str, priority: int) -> Dict[str, Any]:
    return {
        "id": entry_id,
        "content": content,
        "type": kind,
        "created": created,
        "source": source,
        "base_priority": priority,
    }


def entries(namespace: Optional[str] = None, prefix: str = "", notes: int = 12) -> List[Dict[str, Any]]:
    """Corrections (always-scope), ``notes`` deploy notes, skills, growth notes.

    Deploy note ``n`` ends with ``n`` repetitions of "again" (a word whose
    hashed features miss the query's), so its similarity to the query falls
    strictly with ``n``: no ties for a database to order as it likes.
    """
    out: List[Dict[str, Any]] = []
    for n, text in enumerate(CORRECTIONS):
        fix = _entry("%sfix-%d" % (prefix, n), text, "correction", "2026-03-01T00:00:00Z", "user-feedback", 1)
        out.append({**fix, "scope": "always"})
    for n in range(notes):
        text = "Deploy log: the checkout deploy to staging finished, checks green." + " again" * n
        out.append(_entry("%snote-%02d" % (prefix, n), text, "note", "2026-07-0%dT00:00:00Z" % (1 + n % 6), "ci", 9))
    for n, text in enumerate(SKILLS):
        out.append(_entry("%sskill-%d" % (prefix, n), text, "skill", "2026-05-0%dT00:00:00Z" % (1 + n), "notes", 3))
    for n, text in enumerate(GROWTH):
        out.append(_entry("%sgrowth-%d" % (prefix, n), text, "growth", "2026-04-0%dT00:00:00Z" % (1 + n), "retro", 2))
    if namespace is not None:
        for entry in out:
            entry["namespace"] = namespace
    return out


def documents(items: List[Dict[str, Any]]) -> List[Document]:
    """LangChain documents: content as page content, id as document id."""
    return [
        Document(
            page_content=e["content"], id=e["id"], metadata={k: v for k, v in e.items() if k not in ("content", "id")}
        )
        for e in items
    ]
