"""The middleware's prepared recall over a LangGraph store: kept between
turns while the namespace is unchanged, and never stale when another
writer (another instance, another connection) changed it."""

from __future__ import annotations

import datetime
import pathlib
import sqlite3
import tempfile
from typing import Any, List

import pytest
from agent_fakes import ToolCallingFakeModel, markers, thread
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore, SearchOp
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore
from lc_helpers import WordHashEmbedding

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware, RecallConfig, WriteConfig
from poolsplit_adapters.langchain.backends import backend_for
from poolsplit_adapters.render import marker_tokens, render_context, selection_dict
from poolsplit_adapters.stores.langgraph.backends import Plan
from poolsplit_adapters.tokens import default_counter

NOW = datetime.datetime(2026, 7, 7, tzinfo=datetime.timezone.utc)
U1 = ("memories", "u1")
#: What the middleware counts for each entry's marker beside its text.
MARK = marker_tokens(default_counter(), "skills")
POOLS = [
    Pool("fixes", 0, 0, ("correction",)),
    Pool("notes", 60 + 3 * MARK, 3, ("note", "episode")),
    Pool("skills", 30 + MARK, 1, ("skill",)),
]
KINDS = ["in-memory", "sqlite", "sqlite with ttl (no watermark)"]
#: A LangGraph store's vector index (SqliteStore's needs sqlite-vec loaded, which this Python's sqlite3 cannot).
INDEX = {"dims": 256, "embed": WordHashEmbedding()}


def _fix(n: int, text: str = "") -> dict:
    return {"id": "fix-%d" % n, "type": "correction", "scope": "always", "content": text or "Correction %d." % n}


def _seed() -> List[dict]:
    entries = [_fix(n) for n in range(3)]
    entries += [{"id": "note-%02d" % n, "type": "note", "content": "deploy note %d" % n} for n in range(30)]
    entries += [{"id": "skill-1", "type": "skill", "content": "bisect a deploy regression"}]
    return entries


class Stores:
    """Two handles on one store: the agent's, and another writer's (the
    same object for InMemoryStore, which lives in one process; another
    connection to the same file for SQLite)."""

    def __init__(self, kind: str, tmp_path: Any) -> None:
        self.kind = kind
        if kind.startswith("in-memory"):
            self.agent = self.other = InMemoryStore(index=INDEX if "indexed" in kind else None)
            return
        path = str(tmp_path / "lg.db")
        ttl = {"default_ttl": 10_000} if "ttl" in kind else None
        self.agent = SqliteStore(self._conn(path), ttl=ttl)
        self.agent.setup()
        self.other = SqliteStore(self._conn(path), ttl=ttl)

    @staticmethod
    def _conn(path: str) -> sqlite3.Connection:
        return sqlite3.connect(path, check_same_thread=False, isolation_level=None)


def _agent(store: BaseStore, model: ToolCallingFakeModel) -> Any:
    middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW, write=WriteConfig(remember=False))
    return create_agent(model, middleware=[middleware], checkpointer=InMemorySaver(), store=store)


def _fixes(model: ToolCallingFakeModel) -> List[tuple]:
    """(id, content) of the corrections the model saw in its last request."""
    return [(m["id"], m["content"]) for m in markers(model.requests[-1]) if m.get("scope") == "always"]


@pytest.mark.parametrize("kind", [*KINDS, "in-memory, vector-indexed"])
def test_the_next_turn_sees_what_another_writer_changed_between_turns(kind, tmp_path):
    stores = Stores(kind, tmp_path)
    BaseStoreMemory(stores.agent, U1).put_many(_seed())
    model = ToolCallingFakeModel()
    agent = _agent(stores.agent, model)
    agent.invoke({"messages": [HumanMessage("deploy?")]}, thread("t1"))
    assert _fixes(model) == [("fix-%d" % n, "Correction %d." % n) for n in range(3)]
    agent.invoke({"messages": [HumanMessage("deploy again?")]}, thread("t1"))  # unchanged: the kept index
    assert _fixes(model) == [("fix-%d" % n, "Correction %d." % n) for n in range(3)]
    # Another writer, between turns: a rewrite of the same length within the
    # same second (SQLite's updated_at has one-second resolution), a new
    # correction, a deletion, and an item in a child namespace (not ours).
    other = BaseStoreMemory(stores.other, U1)
    other.put(_fix(1, "Korrection 1."))
    other.put(_fix(7))
    stores.other.delete(U1, "fix-2")
    BaseStoreMemory(stores.other, (*U1, "drafts")).put(_fix(9))
    agent.invoke({"messages": [HumanMessage("and now?")]}, thread("t1"))
    assert _fixes(model) == [("fix-0", "Correction 0."), ("fix-1", "Korrection 1."), ("fix-7", "Correction 7.")]


def _fresh(store: BaseStore, pools: List[Pool], message: str, settings: Any) -> Any:
    """What a fresh recall selects, ranked and counted as the middleware
    (``settings``) ranks and counts."""
    scorer = settings.scorer
    memory = BaseStoreMemory(store, U1, token_counter=settings.token_counter)
    recalled = memory.recall(pools, {"message": message})
    return memory.select_from(recalled, pools, {"message": message}, now=NOW, scorer=scorer)


@pytest.mark.parametrize("kind", KINDS)
def test_the_kept_selection_is_the_one_a_fresh_recall_makes_after_every_write(kind, tmp_path):
    stores = Stores(kind, tmp_path)
    writer = BaseStoreMemory(stores.other, U1)
    writer.put_many(_seed())
    middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW, write=WriteConfig(remember=False))
    backend = backend_for(stores.agent, middleware.settings)
    plan = Plan(list(POOLS))
    writes = [
        lambda: None,
        lambda: writer.put({"id": "note-05", "type": "note", "content": "deploy note five, rewritten"}),
        lambda: writer.put_many(
            [{"id": "new-%d" % n, "type": "episode", "content": "deploy ep %d" % n} for n in range(4)]
        ),
        lambda: stores.other.delete(U1, "note-00"),
        lambda: writer.put({"id": "skill-2", "type": "skill", "content": "deploy deploy deploy skill"}),
        lambda: writer.put({"id": "odd", "type": "growth", "content": "a type no pool reads"}),
        lambda: writer.put(_fix(0, "Correction 0, reworded.")),
    ]
    for write in writes:
        write()
        context = {"message": "deploy", "tags": [], "project": None}
        snap = backend.snapshot([U1], context, plan)
        got = backend.select(snap, [U1], context, plan)
        expected = _fresh(stores.agent, POOLS, "deploy", middleware.settings)
        assert selection_dict(got, dropped=None) == selection_dict(expected, dropped=None)
        assert render_context(got).text == render_context(expected).text
        again = backend.snapshot([U1], context, plan)
        assert again.version == snap.version  # nothing changed since: the same version


class RoundTrips(InMemoryStore):
    """The real InMemoryStore, counting the batches it answers."""

    calls = 0

    def batch(self, ops: Any) -> List[Any]:
        self.calls += 1
        return super().batch(ops)


def test_an_unchanged_namespace_costs_no_store_read_per_turn():
    store = RoundTrips()
    BaseStoreMemory(store, U1).put_many(_seed())
    model = ToolCallingFakeModel()
    agent = _agent(store, model)
    agent.invoke({"messages": [HumanMessage("deploy?")]}, thread("t1"))
    before = store.calls
    for n in range(3):
        agent.invoke({"messages": [HumanMessage("deploy %d?" % n)]}, thread("t1"))
        assert len(_fixes(model)) == 3  # corrections on every model call
    assert store.calls == before


def test_a_version_is_the_same_for_two_middleware_objects_over_one_content(tmp_path):
    stores = Stores("sqlite", tmp_path)
    BaseStoreMemory(stores.agent, U1).put_many(_seed())
    plan, context = Plan(list(POOLS)), {"message": "deploy", "tags": [], "project": None}
    versions = []
    for store in (stores.agent, stores.other):
        middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW, write=WriteConfig(remember=False))
        versions.append(backend_for(store, middleware.settings).snapshot([U1], context, plan).version)
    assert versions[0] == versions[1]
    BaseStoreMemory(stores.other, U1).put(_fix(1, "Korrection 1."))
    middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW, write=WriteConfig(remember=False))
    assert backend_for(stores.other, middleware.settings).snapshot([U1], context, plan).version != versions[0]


def test_own_writes_are_read_by_key_and_any_other_write_still_shows(tmp_path):
    stores = Stores("sqlite", tmp_path)
    BaseStoreMemory(stores.agent, U1).put_many(_seed())
    middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW, write=WriteConfig(remember=False))
    backend = backend_for(stores.agent, middleware.settings)
    plan, context = Plan(list(POOLS)), {"message": "deploy", "tags": [], "project": None}

    def check() -> Any:
        snap = backend.snapshot([U1], context, plan)
        got = backend.select(snap, [U1], context, plan)
        expected = _fresh(stores.agent, POOLS, "deploy", middleware.settings)
        assert selection_dict(got, dropped=None) == selection_dict(expected, dropped=None)
        return snap.prepared

    prepared = check()
    reads = prepared.reads
    backend.write([U1], [{"id": "ep-1", "type": "episode", "content": "deploy episode one"}])
    check()
    assert prepared.reads == reads + 2  # the written key only: its row, its item
    # Another write on the same connection after the middleware's own: the
    # noted delta is not the whole story, so the namespace's rows are read.
    backend.write([U1], [{"id": "ep-2", "type": "episode", "content": "deploy episode two"}])
    BaseStoreMemory(stores.agent, U1).put(_fix(1, "Korrection 1."))
    reads = prepared.reads
    check()
    assert prepared.reads == reads + 2  # the rows of the namespace, then the changed items
    assert ("fix-1", "Korrection 1.") in [
        (c.entry["id"], c.entry["content"])
        for c in backend.select(backend.snapshot([U1], context, plan), [U1], context, plan).chosen
    ]


def test_a_noted_write_is_trusted_only_when_nothing_else_changed_in_between(tmp_path):
    stores = Stores("sqlite", tmp_path)
    BaseStoreMemory(stores.agent, U1).put_many(_seed())
    middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW, write=WriteConfig(remember=False))
    backend = backend_for(stores.agent, middleware.settings)
    plan, context = Plan(list(POOLS)), {"message": "deploy", "tags": [], "project": None}
    prepared = backend.snapshot([U1], context, plan).prepared
    before = prepared._token
    _, version, changes = before
    for after in [("sqlite", version, changes + 2), ("sqlite", version + 1, changes + 1)]:
        prepared.wrote(0, ["ep-1"], before, after)  # one key, but two changes / another connection committed
        assert prepared._own is None
    prepared.wrote(0, ["ep-1"], before, ("sqlite", version, changes + 1))
    assert prepared._own is not None


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "own", "rewrite", "delete", "child"]),
        st.integers(0, 7),
        st.sampled_from(["note", "episode", "skill", "correction", "growth"]),
    ),
    min_size=1,
    max_size=8,
)


@settings(deadline=None)
@given(ops=_OPS, kind=st.sampled_from(["in-memory", "sqlite"]))
def test_after_any_writes_the_kept_selection_is_a_fresh_recalls(ops, kind):
    """Invariant: whatever mix of writes (the middleware's own, another
    writer's new items, rewrites, deletions, a child namespace's items)
    happened since the last turn, the kept index selects what a fresh recall
    of the namespace selects, report and rendering alike. An InMemoryStore's
    watermark is its items compared."""
    with tempfile.TemporaryDirectory() as folder:
        stores = Stores(kind, pathlib.Path(folder))
        BaseStoreMemory(stores.agent, U1).put_many(_seed()[:8])
        middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW, write=WriteConfig(remember=False))
        backend = backend_for(stores.agent, middleware.settings)
        plan, context = Plan(list(POOLS)), {"message": "deploy", "tags": [], "project": None}
        other = BaseStoreMemory(stores.other, U1)
        backend.snapshot([U1], context, plan)
        for op, n, kind_of in ops:
            entry = {"id": "k%d" % n, "type": kind_of, "content": "deploy %s %d" % (kind_of, n)}
            if kind_of == "correction":
                entry["scope"] = "always"
            if op == "put":
                other.put(entry)
            elif op == "own":  # the middleware's ids are content keys: one id, one text
                backend.write([U1], [dict(entry, id="own-%s-%d" % (kind_of, n))])
            elif op == "rewrite":
                other.put(dict(entry, content="rewritten %d!" % n))
            elif op == "delete":
                stores.other.delete(U1, "k%d" % n)
            else:
                BaseStoreMemory(stores.other, (*U1, "child")).put(entry)
            snap = backend.snapshot([U1], context, plan)
            got = backend.select(snap, [U1], context, plan)
            expected = _fresh(stores.agent, POOLS, "deploy", middleware.settings)
            assert selection_dict(got, dropped=None) == selection_dict(expected, dropped=None)
            assert render_context(got).text == render_context(expected).text


class Recording(InMemoryStore):
    """The real InMemoryStore, keeping every op it is asked."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ops: List[Any] = []

    def batch(self, ops: Any) -> List[Any]:
        ops = list(ops)
        self.ops += ops
        return super().batch(ops)


def _fresh_ranked(store: BaseStore, message: str, settings: Any, fetch_k: int) -> Any:
    """What a fresh recall ranked by the store's vector index selects,
    counted as the middleware (``settings``) counts."""
    memory = BaseStoreMemory(store, U1, fetch_k=fetch_k, token_counter=settings.token_counter)
    recalled = memory.recall(POOLS, {"message": message})
    return memory.select_from(recalled, POOLS, {"message": message}, now=NOW, scorer=settings.scorer)


def test_a_ranked_recall_takes_its_corrections_from_the_kept_index_and_selects_a_fresh_recalls():
    """On a vector-indexed store the ranked searches (fetch_k a type) are all
    the store is asked: the corrections come from a kept index of them,
    brought up to date by the watermark, and the selection is the one a
    fresh recall (corrections read by filter) makes, after every kind of
    write, by the middleware and by another writer."""
    store = Recording(index=INDEX)
    writer = BaseStoreMemory(store, U1)
    writer.put_many(_seed())
    middleware = PoolSplitMemoryMiddleware(
        POOLS, namespace=U1, now=NOW, recall=RecallConfig(fetch_k=2), write=WriteConfig(remember=False)
    )
    backend = backend_for(store, middleware.settings)
    plan, context = Plan(list(POOLS)), {"message": "deploy", "tags": [], "project": None}
    writes = [
        lambda: None,
        lambda: writer.put(_fix(7)),
        lambda: writer.put(_fix(1, "Correction 1, reworded.")),
        lambda: store.delete(U1, "fix-2"),
        lambda: BaseStoreMemory(store, (*U1, "drafts")).put(_fix(9)),  # a child namespace: not ours
        lambda: writer.put({"id": "note-99", "type": "note", "content": "deploy deploy note"}),
        lambda: backend.write([U1], [{"id": "ep-1", "type": "episode", "content": "deploy episode one"}]),
        lambda: writer.put({"id": "fix-8", "type": "note", "scope": "always", "content": "Untyped-pool fix."}),
    ]
    for write in writes:
        write()
        store.ops.clear()
        snap = backend.snapshot([U1], context, plan)
        got = backend.select(snap, [U1], context, plan)
        searches = [op for op in store.ops if isinstance(op, SearchOp)]
        assert searches and all(op.query == "deploy" and op.limit == 2 for op in searches)  # no read by filter
        expected = _fresh_ranked(store, "deploy", middleware.settings, 2)
        assert selection_dict(got, dropped=None) == selection_dict(expected, dropped=None)
        assert render_context(got).text == render_context(expected).text
    fixes = [c.entry["id"] for c in got.chosen if c.entry.get("scope") == "always"]
    assert sorted(fixes) == ["fix-0", "fix-1", "fix-7", "fix-8"]  # in the order a fresh recall gives


async def test_the_async_ranked_recall_takes_the_kept_corrections_too():
    store = Recording(index=INDEX)
    BaseStoreMemory(store, U1).put_many(_seed())
    middleware = PoolSplitMemoryMiddleware(
        POOLS, namespace=U1, now=NOW, recall=RecallConfig(fetch_k=2), write=WriteConfig(remember=False)
    )
    backend = backend_for(store, middleware.settings)
    plan, context = Plan(list(POOLS)), {"message": "deploy", "tags": [], "project": None}
    await backend.asnapshot([U1], context, plan)
    BaseStoreMemory(store, U1).put(_fix(5))
    store.ops.clear()
    snap = await backend.asnapshot([U1], context, plan)
    got = await backend.aselect(snap, [U1], context, plan)
    assert all(op.query == "deploy" for op in store.ops if isinstance(op, SearchOp))
    expected = _fresh_ranked(store, "deploy", middleware.settings, 2)
    assert selection_dict(got, dropped=None) == selection_dict(expected, dropped=None)
    assert "fix-5" in {c.entry["id"] for c in got.chosen}
