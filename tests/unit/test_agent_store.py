"""BaseStoreMemory over real LangGraph stores: exact namespaces, per-type
recall in one batch, exact reads (no paging), cached token counts, writes."""

from __future__ import annotations

import datetime
import re

import pytest
from exact_reads import check_every_item_is_read_exactly_once, counting
from langgraph.store.base import PutOp, SearchOp
from langgraph.store.memory import InMemoryStore
from lc_helpers import Counter, WordHashEmbedding

from poolsplit_adapters import EntryError, Pool
from poolsplit_adapters.langchain import BaseStoreMemory
from poolsplit_adapters.stores.langgraph.store import READ_ALL

NOW = datetime.datetime(2026, 7, 1)
U1 = ("memories", "u1")
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("recent", 10_000, 500, ("episode", "note"))]


class RecordingStore(InMemoryStore):
    """A real InMemoryStore that records every batch it runs."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.batches = []

    def batch(self, ops):
        ops = list(ops)
        self.batches.append(ops)
        return super().batch(ops)

    async def abatch(self, ops):
        ops = list(ops)
        self.batches.append(ops)
        return await super().abatch(ops)


def fix(n, ns=U1):
    return {
        "id": "%s-fix-%d" % (ns[-1], n),
        "content": "correction %d of %s" % (n, ns[-1]),
        "type": "correction",
        "scope": "always",
    }


def test_put_and_entries_round_trip_without_touching_the_callers_dict():
    memory = BaseStoreMemory(InMemoryStore(), U1)
    entry = {"content": "Deployed checkout.", "type": "episode", "tags": ["deploy"]}
    key = memory.put(entry)
    assert entry == {"content": "Deployed checkout.", "type": "episode", "tags": ["deploy"]}
    [got] = memory.entries()
    assert got["id"] == key and got["namespace"] == "memories.u1" and got["tags"] == ["deploy"]
    assert got["created"].endswith("Z")
    assert memory.store.get(U1, key).value == {k: v for k, v in got.items() if k not in ("id", "namespace")}


def test_child_and_sibling_namespaces_are_not_this_users_memory():
    store = InMemoryStore()
    memory = BaseStoreMemory(store, U1)
    memory.put(fix(1))
    BaseStoreMemory(store, U1 + ("drafts",)).put({"id": "draft", "content": "a draft", "type": "note"})
    BaseStoreMemory(store, ("memories", "u10")).put(fix(1, ("memories", "u10")))
    assert len(store.search(U1, limit=100)) == 2  # LangGraph matches the prefix
    assert [e["id"] for e in memory.entries()] == ["u1-fix-1"]
    selection = memory.select(POOLS, {"message": "draft"}, now=NOW)
    assert [c.entry["id"] for c in selection.chosen] == ["u1-fix-1"]


def test_without_ranking_one_exact_read_of_the_namespace_serves_every_search_of_the_plan():
    store = RecordingStore()
    memory = BaseStoreMemory(store, U1, token_counter=Counter())
    memory.put_many(
        [
            fix(1),
            {"id": "ep", "content": "an episode", "type": "episode"},
            {"id": "no", "content": "a note", "type": "note"},
            {"id": "un", "content": "an untyped entry (a note)"},
            {"id": "sk", "content": "a skill no pool admits", "type": "skill"},
            {"id": "sk-fix", "content": "an always-scope skill", "type": "skill", "scope": "always"},
        ]
    )
    store.batches.clear()
    recall = memory.recall(POOLS, {"message": "x"})
    assert len(store.batches) == 1
    [op] = store.batches[0]
    assert isinstance(op, SearchOp) and op.namespace_prefix == U1 and op.filter is None and op.query is None
    # kept: what the plan's searches (corrections by scope, episode, note, untyped) would find
    assert sorted(e["id"] for e in recall.entries) == ["ep", "no", "sk-fix", "u1-fix-1", "un"]


def test_pools_that_can_hold_only_corrections_recall_no_type():
    store = RecordingStore()
    memory = BaseStoreMemory(store, U1, token_counter=Counter())
    memory.select([Pool("fixes", 0, 0, ("correction",))], None, now=NOW)
    assert [op.filter for op in store.batches[-1]] == [{"scope": "always"}]
    memory.select([Pool("all", 100, 3)], None, now=NOW)
    assert [op.filter for op in store.batches[-1]] == [None]


def test_each_op_reads_past_search_limit_in_one_exact_query():
    store = RecordingStore()
    memory = BaseStoreMemory(store, U1, token_counter=Counter())
    memory.put_many([{"id": "ep-%03d" % i, "content": "episode %d" % i, "type": "episode"} for i in range(250)])
    assert len(store.search(U1)) == 10  # what a plain search returns
    store.batches.clear()
    recall = memory.recall(POOLS, {"message": "episode"})
    assert len(recall.entries) == 250
    # one op: the namespace, read whole in one exact query, never paged by offset
    assert [len(b) for b in store.batches] == [1]
    assert {op.offset for op in store.batches[0]} == {0} and all(op.limit > 250 for op in store.batches[0])
    assert len(memory.entries()) == 250


def test_a_rare_type_is_recalled_whatever_the_flood():
    memory = BaseStoreMemory(InMemoryStore(), U1, token_counter=Counter())
    memory.put_many([{"content": "note %d about deploys" % i, "type": "note", "base_priority": 9} for i in range(300)])
    memory.put({"id": "skill-1", "content": "bisect a regression", "type": "skill", "base_priority": 1})
    pools = [Pool("notes", 200, 5, ("note",)), Pool("skills", 100, 1, ("skill",))]
    selection = memory.select(pools, {"message": "deploys"}, now=NOW)
    assert [e["id"] for e in selection.pools["skills"]] == ["skill-1"]


@pytest.mark.parametrize("scope", ["Always", " always", "ALWAYS "])
def test_an_item_a_host_wrote_with_a_near_miss_scope_is_named_not_read_as_contextual(scope):
    # Our writes refuse it; written past them, it read as a contextual entry:
    # a correction that never loads first, and no report said why.
    store = InMemoryStore()
    memory = BaseStoreMemory(store, U1, token_counter=Counter())
    with pytest.raises(EntryError, match="not exactly 'always'"):
        memory.put({"id": "fix-2", "content": "Refunds over 500 need approval.", "type": "note", "scope": scope})
    store.put(U1, "fix-2", {"content": "Refunds over 500 need approval.", "type": "note", "scope": scope})
    with pytest.raises(EntryError, match=r"store item 'fix-2' in namespace 'memories\.u1': field 'scope' is ") as info:
        memory.select(POOLS, {"message": "refunds approval"}, now=NOW)
    assert info.value.entry_id == "fix-2" and info.value.field == "scope"
    store.put(U1, "fix-2", {"content": "Refunds over 500 need approval.", "type": "note", "scope": "always"})
    chosen = memory.select(POOLS, {"message": "refunds approval"}, now=NOW).chosen
    assert [(c.entry["id"], c.always) for c in chosen] == [("fix-2", True)]


@pytest.mark.parametrize(
    "content, found", [(["a", "list"], "list ['a', 'list']"), ({"text": "x"}, "dict {'text': 'x'}")]
)
async def test_an_item_a_host_wrote_with_content_of_an_unhashable_kind_is_named(content, found):
    # Before: "TypeError: unhashable type: 'list'" from the token-count cache's key.
    store = InMemoryStore()
    store.put(U1, "odd", {"content": content, "type": "episode"})
    memory = BaseStoreMemory(store, U1, token_counter=Counter())
    message = r"^store item 'odd' in namespace 'memories\.u1': field 'content' must be a string, got %s$" % re.escape(
        found
    )
    with pytest.raises(EntryError, match=message) as info:
        memory.select(POOLS, {"message": "episode"}, now=NOW)
    assert (info.value.entry_id, info.value.field) == ("odd", "content")
    with pytest.raises(EntryError, match=message):
        await memory.aselect(POOLS, {"message": "episode"}, now=NOW)


def test_token_counts_are_cached_by_namespace_key_and_updated_at():
    counter = Counter()
    memory = BaseStoreMemory(InMemoryStore(), U1, token_counter=counter)
    memory.put_many(
        [fix(1), fix(2)] + [{"id": "e%d" % i, "content": "episode %d" % i, "type": "episode"} for i in range(5)]
    )
    memory.select(POOLS, {"message": "episode"}, now=NOW)
    assert counter.calls == 7
    for _ in range(5):
        memory.select(POOLS, {"message": "another turn"}, now=NOW)
    assert counter.calls == 7  # unchanged store: no tokenizer call
    memory.put({"id": "e1", "content": "episode 1, corrected", "type": "episode"})  # new updated_at
    memory.put({"id": "e9", "content": "episode 9", "type": "episode", "token_count": 3})  # counted by its owner
    memory.select(POOLS, {"message": "episode"}, now=NOW)
    assert counter.calls == 8


def test_corrections_load_in_creation_order_then_key():
    memory = BaseStoreMemory(InMemoryStore(), U1, token_counter=Counter())
    for key in ("z", "a", "m"):
        memory.put({"id": key, "content": "fix " + key, "type": "correction", "scope": "always"})
    selection = memory.select(POOLS, None, now=NOW)
    created = [memory.store.get(U1, c.entry["id"]).created_at for c in selection.chosen]
    assert created == sorted(created)
    assert [c.entry["id"] for c in selection.chosen] == [
        k for _, k in sorted((memory.store.get(U1, k).created_at, k) for k in ("z", "a", "m"))
    ]


def test_an_explicit_chain_reads_shared_memory_with_the_penalty():
    store = InMemoryStore()
    shared = ("memories", "shared")
    BaseStoreMemory(store, shared).put_many(
        [fix(1, shared), {"id": "s-note", "content": "deploy checklist lives in the wiki", "type": "note"}]
    )
    own = BaseStoreMemory(store, U1, token_counter=Counter())
    own.put_many([fix(1), {"id": "o-note", "content": "deploy checklist lives in the wiki", "type": "note"}])
    assert [e["id"] for e in own.entries()] == ["u1-fix-1", "o-note"]  # no implicit widening
    chained = BaseStoreMemory(store, [U1, shared], chain_penalty=0.5, token_counter=Counter())
    selection = chained.select(POOLS, {"message": "deploy checklist"}, now=NOW)
    assert [c.entry["id"] for c in selection.chosen] == ["u1-fix-1", "shared-fix-1", "o-note", "s-note"]
    scores = {c.entry["id"]: c.score for c in selection.chosen if not c.always}
    assert scores["s-note"] == pytest.approx(scores["o-note"] * 0.5)
    assert chained.put({"content": "written to the own namespace", "type": "note"}) in {e["id"] for e in own.entries()}


def test_supersede_retires_the_old_entry_and_delete_forgets():
    memory = BaseStoreMemory(InMemoryStore(), U1, token_counter=Counter())
    memory.put({"id": "old", "content": "the API key rotates monthly", "type": "note"})
    new_id = memory.supersede("old", {"id": "new", "content": "the API key rotates weekly", "type": "note"})
    assert new_id == "new"
    assert memory.store.get(U1, "old").value["superseded_by"] == "new"
    selection = memory.select(POOLS, {"message": "API key"}, now=NOW)
    assert [c.entry["id"] for c in selection.chosen] == ["new"]
    assert [d.entry["id"] for d in selection.dropped] == ["old"]
    with pytest.raises(KeyError, match="'missing'"):
        memory.supersede("missing", {"content": "x"})
    with pytest.raises(ValueError, match="new id"):
        memory.supersede("new", {"id": "new", "content": "x"})
    assert memory.delete("old") is True and memory.delete("old") is False
    assert [e["id"] for e in memory.entries()] == ["new"]


def test_a_malformed_item_is_named_by_key_and_field():
    store = InMemoryStore()
    store.put(U1, "bad", {"content": "x", "type": "episode", "tags": "deploy"})
    with pytest.raises(EntryError, match="'bad'.*'tags'") as err:
        BaseStoreMemory(store, U1, token_counter=Counter()).select(POOLS, None, now=NOW)
    assert err.value.entry_id == "bad" and err.value.field == "tags"


def test_a_malformed_write_writes_nothing():
    store = InMemoryStore()
    memory = BaseStoreMemory(store, U1)
    with pytest.raises(EntryError, match="index 1: field 'tags'"):
        memory.put_many([{"id": "ok", "content": "fine"}, {"content": "x", "tags": "deploy"}])
    with pytest.raises(EntryError, match="'namespace'"):
        memory.put({"content": "x", "namespace": "memories.u2"})
    assert store.search(U1) == []


@pytest.mark.parametrize(
    "namespace, message",
    [
        ("memories", "non-empty tuple of strings"),
        ((), "non-empty tuple"),
        (("memories", ""), "label"),
        (("memories", "u.1"), "without '.'"),
        ([("memories", "u1"), ("memories", "u1")], "repeats"),
        # Found by an adversarial run: LangGraph's put() refuses this root, our batched writes took it.
        (("langgraph", "u1"), "root label 'langgraph' is LangGraph's own"),
        ([("memories", "u1"), ("langgraph",)], "root label 'langgraph' is LangGraph's own"),
    ],
)
def test_bad_namespaces_are_named(namespace, message):
    with pytest.raises(ValueError, match="namespace.*" + message.replace("(", r"\(")):
        BaseStoreMemory(InMemoryStore(), namespace)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="BaseStore"):
        BaseStoreMemory({}, U1)
    for name in ("cache_size", "fetch_k"):
        with pytest.raises(ValueError, match=name):
            BaseStoreMemory(InMemoryStore(), U1, **{name: 0})
    with pytest.raises(TypeError, match="page_size"):  # removed in 0.3 (it had no effect)
        BaseStoreMemory(InMemoryStore(), U1, page_size=50)


def test_an_indexed_store_gets_the_query_and_fetch_k_per_type():
    store = RecordingStore(index={"dims": 256, "embed": WordHashEmbedding()})
    memory = BaseStoreMemory(store, U1, token_counter=Counter(), fetch_k=2)
    topics = ["billing refunds", "deploy staging", "dedupe job", "payment retries", "deploy rollback"]
    memory.put_many(
        [{"id": "ep-%d" % i, "content": "episode about " + t, "type": "episode"} for i, t in enumerate(topics)]
    )
    memory.put_many([fix(1), {"id": "n1", "content": "a note on billing", "type": "note"}])
    store.batches.clear()
    recall = memory.recall(POOLS, {"message": "deploy staging rollback"})
    ops = store.batches[0]
    assert [op.query for op in ops] == [
        None,
        "deploy staging rollback",
        "deploy staging rollback",
        "deploy staging rollback",
    ]
    assert [op.limit for op in ops] == [READ_ALL, 2, 2, 2]  # corrections: read whole
    assert len(store.batches) == 1  # capped at fetch_k: no further pages
    ids = {e["id"] for e in recall.entries}
    assert {"ep-1", "ep-4"} <= ids and "u1-fix-1" in ids
    assert not ids & {"ep-0", "ep-2", "ep-3"}


async def test_async_twins_match_the_sync_methods():
    store = InMemoryStore()
    memory = BaseStoreMemory(store, U1, token_counter=Counter())
    await memory.aput_many([fix(1), {"id": "a", "content": "alpha episode", "type": "episode"}])
    await memory.aput({"id": "b", "content": "beta episode", "type": "episode"})
    sync = memory.select(POOLS, {"message": "beta"}, now=NOW)
    asynchronous = await memory.aselect(POOLS, {"message": "beta"}, now=NOW)
    assert [c.entry for c in asynchronous.chosen] == [c.entry for c in sync.chosen]
    assert await memory.aexisting(["a", "zz"]) == {"a"} == memory.existing(["a", "zz"])
    assert await memory.asupersede("a", {"id": "a2", "content": "alpha, again", "type": "episode"}) == "a2"
    assert await memory.adelete("b") is True and await memory.adelete("b") is False
    assert sorted(e["id"] for e in await memory.aentries()) == ["a", "a2", "u1-fix-1"]


async def test_async_supersede_back_to_a_closed_version_opens_a_version_of_its_own():
    # The async twin closed "b" into the closed "a" (a loop: nothing of the fact loaded).
    memory = BaseStoreMemory(InMemoryStore(), U1, token_counter=Counter())
    a = {"id": "a", "type": "fact", "content": "Deploys go out from staging.", "source": "s1"}
    await memory.aadd([dict(a, created="2026-01-01T00:00:00Z")])
    await memory.asupersede("a", {"id": "b", "type": "fact", "content": "Deploys go out from main.", "source": "s2"})
    returned = await memory.asupersede("b", dict(a, source="s4", created="2026-04-01T00:00:00Z"))
    assert returned == "fact-af6c8e6ffad9589b0379d198" == memory.get("b")["superseded_by"]
    assert [v.id for v in memory.history(returned)] == ["a", "b", returned]


def test_put_many_is_one_batch_of_puts():
    store = RecordingStore()
    BaseStoreMemory(store, U1).put_many([{"content": "one"}, {"content": "two"}])
    assert len(store.batches) == 1 and all(isinstance(op, PutOp) for op in store.batches[0])


def test_ten_thousand_items_of_one_batch_are_each_read_once_on_in_memory_store():
    check_every_item_is_read_exactly_once(counting(InMemoryStore)())


def test_ten_thousand_items_of_one_batch_are_each_read_once_on_sqlite_store(tmp_path):
    import sqlite3

    from langgraph.store.sqlite import SqliteStore

    conn = sqlite3.connect(str(tmp_path / "lg.db"), check_same_thread=False, isolation_level=None)
    store = counting(SqliteStore)(conn)
    store.setup()
    check_every_item_is_read_exactly_once(store)


@pytest.mark.parametrize("answer", [0, 2.7, -1, True])
def test_an_item_costs_what_the_core_says_a_bad_counter_answer_is_an_entry_error(answer):
    # Before: BaseStoreMemory costed max(1, int(answer)): 0 -> 1, 2.7 -> 2, silently.
    memory = BaseStoreMemory(InMemoryStore(), U1, token_counter=lambda text: answer)
    memory.put({"id": "ep-1", "content": "an episode", "type": "episode"})
    with pytest.raises(EntryError, match="'ep-1'.*token_count.*returned %r" % (answer,)) as err:
        memory.select(POOLS, None, now=NOW)
    assert err.value.entry_id == "ep-1"
