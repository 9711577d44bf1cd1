"""The lifecycle on every write path: a repeat is stored once and reported,
its provenance kept in ``seen``; supersede has one semantics with validity
times and ``history``; expired entries are inactive and reported; and
``forget(namespace=...)`` leaves nothing behind."""

from __future__ import annotations

import datetime
import json
import pathlib
from typing import Any, Callable, Dict, List

import pytest
from agent_fakes import ToolCallingFakeModel, scripted_agent, thread
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.memory import InMemoryStore
from llama_index.core.base.llms.types import ChatMessage

from poolsplit_adapters import EntryError, Pool, Visibility
from poolsplit_adapters.cli import main
from poolsplit_adapters.errors import ArgumentError
from poolsplit_adapters.langchain import BaseStoreMemory, HashEmbeddings, PoolSplitMemoryMiddleware, RecallConfig
from poolsplit_adapters.langchain.vector_memory import VectorStoreMemory
from poolsplit_adapters.llama_index import PoolSplitMemoryStore
from poolsplit_adapters.memory import UnknownEntryError
from poolsplit_adapters.memory.write_gate import WriteGate
from poolsplit_adapters.poolsplit import default_token_counter
from poolsplit_adapters.stores import InProcessStore, SQLiteMemoryStore

NOW = datetime.datetime(2026, 7, 7, tzinfo=datetime.timezone.utc)
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("notes", 400, 10, ("note", "fact", "episode"))]
U1 = ("memories", "u1")
LABEL = "memories.u1"


def counter(text: str) -> int:
    return max(1, len(text) // 4)


def clock() -> datetime.datetime:
    return NOW


STORES: Dict[str, Callable[[pathlib.Path], Any]] = {
    "sqlite": lambda tmp: SQLiteMemoryStore(tmp / "memory.db", token_counter=counter, clock=clock),
    "in-process": lambda tmp: InProcessStore(token_counter=counter, clock=clock),
    "basestore": lambda tmp: BaseStoreMemory(InMemoryStore(), U1, token_counter=counter),
    "basestore-indexed": lambda tmp: BaseStoreMemory(
        InMemoryStore(index={"dims": 256, "embed": HashEmbeddings()}), U1, token_counter=counter
    ),
    "langchain-vectorstore": lambda tmp: VectorStoreMemory(
        InMemoryVectorStore(HashEmbeddings()), token_counter=counter
    ),
    "llama-memory-store": lambda tmp: PoolSplitMemoryStore([], POOLS, token_counter=counter),
    "llama-over-sqlite": lambda tmp: PoolSplitMemoryStore(
        [],
        POOLS,
        store=SQLiteMemoryStore(tmp / "durable.db", token_counter=counter, clock=clock),
        token_counter=counter,
    ),
}


@pytest.fixture(params=sorted(STORES))
def store(request: Any, tmp_path: pathlib.Path) -> Any:
    return STORES[request.param](tmp_path)


def note(content: str, source: str, created: str, **extra: Any) -> Dict[str, Any]:
    entry = {"type": "note", "content": content, "source": source, "created": created, "namespace": LABEL}
    entry.update(extra)
    return entry


# -- duplicates: every store ------------------------------------------------------------


def test_every_store_keeps_one_entry_for_a_repeat_and_records_where_it_was_seen(store):
    [kept] = store.add([note("User prefers dark mode in every editor.", "thread:a", "2026-07-01T09:00:00Z")])
    report = store.write(
        [
            note("user prefers dark mode   in every editor.", "thread:b", "2026-07-02T09:00:00Z"),  # exact
            note("Note: the user prefers dark mode in every editor", "thread:c", "2026-07-03T09:00:00Z"),  # near
            note("User prefers light mode in every editor.", "thread:d", "2026-07-04T09:00:00Z"),  # another fact
        ]
    )
    assert report.ids[:2] == [kept, kept] and report.ids[2] != kept
    assert [(position, hit.kind.value) for position, hit in report.duplicates] == [(0, "exact"), (1, "near")]
    assert report.to_dict() == {"written": 1, "refused": {"duplicate": 2}}
    assert sorted(e["content"] for e in store.entries()) == [
        "User prefers dark mode in every editor.",
        "User prefers light mode in every editor.",
    ]
    assert store.get(kept)["seen"] == [
        {"source": "thread:b", "at": "2026-07-02T09:00:00Z"},
        {"source": "thread:c", "at": "2026-07-03T09:00:00Z"},
    ]
    # a retried write of the same repeat is not recorded twice
    store.add([note("user prefers dark mode in every editor.", "thread:b", "2026-07-02T09:00:00Z")])
    assert len(store.get(kept)["seen"]) == 2


def test_a_batch_that_repeats_itself_stores_its_first_copy(store):
    report = store.write(
        [
            note("Deploys go through the release checklist.", "thread:a", "2026-07-01T09:00:00Z"),
            note("deploys go through the release checklist", "thread:b", "2026-07-01T10:00:00Z"),
        ]
    )
    [entry] = store.entries()
    assert report.ids == [entry["id"], entry["id"]]
    assert entry["seen"] == [{"source": "thread:b", "at": "2026-07-01T10:00:00Z"}]


def test_repeats_are_matched_within_namespace_type_and_scope_only(store):
    """Another type, another scope (and, where a store holds several
    namespaces, another namespace) is another memory, not a repeat. A
    BaseStoreMemory writes to its own namespace only, so it is given none."""
    others = [
        note("Refunds round half-even.", "b", "2026-07-01T00:00:00Z", type="note"),  # another type
        note("Refunds round half-even.", "d", "2026-07-01T00:00:00Z", type="fact", scope="always"),
    ]
    if not isinstance(store, BaseStoreMemory):
        others.append(
            note("Refunds round half-even.", "c", "2026-07-01T00:00:00Z", type="fact", namespace="memories.u2")
        )
    store.add([note("Refunds round half-even.", "a", "2026-07-01T00:00:00Z", type="fact")])
    store.add(others)
    assert len(store.entries()) == 1 + len(others) and not any("seen" in e for e in store.entries())


def test_a_superseded_entry_absorbs_no_repeat(store):
    [old] = store.add([note("Staging DB is db-7 for the payments team.", "a", "2026-07-01T00:00:00Z")])
    store.supersede(old, note("Staging DB is db-9 for the payments team.", "b", "2026-07-02T00:00:00Z"))
    [again] = store.add([note("Staging DB is db-7 for the payments team.", "c", "2026-07-03T00:00:00Z")])
    assert again != old and "seen" not in store.get(old)


# -- duplicates: no score changes (property) ------------------------------------------

WORDS = ["deploy", "staging", "refund", "invoice", "checklist", "rollback", "metrics", "release", "db-7", "friday"]
texts = st.lists(st.sampled_from(WORDS), min_size=3, max_size=7).map(" ".join)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contents=st.lists(texts, min_size=1, max_size=8, unique=True), pick=st.integers(0, 100), data=st.data())
def test_a_repeat_never_changes_any_score_or_selection(contents, pick, data):
    store = InProcessStore(token_counter=counter, clock=clock)
    store.add([note(text, "thread:%d" % i, "2026-06-%02dT00:00:00Z" % (i + 1)) for i, text in enumerate(contents)])
    context = {"message": data.draw(texts, label="message")}

    def picture() -> List[Any]:
        selection = store.select(POOLS, context, now=NOW)
        return [(c.entry["id"], c.pool, c.score) for c in selection.chosen] + [
            (d.entry["id"], d.reason, d.score) for d in selection.dropped
        ]

    before = picture()
    original = contents[pick % len(contents)]
    repeat = data.draw(st.sampled_from([original, original.upper(), "  %s  " % original, "%s!" % original]))
    report = store.write([note(repeat, "thread:late", "2026-07-06T00:00:00Z")])
    assert report.to_dict()["refused"] == {"duplicate": 1}
    assert picture() == before


# -- duplicates: the agent's and LlamaIndex's paths, the CLI -----------------------------


def _middleware() -> PoolSplitMemoryMiddleware:
    return PoolSplitMemoryMiddleware(
        POOLS,
        namespace=lambda rt: U1,
        max_turns=1,
        now=datetime.datetime(2026, 7, 1, 8, 30),
        recall=RecallConfig(token_counter=default_token_counter),
    )


def test_the_same_episode_demoted_by_two_threads_is_stored_once_with_both_sources():
    store = InMemoryStore()
    for thread_id in ("t1", "t2"):  # a fresh model each: the same answers in both threads
        agent = scripted_agent(_middleware(), store, model=ToolCallingFakeModel())
        for text in ("hello there", "what is new"):
            agent.invoke({"messages": [("user", text)]}, thread(thread_id), context={"user_id": "u1"})
    episodes = [e for e in BaseStoreMemory(store, U1).entries() if e["type"] == "episode"]
    [greeting] = [e for e in episodes if "hello there" in e["content"]]
    assert greeting["source"] == "thread:t1"
    assert greeting["seen"] == [{"source": "thread:t2", "at": "2026-07-01T08:30:00Z"}]
    assert len(episodes) == len({e["content"] for e in episodes})


def test_remember_reports_a_near_repeat_as_a_duplicate_of_the_kept_note():
    store = InMemoryStore()
    mw = PoolSplitMemoryMiddleware(
        POOLS, namespace=lambda rt: U1, now=NOW, recall=RecallConfig(token_counter=default_token_counter)
    )
    agent = scripted_agent(mw, store, model=ToolCallingFakeModel())
    answers, writes = [], []
    turns = [
        ("t1", "remember=Staging deploys need the release checklist"),
        ("t2", "remember=Note: staging deploys need the release checklist"),
        ("t2", "thanks"),
    ]
    for thread_id, text in turns:
        for mode, chunk in agent.stream(
            {"messages": [("user", text)]},
            thread(thread_id),
            context={"user_id": "u1"},
            stream_mode=["custom", "values"],
        ):
            if mode == "custom":
                writes.append(chunk["poolsplit_selection"]["writes"])
            else:
                last = chunk
        answers.append([str(m.text) for m in last["messages"] if getattr(m, "name", None) == "remember"][-1])
    [kept] = [e for e in BaseStoreMemory(store, U1).entries() if e["type"] == "note"]
    assert answers[:2] == [
        "Saved as %s." % kept["id"],
        "Not saved (duplicate): this note is already saved as %s." % kept["id"],
    ]
    assert kept["source"] == "agent:thread:t1"
    assert kept["seen"] == [{"source": "agent:thread:t2", "at": "2026-07-07T00:00:00Z"}]
    assert {"written": 0, "refused": {"duplicate": 1}} in writes


def test_llama_index_flush_keeps_a_said_line_verbatim_and_an_exact_repeat_once(tmp_path):
    durable = SQLiteMemoryStore(tmp_path / "memory.db", token_counter=counter)

    def memory_at(hour: int) -> PoolSplitMemoryStore:
        return PoolSplitMemoryStore(
            [], POOLS, store=durable, token_counter=counter, now=datetime.datetime(2026, 7, 1, hour, 0)
        )

    def say(text: str) -> ChatMessage:
        return ChatMessage(role="user", content=text, additional_kwargs={"session_id": "alpha"})

    memory_at(9).flush([say("the staging database moved to the new cluster")])
    later = memory_at(12)
    # a flushed line is a record of what was said: a near repeat is stored as said ...
    assert [e["content"] for e in later.flush([say("The staging database moved to the new cluster today")])] == [
        "user: The staging database moved to the new cluster today"
    ]
    # ... and an exact one is kept once, its sighting recorded
    again = memory_at(15)
    assert again.flush([say("The staging database moved to the new cluster  today")]) == []
    assert later.gate_report.to_dict() == {"written": 1, "refused": {}}
    assert again.gate_report.to_dict() == {"written": 0, "refused": {"duplicate": 1}}
    entry = next(e for e in durable.entries() if e["content"].endswith("today"))
    assert entry["created"] == "2026-07-01T12:00:00Z"
    assert entry["seen"] == [{"source": "session:alpha", "at": "2026-07-01T15:00:00Z"}]


def test_cli_add_and_import_keep_one_entry_per_repeat(tmp_path, capsys):
    db = str(tmp_path / "memory.db")
    assert main(["add", "--store", db, "--content", "Deploys need the release checklist.", "--source", "cli:a"]) == 0
    kept = capsys.readouterr().out.strip()
    assert main(["add", "--store", db, "--content", "deploys  need the RELEASE checklist.", "--source", "cli:b"]) == 0
    out = capsys.readouterr()
    assert out.out.strip() == kept and "repeats %s (exact duplicate)" % kept in out.err
    lines = tmp_path / "more.jsonl"
    lines.write_text(
        "\n".join(
            json.dumps(e)
            for e in [
                {"content": "Note: deploys need the release checklist", "source": "import"},
                {"content": "Invoices are monthly.", "source": "import"},
            ]
        )
    )
    assert main(["import", str(lines), "--into", db]) == 0
    assert "imported 1 entries" in capsys.readouterr().out
    with SQLiteMemoryStore(db) as memory:
        assert len(memory) == 2
        assert [s["source"] for s in memory.get(kept)["seen"]] == ["cli:b", "import"]


# -- one supersede semantics, history on every store ------------------------------------


def test_supersede_closes_the_old_version_with_validity_times_and_history_shows_the_chain(store):
    [v1] = store.add([note("Staging DB is db-7.", "thread:a", "2026-07-01T00:00:00Z")])
    v2 = store.supersede(v1, note("Staging DB is db-9.", "thread:b", "2026-07-02T00:00:00Z"))
    v3 = store.supersede(v2, note("Staging DB is db-11.", "thread:c", "2026-07-03T00:00:00Z"))
    old = store.get(v1)
    assert (old["superseded_by"], old["valid_until"], old["closed_source"]) == (v2, "2026-07-02T00:00:00Z", "thread:b")
    assert store.get(v2)["valid_from"] == "2026-07-02T00:00:00Z"
    for entry_id in (v1, v2, v3):
        chain = store.history(entry_id)
        assert [(v.id, v.source, v.valid_from, v.valid_until) for v in chain] == [
            (v1, "thread:a", "2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z"),
            (v2, "thread:b", "2026-07-02T00:00:00Z", "2026-07-03T00:00:00Z"),
            (v3, "thread:c", "2026-07-03T00:00:00Z", None),
        ]
    with pytest.raises(UnknownEntryError):
        store.history("missing")
    # a selection never loads two versions
    chosen = [c.entry["id"] for c in store.select(POOLS, {"message": "staging db"}, now=NOW).chosen]
    assert chosen == [v3]
    # Visibility(as_of=...) loads the version valid then, on every store; the history is unchanged.
    for at, version in (("2026-07-01T12:00:00Z", v1), ("2026-07-02T00:00:00Z", v2), ("2026-07-05T00:00:00Z", v3)):
        got = store.select(POOLS, {"message": "staging db"}, now=NOW, visibility=Visibility(as_of=at))
        assert [c.entry["id"] for c in got.chosen] == [version]
    assert [v.id for v in store.history(v1)] == [v1, v2, v3]


def test_supersede_refuses_a_new_entry_naming_another_predecessor_and_writes_nothing(store):
    """``supersede(a, {..., "supersedes": b})``: the new entry's own link was
    overwritten with ``a`` without a word, and ``b`` left as it was."""
    a, b = store.add(
        [note("Staging DB is db-7.", "thread:a", "2026-07-01T00:00:00Z"), note("Cache is redis.", "t", None)]
    )
    before, version = store.entries(), store.version
    with pytest.raises(EntryError) as info:
        store.supersede(a, dict(note("Staging DB is db-9.", "thread:b", None), supersedes=b))
    assert (info.value.field, str(info.value).split(": ", 1)[1]) == (
        "supersedes",
        "field 'supersedes' is already %r: a version supersedes one other, not also %r" % (b, a),
    )
    assert (store.entries(), store.version) == (before, version)
    # naming the same predecessor is no conflict
    assert store.history(store.supersede(a, dict(note("Staging DB is db-9.", "t", None), supersedes=a)))[0].id == a


def test_a_history_in_the_specs_own_schema_reads_alike_from_each_version_and_is_deleted_whole(store):
    """The core spec's entries link versions by ``superseded_by`` alone. Added
    in one write, the newer version named no predecessor: ``history(new)``
    was ``[new]`` while ``history(old)`` was ``[old, new]``, and
    ``delete(new)`` (history too) left the old version's text stored."""
    old = note("Staging DB is db-7.", "import", "2026-07-01T00:00:00Z", id="v1", superseded_by="v2")
    new = note("Staging DB is db-9.", "import", "2026-07-02T00:00:00Z", id="v2")
    given = [dict(old), dict(new)]
    assert store.add(given) == ["v1", "v2"] and given == [old, new]  # the caller's dicts untouched
    assert store.get("v2")["supersedes"] == "v1"
    for entry_id in ("v1", "v2"):
        assert [v.id for v in store.history(entry_id)] == ["v1", "v2"]
    assert store.delete("v2") and store.entries() == []


@pytest.mark.parametrize("namespace", ["a\udcffb", "a\x00b"])
def test_a_namespace_no_store_can_hold_is_refused_by_name_on_every_store(store, namespace):
    """``entries(namespace=...)`` and ``forget(namespace=...)`` given a lone
    surrogate or NUL: SQLite raised its codec's error naming neither the
    argument nor the value (``poolsplit export --namespace`` printed it),
    the in-process store answered "none"; now the store contract's
    ``ArgumentError`` naming it, as for an id."""
    store.add([note("Deploys need the checklist.", "t", None)])
    for call, name in (
        (lambda: store.entries(namespace), "namespace"),
        (lambda: store.forget(namespace=namespace), "forget namespace"),
    ):
        with pytest.raises(ArgumentError) as info:
            call()
        assert str(info.value).startswith(name) and "%r contains " % namespace in str(info.value)
    assert len(store.entries()) == 1


# -- expiry ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sqlite", "in-process", "basestore"])
def test_an_expired_entry_is_inactive_reported_expired_and_swept(kind, tmp_path):
    store = STORES[kind](tmp_path)
    [freeze] = store.add(
        [note("Deploy freeze on staging.", "cli", "2026-07-01T00:00:00Z", expires="2026-07-05T18:00:00Z")]
    )
    [rule] = store.add([note("Deploys need the staging checklist.", "cli", "2026-07-01T00:00:00Z")])
    before = store.select(POOLS, {"message": "staging deploy"}, now=datetime.datetime(2026, 7, 5, 17, 59))
    assert sorted(c.entry["id"] for c in before.chosen) == sorted([freeze, rule]) and "expired" not in before.notes
    after = store.select(POOLS, {"message": "staging deploy"}, now=datetime.datetime(2026, 7, 5, 18, 0))
    assert [c.entry["id"] for c in after.chosen] == [rule]
    assert after.notes["expired"] == [freeze]
    assert [(d.entry["id"], d.reason.value) for d in after.dropped] == [(freeze, "expired")]  # the core's reason
    assert store.sweep_expired("2026-07-06T00:00:00Z") == [freeze]
    assert [e["id"] for e in store.entries()] == [rule]


def test_a_malformed_expiry_is_refused_naming_the_entry_and_field(store):
    from poolsplit_adapters import EntryError

    with pytest.raises(EntryError) as caught:
        store.add([{"id": "x", "content": "Freeze.", "expires": "next friday"}])
    assert (caught.value.entry_id, caught.value.field) == ("x", "expires")


def test_an_empty_namespace_is_refused_on_write_it_could_never_be_forgotten_by(store):
    """``namespace: ""`` was stored, and then no ``forget(namespace=...)``
    (a non-empty string) and no ``Visibility(namespace=...)`` could name it:
    a subject written there could not be forgotten as one."""
    with pytest.raises(EntryError) as caught:
        store.add([{"id": "x", "content": "Ana likes tea.", "namespace": ""}])
    assert (caught.value.entry_id, caught.value.field) == ("x", "namespace")
    assert str(caught.value).endswith(
        "is empty: no query and no forget(namespace=...) can name it (None: no namespace)"
    )
    assert store.entries() == []


# -- forgetting --------------------------------------------------------------------------


def test_forget_a_namespace_removes_every_entry_and_version_on_every_store(store):
    own = LABEL if not isinstance(store, BaseStoreMemory) else None
    [v1] = store.add([note("Alice lives at 12 Marker Lane.", "thread:a", "2026-07-01T00:00:00Z")])
    store.supersede(v1, note("Alice lives at 14 Marker Lane.", "thread:b", "2026-07-02T00:00:00Z"))
    if own is not None:
        store.add([note("Bob likes tea.", "thread:c", "2026-07-01T00:00:00Z", namespace="memories.u2")])
    assert store.forget(namespace=LABEL) == 2
    assert [e for e in store.entries() if e.get("namespace") == LABEL] == []
    assert store.get(v1) is None
    with pytest.raises(UnknownEntryError):
        store.history(v1)
    selection = store.select(POOLS, {"message": "where does alice live marker lane"}, now=NOW)
    assert not any("Marker" in c.entry["content"] for c in selection.chosen)
    assert len(store.entries()) == (1 if own is not None else 0)


def test_forget_on_sqlite_leaves_no_byte_of_the_subject_in_the_file(tmp_path, capsys):
    db = tmp_path / "memory.db"
    marker = "zq-unique-marker-7f3a"
    with SQLiteMemoryStore(db) as store:
        [v1] = store.add([note("The customer's code word is %s." % marker, "thread:a", "2026-07-01T00:00:00Z")])
        store.supersede(v1, note("The customer's code word is %s-2." % marker, "thread:b", "2026-07-02T00:00:00Z"))
        store.add([note("Invoices are monthly.", "thread:c", "2026-07-01T00:00:00Z", namespace="memories.u2")])

        def file_bytes() -> bytes:
            return b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("memory.db"))

        assert marker.encode() in file_bytes()  # the check can fail
        assert main(["forget", "--namespace", LABEL, "--store", str(db)]) == 0
        assert capsys.readouterr().out.strip() == "forgot 2 entries of namespace %s" % LABEL
        assert marker.encode() not in file_bytes()
        assert [e["content"] for e in store.entries()] == ["Invoices are monthly."]
        assert not any(marker in c.entry["content"] for c in store.select(POOLS, {"message": marker}, now=NOW).chosen)
    assert main(["export", "--store", str(db)]) == 0
    assert marker not in capsys.readouterr().out
    assert main(["search", marker, "--all-namespaces", "--include-inactive", "--store", str(db)]) == 0
    assert marker not in capsys.readouterr().out
    assert marker.encode() not in file_bytes()


def test_cli_forget_needs_an_id_or_a_namespace(tmp_path, capsys):
    db = str(tmp_path / "memory.db")
    assert main(["forget", "--store", db]) == 2
    assert "either an ID or --namespace" in capsys.readouterr().err
    SQLiteMemoryStore(db).close()  # sweep changes a store, it creates none (a mistyped path is refused)
    assert main(["sweep", "--store", db, "--now", "2026-07-06T00:00:00Z"]) == 0
    assert capsys.readouterr().out.strip() == "swept 0 expired entries"


# -- the consolidator at LlamaIndex's flush ------------------------------------------------


class ScriptedDecider:
    """A consolidator that answers with fixed operations (a Decider)."""

    def __init__(self, operations: List[Dict[str, Any]]) -> None:
        self.operations = operations
        self.prompts: List[Any] = []

    def decide(self, prompt: Any) -> List[Dict[str, Any]]:
        self.prompts.append(prompt)
        return self.operations

    async def adecide(self, prompt: Any) -> List[Dict[str, Any]]:
        return self.decide(prompt)


def _flushing(tmp_path: pathlib.Path, decider: Any) -> Any:
    durable = SQLiteMemoryStore(tmp_path / "memory.db", token_counter=counter, clock=clock)
    durable.add(
        [
            {"id": "db", "type": "episode", "content": "user: the staging database is db-7", "source": "session:alpha",
             "session": "alpha", "created": "2026-07-01T00:00:00Z"},
            {"id": "fix", "type": "episode", "scope": "always", "content": "user: never deploy on fridays",
             "source": "host", "session": "alpha", "created": "2026-07-01T00:00:00Z"},
        ]
    )  # fmt: skip
    memory = PoolSplitMemoryStore(
        [],
        POOLS,
        store=durable,
        token_counter=counter,
        consolidator=decider,
        now=datetime.datetime(2026, 7, 2, 9, 0),
        write_gate=WriteGate(standing=None),  # the consolidator's view alone: no statements recognised
    )
    return durable, memory


def test_the_consolidator_at_flush_supersedes_the_stale_value_and_keeps_history(tmp_path):
    decider = ScriptedDecider([{"op": "update", "new": 3, "old": 1}])
    durable, memory = _flushing(tmp_path, decider)
    message = ChatMessage(
        role="user", content="the staging database is db-9", additional_kwargs={"session_id": "alpha"}
    )
    [written] = memory.flush([message])
    assert [e["text"] for e in json.loads(decider.prompts[0].payload)["existing"]] == [
        "user: the staging database is db-7",
        "user: never deploy on fridays",
    ]
    assert memory.last_consolidation.to_dict() == {"accepted": {"update": 1}, "refused": {}, "unresolved": 0}
    assert [(v.id, v.valid_until) for v in durable.history("db")] == [
        ("db", "2026-07-02T09:00:00Z"),
        (written["id"], None),
    ]
    chosen = [c.entry["id"] for c in durable.select(POOLS, {"message": "staging database"}, now=NOW).chosen]
    assert "db" not in chosen and written["id"] in chosen


def test_a_hostile_consolidator_at_flush_is_refused_and_loses_nothing(tmp_path):
    decider = ScriptedDecider([{"op": "retire", "old": 2}, {"op": "update", "new": 3, "old": 9}])
    durable, memory = _flushing(tmp_path, decider)
    message = ChatMessage(role="user", content="deploys moved to thursdays", additional_kwargs={"session_id": "alpha"})
    [written] = memory.flush([message])
    assert memory.last_consolidation.to_dict() == {
        "accepted": {},
        "refused": {"always_scope": 1, "unknown_handle": 1},
        "unresolved": 1,
    }
    fix = durable.get("fix")  # a model never retires a correction
    assert fix.get("status", "active") == "active" and "valid_until" not in fix and "superseded_by" not in fix
    assert durable.get(written["id"])["content"] == "user: deploys moved to thursdays"
    assert len(durable.entries()) == 3


@pytest.mark.parametrize("plan", [{"op": "noop", "new": 1, "old": None}, {"op": "noop", "new": 1}])
def test_a_consolidators_noop_without_a_target_at_flush_writes_the_line(tmp_path, plan):
    # The line was dropped and counted a duplicate, although the store was empty.
    durable = SQLiteMemoryStore(tmp_path / "memory.db", token_counter=counter, clock=clock)
    memory = PoolSplitMemoryStore(
        [], POOLS, store=durable, token_counter=counter, consolidator=ScriptedDecider([plan]),
        now=datetime.datetime(2026, 7, 2, 9, 0), write_gate=WriteGate(standing=None),
    )  # fmt: skip
    message = ChatMessage(role="user", content="deploys moved to thursdays", additional_kwargs={"session_id": "alpha"})
    [written] = memory.flush([message])
    assert memory.last_consolidation.to_dict() == {"accepted": {"noop": 1}, "refused": {}, "unresolved": 0}
    assert memory.gate_report.to_dict() == {"written": 1, "refused": {}}
    [stored] = durable.entries()
    assert stored["id"] == written["id"] and stored["content"] == "user: deploys moved to thursdays"
    assert stored.get("status", "active") == "active" and "valid_until" not in stored


def test_a_consolidators_noop_into_an_entry_at_flush_keeps_the_line_as_a_closed_version(tmp_path):
    # The line's text was erased: only the kept entry's ``seen`` held its source and time.
    durable, memory = _flushing(tmp_path, ScriptedDecider([{"op": "noop", "new": 3, "old": 1}]))
    message = ChatMessage(role="user", content="deploys moved to thursdays", additional_kwargs={"session_id": "alpha"})
    assert memory.flush([message]) == []
    assert memory.last_consolidation.to_dict() == {"accepted": {"noop": 1}, "refused": {}, "unresolved": 0}
    assert memory.gate_report.to_dict() == {"written": 0, "refused": {"duplicate": 1}}
    assert durable.get("db")["seen"] == [{"source": "session:alpha", "at": "2026-07-02T09:00:00Z"}]
    assert durable.get("db")["content"] == "user: the staging database is db-7" and "status" not in durable.get("db")
    [line] = [e for e in durable.entries() if e["id"] not in ("db", "fix")]
    assert {k: line[k] for k in ("content", "source", "session", "status", "valid_until", "closed_source")} == {
        "content": "user: deploys moved to thursdays",
        "source": "session:alpha",
        "session": "alpha",
        "status": "retired",
        "valid_until": "2026-07-02T09:00:00Z",
        "closed_source": "session:alpha",
    }
    assert [v.id for v in durable.history(line["id"])] == [line["id"]]
    assert len(durable.entries()) == 3


# -- consolidating what is stored (the middleware's background consolidator) -------------


class ByText:
    """A Decider that names memories by a fragment of their text (what a
    model would do with the handles it is shown)."""

    def __init__(self, *ops: Dict[str, Any]) -> None:
        self.ops = ops

    def decide(self, prompt: Any) -> List[Dict[str, Any]]:
        rows = json.loads(prompt.payload)
        handles = {r["text"]: r["handle"] for r in rows["existing"] + rows["new"]}

        def find(fragment: Any) -> Any:
            if not isinstance(fragment, str):
                return fragment
            return next(h for text, h in handles.items() if fragment in text)

        return [{k: find(v) if k in ("new", "old") else v for k, v in op.items()} for op in self.ops]

    async def adecide(self, prompt: Any) -> List[Dict[str, Any]]:
        return self.decide(prompt)


def test_consolidating_stored_entries_supersedes_retires_and_closes_repeats_on_every_store(store):
    from poolsplit_adapters.stores import consolidate_stored

    ids = store.add(
        [
            note("The staging database is db-7.", "host", "2026-07-01T00:00:00Z"),
            note("Deploys are frozen until the audit ends.", "host", "2026-07-01T00:00:00Z"),
            note("User prefers dark mode.", "host", "2026-07-01T00:00:00Z"),
            note("Never deploy on Fridays.", "host", "2026-07-01T00:00:00Z", scope="always"),
        ]
    )
    db7, freeze, dark, friday = ids
    new = store.add(
        [
            note("Staging moved to db-9.", "thread:t1", "2026-07-05T00:00:00Z"),
            note("A dark theme is what the user likes.", "thread:t1", "2026-07-05T00:00:00Z"),
            note("The audit is over.", "thread:t1", "2026-07-05T00:00:00Z"),
        ]
    )
    model = ByText(
        {"op": "update", "new": "db-9", "old": "db-7"},
        {"op": "noop", "new": "dark theme", "old": "dark mode"},
        {"op": "retire", "old": "frozen", "new": "audit is over"},
        {"op": "add", "new": "audit is over"},
        {"op": "retire", "old": "Fridays"},  # refused: a correction
    )
    done = consolidate_stored(store, new, model=model, at="2026-07-06T00:00:00Z")
    assert done.to_dict() == {
        "accepted": {"add": 1, "noop": 1, "retire": 1, "update": 1},
        "refused": {"always_scope": 1},
        "unresolved": 0,
        "applied": {"add": 1, "noop": 1, "retire": 1, "update": 1},
        "failed": 0,
        "skipped": 0,
    }
    rows = {e["id"]: e for e in store.entries()}
    assert len(rows) == 7  # nothing deleted
    assert rows[db7]["superseded_by"] == new[0] and rows[new[0]]["supersedes"] == db7
    assert [v.id for v in store.history(new[0])] == [db7, new[0]]
    assert rows[dark]["seen"] == [{"source": "thread:t1", "at": "2026-07-05T00:00:00Z"}]
    assert rows[new[1]]["status"] == "retired" and rows[freeze]["status"] == "retired"
    assert rows[friday].get("status", "active") == "active" and "valid_until" not in rows[friday]
    # A second run over the same ids: the closed repeat is skipped, a change
    # to a version closed meanwhile fails at commit, nothing is applied twice.
    again = consolidate_stored(store, new, model=ByText({"op": "add", "new": "db-9"}), at="2026-07-06T00:00:00Z")
    assert again.skipped == (new[1],) and again.to_dict()["applied"] == {"add": 1}
    # The kept duplicate finder follows the closed entries: the closed repeat
    # no longer absorbs a write of its text.
    report = store.write([note("A dark theme is what the user likes.", "thread:t2", "2026-07-07T00:00:00Z")])
    assert report.duplicates == [] and report.written == report.ids


def test_a_consolidators_noop_before_the_write_keeps_every_line_on_every_store(store):
    # ``consolidate`` (LlamaIndex's flush) dropped a noop's line: into an
    # entry, only that entry's ``seen`` named it; naming none, nothing at all.
    [dark] = store.add([note("User prefers dark mode.", "host", "2026-07-01T00:00:00Z")])
    model = ByText({"op": "noop", "new": "dark theme", "old": "dark mode"}, {"op": "noop", "new": "weather"})
    lines = [
        note("A dark theme is what the user likes.", "thread:t1", "2026-07-05T00:00:00Z", id="repeat"),
        note("The weather was nice today.", "thread:t1", "2026-07-05T00:00:00Z", id="dull"),
    ]
    report, result = store.consolidate(lines, model=model, at="2026-07-06T00:00:00Z")
    assert result.to_dict() == {"accepted": {"noop": 2}, "refused": {}, "unresolved": 0}
    assert report.written == ["dull"]
    rows = {e["id"]: e for e in store.entries()}
    assert sorted(rows) == sorted([dark, "repeat", "dull"])
    assert rows[dark]["seen"] == [{"source": "thread:t1", "at": "2026-07-05T00:00:00Z"}]
    assert rows[dark].get("status", "active") == "active"
    repeat = rows["repeat"]
    assert (repeat["content"], repeat["status"], repeat["valid_until"], repeat["closed_source"]) == (
        "A dark theme is what the user likes.",
        "retired",
        "2026-07-06T00:00:00Z",
        "thread:t1",
    )
    assert rows["dull"]["content"] == "The weather was nice today." and "valid_until" not in rows["dull"]


def test_a_consolidation_read_before_another_write_does_not_overwrite_it(store):
    """The plan was read (and the model asked) before another writer recorded
    a repeat on its target: applying it would drop that repeat, so it is
    refused at commit and listed failed; the other write stays."""
    from poolsplit_adapters.memory.consolidate import validate
    from poolsplit_adapters.stores.consolidation import apply_consolidation, consolidation_view

    [kept] = store.add([note("User prefers dark mode in every editor.", "host", "2026-07-01T00:00:00Z")])
    [new] = store.add([note("A dark theme is what the user likes.", "thread:t1", "2026-07-05T00:00:00Z")])
    candidates, existing, _ = consolidation_view(store, [new])
    assert [e["id"] for e in existing] == [kept]
    plan = validate([{"op": "noop", "new": 2, "old": 1}], candidates, existing, at="2026-07-06T00:00:00Z")
    store.write([note("user prefers dark mode in every editor", "thread:t9", "2026-07-05T12:00:00Z")])
    done = apply_consolidation(store, candidates, plan, at="2026-07-06T00:00:00Z")
    assert done.applied == () and "changed since it was read" in done.failed[0][1]
    assert store.get(kept)["seen"] == [{"source": "thread:t9", "at": "2026-07-05T12:00:00Z"}]
    assert store.get(new).get("status", "active") == "active"


def test_a_turn_holding_nul_or_a_lone_surrogate_is_demoted_with_the_replacement_character():
    """Every store refuses NUL and lone surrogates in an entry. The gate
    writes what was said with U+FFFD in their place: refused, the demoted
    turn could never be written, and every later turn of the thread failed."""
    store = InMemoryStore()
    mw = PoolSplitMemoryMiddleware(POOLS, namespace=U1, max_turns=1, now=NOW)
    agent = scripted_agent(mw, store)
    for text in ("hello \x00 there", "and \ud800 this", "third turn", "fourth turn"):
        agent.invoke({"messages": [("user", text)]}, thread("nul"))
    contents = [e["content"] for e in BaseStoreMemory(store, U1).entries() if e["type"] == "episode"]
    assert any("hello \ufffd there" in c for c in contents)
    # (LangChain's own message handling may already have made the surrogate a "?")
    assert any("and \ufffd this" in c or "and ? this" in c for c in contents)
    assert not any(ch == "\x00" or "\ud800" <= ch <= "\udfff" for c in contents for ch in c)
    assert any("third turn" in c for c in contents)  # the thread went on writing


def test_a_remembered_note_holding_nul_is_saved_with_the_replacement_character():
    store = InMemoryStore()
    mw = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW)
    agent = scripted_agent(mw, store)
    last = agent.invoke({"messages": [("user", "remember=cents \x00 only")]}, thread("tools"))
    answer = [str(m.text) for m in last["messages"] if getattr(m, "name", None) == "remember"][-1]
    [note] = [e for e in BaseStoreMemory(store, U1).entries() if e["type"] == "note"]
    assert answer == "Saved as %s." % note["id"]
    assert note["content"] == "cents \ufffd only"


def test_a_thread_id_holding_nul_still_demotes_and_remembers_and_nul_alone_is_empty():
    from poolsplit_adapters.memory.write_gate import Refusal, WriteGate

    store = InMemoryStore()
    mw = PoolSplitMemoryMiddleware(POOLS, namespace=U1, max_turns=1, now=NOW)
    agent = scripted_agent(mw, store)
    for text in ("first turn", "remember=cents only", "third turn"):
        agent.invoke({"messages": [("user", text)]}, thread("t\x00x"))
    sources = {e["source"] for e in BaseStoreMemory(store, U1).entries()}
    assert sources == {'thread:"t\\u0000x"', 'agent:thread:"t\\u0000x"'}  # quoted: not an id of visible characters
    gate = WriteGate()
    assert gate.propose("\x00 \ud800", type="note", source="s", namespace="n").refused is Refusal.EMPTY


# -- an export re-imported holds what the store held --------------------------------------


def _export_import(store: Any, tmp_path: pathlib.Path, kind: str) -> Any:
    import io

    from poolsplit_adapters.stores.files import dump_store, load_store

    out = io.StringIO()
    dump_store(store.entries(), out)
    path = tmp_path / "export.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    (tmp_path / "again").mkdir()
    again = STORES[kind](tmp_path / "again")
    report = again.write(load_store(path, for_writing=True))
    assert report.duplicates == []
    return again


def _successor_of_a_deleted_version(store: Any, successor: str) -> Any:
    """``store`` holding ``successor``, the version after "e1", which is deleted."""
    store.write([note("Invoices are sent on the first business day.", "a", "2026-07-01T00:00:00Z", id="e1")])
    store.supersede("e1", {"id": successor, "type": "note", "content": "Quarterly reviews happen in the big room."})
    store.delete("e1")
    return store


def _links(store: Any) -> Dict[str, Any]:
    return {e["id"]: (e.get("supersedes"), e.get("superseded_by")) for e in store.entries()}


@pytest.mark.parametrize("kind", sorted(STORES))
def test_a_deleted_versions_id_reused_in_the_same_second_is_no_predecessor_after_an_import(kind, tmp_path):
    store = _successor_of_a_deleted_version(STORES[kind](tmp_path), "e2")
    # a new entry under the deleted version's id, in the same second as e2's version
    store.write([note("Never deploy on a Friday afternoon.", "b", store.get("e2")["valid_from"], id="e1")])
    before = _links(store)
    assert before == {"e2": ("e1", None), "e1": (None, None)}
    assert _links(_export_import(store, tmp_path, kind)) == before


@pytest.mark.parametrize("kind", sorted(STORES))
def test_a_dangling_link_beside_the_version_that_closed_the_reused_id_imports_as_it_was(kind, tmp_path):
    store = _successor_of_a_deleted_version(STORES[kind](tmp_path), "e3")
    store.write([note("Never deploy on a Friday afternoon.", "b", "2026-07-02T00:00:00Z", id="e1")])
    store.supersede("e1", {"id": "e6", "type": "note", "content": "Coffee beans come from the corner roaster."})
    before = _links(store)
    assert before == {"e3": ("e1", None), "e1": (None, "e6"), "e6": ("e1", None)}
    assert _links(_export_import(store, tmp_path, kind)) == before


@pytest.mark.parametrize("kind", sorted(STORES))
def test_an_entry_written_later_under_the_id_a_dangling_link_names_is_no_predecessor_after_an_import(kind, tmp_path):
    # Found by the lifecycle sequences at a high example count: e8 written naming "e2"
    # (found nowhere), then an unrelated e2; the import closed e2 into e8, as e8 carried
    # no valid_from (the mark of a store's version that tells a reused id by time).
    store = STORES[kind](tmp_path)
    store.write([{"id": "e8", "type": "note", "content": "Never deploy on a Friday afternoon.", "supersedes": "e2"}])
    store.write([{"id": "e2", "type": "note", "content": "Quarterly reviews happen in the big room."}])
    before = _links(store)
    assert before == {"e8": ("e2", None), "e2": (None, None)}
    assert store.get("e8")["valid_from"] == store.get("e8")["created"]
    assert _links(_export_import(store, tmp_path, kind)) == before


@pytest.mark.parametrize("kind", sorted(STORES))
@pytest.mark.parametrize("order", ["as listed", "version first"])
def test_a_live_version_beside_an_older_entry_with_its_text_imports_as_two(kind, order, tmp_path):
    # Found by the lifecycle sequences at a high example count: e4, then e8 with the same text
    # naming a forgotten version (a version keeps its own id): the export, listing e8 first,
    # imported e4 as a repeat of e8, and e4's id was lost.
    store = STORES[kind](tmp_path)
    text = "The staging database lives on host db-7."
    store.write([{"id": "e4", "type": "note", "content": text}])
    store.write([{"id": "e8", "type": "note", "content": text, "supersedes": "e1"}])
    assert sorted(e["id"] for e in store.entries()) == ["e4", "e8"]
    entries = sorted(store.entries(), key=lambda e: e["id"], reverse=order == "version first")
    (tmp_path / "again").mkdir()
    again = STORES[kind](tmp_path / "again")
    assert again.write(entries).duplicates == []
    assert sorted(e["id"] for e in again.entries()) == ["e4", "e8"]
    # a later entry with the text is a repeat of one of them
    assert again.write([{"id": "e9", "type": "note", "content": text}]).kept[0] in ("e4", "e8")


@pytest.mark.parametrize("kind", sorted(STORES))
def test_a_repeat_of_two_live_entries_with_one_text_goes_to_the_first_written_on_every_store(kind, tmp_path):
    # Found by the lifecycle sequences at a high example count: the repeat went to the entry the
    # store listed first (a LangGraph SqliteStore lists by key: e1), and on the same store to the
    # other one after the kept finder had recorded a repeat; the in-process store chose e3.
    store = STORES[kind](tmp_path)
    text = "The staging database lives on host db-7."
    store.write([note(text, "a", "2026-07-01T00:00:00Z", id="e3")])
    store.write([note(text, "b", "2026-07-02T00:00:00Z", id="e1", supersedes="e2")])
    for n, source in enumerate(("c", "d", "e")):
        said = note(text, source, "2026-07-0%dT00:00:00Z" % (n + 3), id="r%d" % n)
        assert store.write([said]).kept == ["e3"], n
    assert [s["source"] for s in store.get("e3")["seen"]] == ["c", "d", "e"]
    assert "seen" not in store.get("e1")


@pytest.mark.parametrize("kind", sorted(STORES))
def test_an_expired_entry_beside_a_live_one_with_its_text_imports_as_two(kind, tmp_path):
    store = STORES[kind](tmp_path)
    text = "Never deploy on a Friday afternoon."
    store.write([note(text, "a", "2026-06-01T00:00:00Z", id="old", expires="2026-07-01T00:00:00Z")])
    store.write([note(text, "b", "2026-06-02T00:00:00Z", id="new", expires="2099-01-01T00:00:00Z")])
    assert sorted(e["id"] for e in store.entries()) == ["new", "old"]
    # listed live first, the expired line is no repeat of it
    entries = sorted(store.entries(), key=lambda e: e["id"])
    (tmp_path / "again").mkdir()
    again = STORES[kind](tmp_path / "again")
    assert again.write(entries).duplicates == []
    assert sorted(e["id"] for e in again.entries()) == ["new", "old"]


@pytest.mark.parametrize("kind", sorted(STORES))
def test_supersede_by_a_forgotten_predecessors_id_is_no_cycle(kind, tmp_path):
    store = STORES[kind](tmp_path)
    store.write([note("Coffee beans come from the corner roaster.", "a", "2026-07-01T00:00:00Z", id="e2")])
    store.delete("e2")
    # e5 names the forgotten e2 as its predecessor (an old export's line): a dangling link
    store.write(
        [note("The staging database lives on host db-7.", "b", "2026-07-02T00:00:00Z", id="e5", supersedes="e2")]
    )
    new = {"id": "e2", "type": "note", "content": "The staging database lives on host db-9."}
    assert store.supersede("e5", new) == "e2"
    assert _links(store) == {"e5": ("e2", "e2"), "e2": ("e5", None)}
