"""The memories, pools and checks of the kept-index tests over LangGraph's
Postgres stores (sync and async alike)."""

from __future__ import annotations

import datetime
from typing import Any, Awaitable, Callable, List

from agent_fakes import ToolCallingFakeModel, markers

from poolsplit_adapters import Pool
from poolsplit_adapters.render import marker_tokens
from poolsplit_adapters.tokens import default_counter

NOW = datetime.datetime(2026, 7, 7, tzinfo=datetime.timezone.utc)
U1 = ("memories", "u1")
#: What the middleware counts for each entry's marker beside its text.
MARK = marker_tokens(default_counter(), "notes")
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("notes", 60 + 3 * MARK, 3, ("note", "episode"))]


def fix(n: int, text: str = "") -> dict:
    """Correction ``n`` (always-scope), with its default text unless given."""
    return {"id": "fix-%d" % n, "type": "correction", "scope": "always", "content": text or "Correction %d." % n}


def seed() -> List[dict]:
    """Three corrections and twenty notes."""
    return [fix(n) for n in range(3)] + [
        {"id": "note-%02d" % n, "type": "note", "content": "deploy note %d" % n} for n in range(20)
    ]


def fixes_shown(model: ToolCallingFakeModel) -> List[tuple]:
    """(id, content) of the corrections in the model's last request."""
    return [(m["id"], m["content"]) for m in markers(model.requests[-1]) if m.get("scope") == "always"]


def record_abatch(store: Any) -> List[Any]:
    """Note every op the async ``store``'s ``abatch`` runs (the real store
    answers); returns the list they are appended to."""
    asked: List[Any] = []
    abatch: Callable[[Any], Awaitable[Any]] = store.abatch

    async def recording(ops: Any) -> Any:
        ops = list(ops)
        asked.extend(ops)
        return await abatch(ops)

    store.abatch = recording
    return asked


def assert_a_fresh_recalls(got: Any, store: Any, settings: Any, context: Any, fetch_k: Any = None) -> None:
    """``got`` (a kept index's selection) is what a fresh recall of ``store``
    selects, ranked and counted as the middleware's ``settings`` rank and
    count: the same report and the same rendered text."""
    from poolsplit_adapters.langchain import BaseStoreMemory
    from poolsplit_adapters.render import render_context, selection_dict

    fresh = BaseStoreMemory(store, U1, fetch_k=fetch_k, token_counter=settings.token_counter)
    expected = fresh.select_from(fresh.recall(POOLS, context), POOLS, context, now=NOW, scorer=settings.scorer)
    assert selection_dict(got, dropped=None) == selection_dict(expected, dropped=None)
    assert render_context(got).text == render_context(expected).text


def others_writes(other: Any) -> None:
    """Another connection's writes between two turns: a rewrite of the same
    length (only the content tells), an insert, a delete, and a child
    namespace's insert (not ours). After them the corrections are
    :data:`AFTER_OTHERS`."""
    from poolsplit_adapters.langchain import BaseStoreMemory

    writer = BaseStoreMemory(other, U1)
    writer.put(fix(1, "Korrection 1."))
    writer.put(fix(7))
    other.delete(U1, "fix-2")
    BaseStoreMemory(other, (*U1, "drafts")).put(fix(9))


#: The corrections shown after :func:`others_writes`.
AFTER_OTHERS = [("fix-0", "Correction 0."), ("fix-1", "Korrection 1."), ("fix-7", "Correction 7.")]
