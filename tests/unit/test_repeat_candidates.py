"""The bounded duplicate check gives the full scan's verdict.

``RepeatCandidates`` names the stored entries a write could repeat; a
``DuplicateFinder`` over only those (in store order) must decide exactly as
one over every stored entry: same kind, same kept entry, same similarity,
for every candidate of a batch. Checked over generated stores and writes
(paraphrased repeats, values with signs and units, qualifiers, negations,
short texts, exact twins, inactive entries, rewrites and deletions), over
the labelled set and edge cases of ``benchmarks/duplicates.py``, and end to
end through ``BaseStoreMemory`` with the middleware's prepared index.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from poolsplit_adapters import EntryError, Pool
from poolsplit_adapters.langchain import BaseStoreMemory
from poolsplit_adapters.memory import duplicates
from poolsplit_adapters.memory.duplicates import (
    MIN_NEAR_WORDS,
    OVERLAP_THRESHOLD,
    Duplicate,
    DuplicateFinder,
    shared_needed,
    word_overlap,
)
from poolsplit_adapters.memory.repeat_candidates import RepeatCandidates
from poolsplit_adapters.poolsplit import default_scorer
from poolsplit_adapters.stores.base import live
from poolsplit_adapters.stores.langgraph.prepared import PreparedRecall

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import facts  # noqa: E402

Verdict = Optional[Tuple[str, str, float]]

WORDS = ["deploy", "staging", "database", "replica", "checkout", "user", "assistant", "prefers", "dark", "mode"]
WORDS += ["editor", "release", "checklist", "window", "friday", "timeout", "cache", "refund", "report", "team"]
GLUE = ["the", "is", "a", "of", "to", "it", "on"]
GUARDS = ["not", "never", "and", "only", "always", "two", "off", "new", "must"]
VALUES = ["5", "-5", "+5", "5ms", "5 ms", "5 s", "1.2.3", "eu-west-1", "db-7", "db-9", "50%", "$5", "9 pm"]
NAMES = ["retry_limit", "/cart/merge", "settings.timeout"]
FILLER = ["Note: ", "FYI, ", "Again: ", ""]
AFTER = [" (confirmed)", ", as of today", " again", "!", ""]

words = st.lists(st.sampled_from(WORDS + GLUE + GUARDS + VALUES + NAMES), min_size=0, max_size=9)


def _text(draw: Any) -> str:
    return " ".join(draw(words))


@st.composite
def stored(draw: Any) -> Dict[str, Any]:
    entry: Dict[str, Any] = {
        "type": draw(st.sampled_from(["note", "fact", "episode", None])),
        "namespace": draw(st.sampled_from(["u1", "u2"])),
        "content": _text(draw),
    }
    if draw(st.integers(0, 9)) == 0:
        entry["scope"] = "always"
    if draw(st.integers(0, 9)) == 0:
        entry["superseded_by"] = "later"  # inactive: never kept
    if draw(st.integers(0, 9)) == 0:
        entry["session"] = "s1"
    return {k: v for k, v in entry.items() if v is not None}


def _variant(text: str, draw: Any) -> str:
    """A repeat of ``text`` as a writer would say it again, or a change of it."""
    how = draw(st.integers(0, 5))
    if how == 0:
        return text
    if how == 1:
        return text.upper() + draw(st.sampled_from(AFTER))
    if how == 2:
        return draw(st.sampled_from(FILLER)) + text + draw(st.sampled_from(AFTER))
    if how == 3:  # one word dropped or swapped
        parts = text.split()
        if parts:
            at = draw(st.integers(0, len(parts) - 1))
            parts[at] = draw(st.sampled_from(WORDS + GUARDS + VALUES + [""]))
        return " ".join(p for p in parts if p)
    if how == 4:  # one word added
        return text + " " + draw(st.sampled_from(WORDS + GUARDS + VALUES))
    return _text(draw)


def verdict(hit: Optional[Duplicate]) -> Verdict:
    return None if hit is None else (hit.kind.value, str(hit.kept["id"]), hit.similarity)


def full_scan(kept: Sequence[Mapping[str, Any]], batch: Sequence[Mapping[str, Any]]) -> List[Verdict]:
    return [verdict(h) for h in DuplicateFinder(kept, is_active=live).admit(batch)]


def _every_row(shelf: Any, words: Any, threshold: float) -> List[int]:
    # (a text without content words is matched exactly only, as the finder always did)
    return sorted(shelf.rows) if words else []


def reference_scan(kept: Sequence[Mapping[str, Any]], batch: Sequence[Mapping[str, Any]]) -> List[Verdict]:
    """The finder with its word index bypassed: every row of the shelf is
    compared (the rule itself, with no filtering to trust)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(duplicates._Shelf, "sharing", _every_row)
        return full_scan(kept, batch)


def bounded(
    kept: Sequence[Mapping[str, Any]], index: RepeatCandidates, batch: Sequence[Mapping[str, Any]]
) -> Tuple[List[Verdict], int]:
    keys = set().union(*(index.candidates(c) for c in batch)) if batch else set()
    subset = [e for e in kept if e["id"] in keys]
    return [verdict(h) for h in DuplicateFinder(subset, is_active=live).admit(batch)], len(subset)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_bounded_candidates_give_the_full_scans_verdict(data: Any) -> None:
    first = data.draw(st.lists(stored(), max_size=25))
    kept = [dict(e, id="k%d" % n) for n, e in enumerate(first)]
    index = RepeatCandidates((e["id"], e) for e in kept)  # the word order is fixed here
    # later writes, rewrites and deletions, applied to both (new words rank 0)
    for step, (how, entry) in enumerate(data.draw(st.lists(st.tuples(st.integers(0, 2), stored()), max_size=12))):
        if how == 0 or not kept:
            entry = dict(entry, id="later-%d" % step)
            kept.append(entry)
            index.put(entry["id"], entry)
        elif how == 1:
            gone = kept.pop(data.draw(st.integers(0, len(kept) - 1)))
            index.drop(gone["id"])
        else:  # a rewrite keeps its place in the store's order
            at = data.draw(st.integers(0, len(kept) - 1))
            kept[at] = dict(entry, id=kept[at]["id"])
            index.put(kept[at]["id"], kept[at])
    batch = []
    for _ in range(data.draw(st.integers(1, 4))):
        base = data.draw(st.sampled_from(kept)) if kept and data.draw(st.booleans()) else data.draw(stored())
        candidate = {k: v for k, v in base.items() if k not in ("id", "superseded_by")}
        candidate["content"] = _variant(str(base["content"]), data.draw)
        batch.append(dict(candidate, id="new-%d" % len(batch)))
    expected = reference_scan(kept, batch)
    assert full_scan(kept, batch) == expected  # the finder's own word index misses nothing
    assert bounded(kept, index, batch)[0] == expected


def test_the_labelled_set_and_edge_cases_decide_the_same_in_one_store() -> None:
    pairs = facts.labelled_pairs(0) + facts.labelled_pairs(1) + facts.edge_pairs()
    kept = [{"id": "k%d" % n, "type": "fact", "content": p.kept} for n, p in enumerate(pairs)]
    index = RepeatCandidates((e["id"], e) for e in kept)
    batches = [[{"id": "c%d" % n, "type": "fact", "content": pair.candidate}] for n, pair in enumerate(pairs)]
    everything = DuplicateFinder(kept, is_active=live)  # find() only reads: one full index for every pair
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(duplicates._Shelf, "sharing", _every_row)
        reference = DuplicateFinder(kept, is_active=live)
        expected = [verdict(reference.find(batch[0])) for batch in batches]
    assert any(v is not None and v[0] == "near" for v in expected)
    widest = 0
    for pair, batch, want in zip(pairs, batches, expected):
        got, read = bounded(kept, index, batch)
        assert got == [verdict(everything.find(batch[0]))] == [want], pair
        widest = max(widest, read)
    assert widest < len(kept) // 10  # the point: a few candidates, not the store


def test_exact_twins_keep_the_first_written_and_short_texts_match_only_whole() -> None:
    # twins: the first written (``created``, then ``id``: "a" here), not the first in store order
    kept = [
        {"id": "b", "content": "ok"},
        {"id": "a", "content": "OK"},
        {"id": "c", "content": "keep this"},
        {"id": "d", "content": "deploy deploy deploy"},
    ]
    index = RepeatCandidates((e["id"], e) for e in kept)
    batch = [
        {"id": "x", "content": " ok "},
        {"id": "y", "content": "keep that"},
        {"id": "z", "content": "Deploy, deploy deploy!"},
    ]
    assert bounded(kept, index, batch)[0] == full_scan(kept, batch) == [("exact", "a", 1.0), None, ("near", "d", 1.0)]


def test_shared_needed_is_the_least_overlap_the_word_rule_accepts() -> None:
    for n in range(0, 14):
        for m in range(0, 14):
            a = frozenset("a%d" % i for i in range(n))
            accepted = [
                s
                for s in range(0, min(n, m) + 1)
                if word_overlap(a, frozenset(sorted(a)[:s]) | frozenset("b%d" % i for i in range(m - s)))
                >= OVERLAP_THRESHOLD
            ]
            expected = min(accepted) if accepted and min(n, m) >= MIN_NEAR_WORDS else (n if n == m > 0 else None)
            assert shared_needed(n, m) == expected, (n, m)


def test_a_malformed_stored_entry_fails_the_write_as_the_full_scan_does() -> None:
    kept = [{"id": "bad", "content": 7}, {"id": "ok", "content": "fine words here"}]
    index = RepeatCandidates((e["id"], e) for e in kept)
    assert index.candidates({"content": "unrelated text entirely"}) == {"bad"}
    with pytest.raises(EntryError):
        full_scan(kept, [{"id": "n", "content": "unrelated"}])
    with pytest.raises(EntryError):
        bounded(kept, index, [{"id": "n", "content": "unrelated"}])


POOLS = [Pool("notes", 200, 5, ("note", "episode")), Pool("facts", 100, 3, ("fact",))]


def _stores(kind: str, tmp_path: Any) -> Tuple[Any, Any]:
    if kind == "in-memory":
        return InMemoryStore(), InMemoryStore()
    out = []
    for name in ("a", "b"):
        store = SqliteStore(
            sqlite3.connect(str(tmp_path / (name + ".db")), check_same_thread=False, isolation_level=None)
        )
        store.setup()
        out.append(store)
    return out[0], out[1]


def _contents(memory: BaseStoreMemory) -> Dict[str, Tuple[Any, ...]]:
    """What is stored, by id (the times are each store's own clock)."""
    return {e["id"]: (e["type"], e["content"], [s["source"] for s in e.get("seen", [])]) for e in memory.entries()}


@pytest.mark.parametrize("kind", ["in-memory", "sqlite"])
def test_basestorememory_writes_through_the_kept_index_as_through_a_full_read(kind: str, tmp_path: Any) -> None:
    plain_store, kept_store = _stores(kind, tmp_path)
    plain = BaseStoreMemory(plain_store, ("memories", "u1"))
    fast = BaseStoreMemory(kept_store, ("memories", "u1"))
    prepared = PreparedRecall(fast, POOLS, default_scorer)
    fast.keep_repeats_in(prepared)
    seed = [
        {"id": "e%d" % n, "type": "episode", "content": "user: deploy %d went fine / assistant: noted" % n}
        for n in range(40)
    ]
    seed += [{"id": "f1", "type": "fact", "content": "Staging DB is db-7"}]
    seed += [{"id": "n1", "type": "note", "content": "User prefers dark mode in the editor"}]
    for memory in (plain, fast):
        memory.put_many(seed)
    writes = [
        [{"type": "note", "content": "Note: user prefers dark mode in the editor"}],  # near
        [{"type": "fact", "content": "staging db is DB-7"}],  # exact
        [{"type": "fact", "content": "Staging DB is db-9"}],  # an update: written
        [{"type": "episode", "content": "user: deploy 3 went fine / assistant: noted"}],
        [
            {"type": "episode", "content": "user: new one / assistant: ok"},
            {"type": "episode", "content": "User: new one / assistant: OK"},
        ],
        [{"type": "fact", "content": "Staging DB is db-9 (confirmed)"}],  # repeats the write before
    ]
    for n, batch in enumerate(writes):
        batch = [dict(e, id="w%d-%d" % (n, m), source="thread:t%d" % n) for m, e in enumerate(batch)]
        a, b = plain.write(batch), fast.write(batch)
        assert (a.ids, a.to_dict(), a.kept) == (b.ids, b.to_dict(), b.kept)
    assert _contents(plain) == _contents(fast)
    assert set(prepared._repeats) == {("note", None), ("fact",), ("episode",)}  # the kept indexes answered
    probe = [
        {
            "id": "p",
            "type": "episode",
            "namespace": "memories.u1",
            "content": "user: deploy 7 went fine / assistant: noted",
        }
    ]
    assert sorted(item.key for item in prepared.repeatable(probe) or []) == ["e7"]  # not the 40 episodes
    del prepared  # dropped with its index: writes read the store again
    again = [{"id": "last", "type": "fact", "content": "staging db is db-9"}]
    assert fast.write(again).kept == plain.write(again).kept == ["w2-0"]
