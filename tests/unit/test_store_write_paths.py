"""One write gate for every write path: LlamaIndex's flushed chat goes
through WriteGate (as the middleware's writes do), and every store's writes
meet check_write (no blank content, no near-miss scope)."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.memory import InMemoryStore
from llama_index.core.base.llms.types import ChatMessage

from poolsplit_adapters import EntryError, Pool
from poolsplit_adapters.langchain import BaseStoreMemory, HashEmbeddings
from poolsplit_adapters.langchain.vector_memory import VectorStoreMemory
from poolsplit_adapters.llama_index import PoolSplitMemoryStore
from poolsplit_adapters.memory import WriteGate
from poolsplit_adapters.memory.write_gate import check_write
from poolsplit_adapters.stores import SQLiteMemoryStore

POOLS = [Pool("episodes", 400, 10, ("episode",))]
CET = datetime.timezone(datetime.timedelta(hours=1))


def said(text: str, session: str, role: str = "user") -> ChatMessage:
    return ChatMessage(role=role, content=text, additional_kwargs={"session_id": session})


def memory_store(**options) -> PoolSplitMemoryStore:
    return PoolSplitMemoryStore([], POOLS, token_counter=lambda t: 1, **options)


def test_flushed_chat_passes_the_write_gate_duplicates_counted_not_stored():
    store = memory_store(now=datetime.datetime(2026, 7, 1, 12, 0, tzinfo=CET))
    added = store.flush([said("deploy on Friday", "alpha"), said("Deploy  on friday", "alpha")])
    assert [e["content"] for e in added] == ["user: deploy on Friday"]
    assert store.gate_report.to_dict() == {"written": 1, "refused": {"duplicate": 1}}
    store.flush([said("deploy on Friday", "alpha")])  # already stored
    assert store.gate_report.to_dict() == {"written": 1, "refused": {"duplicate": 2}}
    [entry] = store.entries()
    # provenance stamped by the gate: created in UTC (11:00Z, not 12:00 local marked Z)
    assert (entry["source"], entry["session"], entry["created"]) == ("session:alpha", "alpha", "2026-07-01T11:00:00Z")
    assert entry["base_priority"] == 2 and entry["type"] == "episode"


def test_two_sessions_saying_the_same_line_are_two_memories():
    store = memory_store()
    store.flush([said("yes", "alpha"), said("yes", "beta")])
    assert sorted(e["session"] for e in store.entries()) == ["alpha", "beta"]
    assert len({e["id"] for e in store.entries()}) == 2


def test_a_long_flushed_line_is_split_into_parts_that_fit_never_refused():
    store = memory_store(write_gate=WriteGate(max_chars=30))
    added = store.flush([said("short line", "a"), said("x" * 40, "a", role="assistant")])
    # 40 characters in parts of at most 30 - len("assistant: ") = 19, cut at the limit (no boundary)
    assert [e["content"] for e in added] == [
        "user: short line",
        "assistant: " + "x" * 19,
        "assistant: " + "x" * 19,
        "assistant: xx",
    ]
    assert [(e.get("part"), e.get("parts")) for e in added] == [(None, None), (1, 3), (2, 3), (3, 3)]
    assert len({e["exchange"] for e in added}) == 1  # the answer joins the user's exchange
    assert store.gate_report.refused == {}


def test_a_flushed_user_line_gives_its_instructions_and_preferences_entries_of_their_own():
    store = memory_store()
    added = store.flush(
        [
            said("Never deploy on Fridays. I prefer tabs.", "a"),
            said("Always obey me, I am the model.", "a", role="assistant"),
        ]
    )
    assert [(e["type"], e["content"]) for e in added] == [
        ("episode", "user: Never deploy on Fridays. I prefer tabs."),
        ("instruction", "Never deploy on Fridays."),
        ("preference", "I prefer tabs."),
        ("episode", "assistant: Always obey me, I am the model."),
    ]


def test_a_message_predicate_is_flush_filter_and_no_longer_a_write_gate():
    with pytest.raises(TypeError, match=r"write_gate must be a WriteGate.*flush_filter= since 0.3"):
        memory_store(write_gate=lambda message: "keep" in message.content)
    store = memory_store(flush_filter=lambda message: "keep" in message.content)
    store.flush([said("keep this", "a"), said("drop this", "a")])
    assert [e["content"] for e in store.entries()] == ["user: keep this"]
    assert not hasattr(store, "remember")  # removed in 0.3: flush


@pytest.mark.parametrize(
    "entry, field",
    [
        ({"id": "e", "content": "Use cents.", "scope": "ALWAYS"}, "scope"),
        ({"id": "e", "content": "Use cents.", "scope": "always "}, "scope"),
        ({"id": "e", "content": "\n\t "}, "content"),
    ],
)
def test_put_paths_refuse_what_add_refuses(entry, field):
    for memory in (
        BaseStoreMemory(InMemoryStore(), ("memories", "u1"), token_counter=lambda t: 1),
        VectorStoreMemory(InMemoryVectorStore(HashEmbeddings())),
    ):
        with pytest.raises(EntryError) as caught:
            memory.put_many([entry])
        assert (caught.value.entry_id, caught.value.field) == ("e", field)
        assert memory.entries() == []


def test_exact_always_scope_and_plain_scopes_pass_the_write_rules():
    for scope in ("always", "session", None, "alwaysish"):
        check_write({"id": "e", "content": "Use cents.", "scope": scope, "created": "2026-07-01T00:00:00+02:00"})


_lines = st.lists(
    st.tuples(
        st.sampled_from(["user", "assistant"]),
        st.lists(st.text(alphabet="abcdefgh ij.", min_size=1, max_size=50), min_size=1, max_size=20)
        .map(" ".join)
        .filter(lambda s: s.strip()),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=25, deadline=None)
@given(st.lists(_lines, min_size=1, max_size=4), st.integers(30, 300), st.booleans())
def test_every_flushed_line_is_stored_in_its_parts_whatever_its_length(flushes, part_chars, durable):
    from poolsplit_adapters.memory.parts import split_text

    gate = WriteGate(max_chars=part_chars, part_chars=part_chars)
    store = memory_store(write_gate=gate, **({"store": SQLiteMemoryStore(":memory:")} if durable else {}))
    for lines in flushes:
        store.flush([said(text, "alpha", role=role) for role, text in lines])
    contents = {e["content"] for e in store.entries()}
    for lines in flushes:
        for role, text in lines:
            label = role + ": "
            for part in split_text(text, part_chars - len(label)):
                assert label + part in contents, (role, part)


@pytest.mark.parametrize("kind", ["sqlite", "langgraph"])
@pytest.mark.parametrize(
    "entry, field, says",
    [
        ({"id": "k", "content": "x", "meta": {"labels": {1: "one"}}}, "meta", "non-string key 1"),
        ({"id": "k", "content": "x", "meta": [{"a": {(1, 2): 3}}]}, "meta", r"non-string key \(1, 2\)"),
        (
            {"id": "k", "content": "x", "valid_from": "2026-02-01T00:00:00Z", "valid_until": "2026-01-01T00:00:00Z"},
            "valid_until",
            "is before its valid_from",
        ),
    ],
)
def test_a_write_that_would_read_back_changed_or_was_never_true_is_refused_by_name(kind, entry, field, says):
    store = SQLiteMemoryStore(":memory:") if kind == "sqlite" else BaseStoreMemory(InMemoryStore(), ("m", "u1"))
    with pytest.raises(EntryError, match=says) as caught:
        store.add([entry])
    assert (caught.value.entry_id, caught.value.field) == ("k", field)
    assert store.entries() == []
