"""The current value first (memory/changes.py): which statements change
which, exactly, and the rule's measured false-supersede rate."""

from __future__ import annotations

import os
import sys
import time

import pytest

from poolsplit_adapters.memory.changes import changes, changing, states, subject, updates
from poolsplit_adapters.memory.duplicates import DuplicateFinder

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))


@pytest.mark.parametrize(
    "new, old, changed",
    [
        ("The launch moved to March 17.", "The launch is on March 3.", True),
        ("The launch is now March 24.", "The launch moved to March 17.", True),
        ("My team now has 7 people.", "My team has 5 people.", True),
        ("The frontend framework is Vue.", "The frontend framework is React.", True),
        ("Db-9 is the staging database.", "Db-7 is the staging database.", True),
        ("Never use tabs.", "Always use tabs.", True),
        ("Don't use semicolons in JavaScript examples.", "Always use semicolons in JavaScript examples.", True),
        # another subject, the same value: never
        ("The release date is March 3.", "The launch is on March 3.", False),
        ("The search API version is v2.4.", "The billing API version is v2.4.", False),
        (
            "Logs are kept for 30 days, the backup retention period.",
            "Logs are kept for 30 days, the log retention period.",
            False,
        ),
        # another claim about the subject, not another value of one
        (
            "Refunds are rounded half-even.",
            "Refunds are asynchronous: the provider calls our webhook within 24 hours.",
            False,
        ),
        ("The staging database is not db-7.", "Db-7 is the staging database.", True),
        # more words, not another value; two things numbered alike; the same text
        ("Staging DB is db-9 (confirmed)", "Staging DB is db-9", False),
        ("deploy 4 went fine", "deploy 3 went fine", False),
        ("The launch is on March 3.", "the launch is on  March 3.", False),
    ],
)
def test_which_statements_change_which(new, old, changed):
    assert changes(new, old) is changed


@pytest.mark.parametrize(
    "new, old, changed",
    [
        # another number of the same counted things, in the same place
        (
            "The number of open tickets in the support queue has grown to 61.",
            "We have 48 open tickets in the support queue.",
            True,
        ),
        ("We're now at 12 engineers.", "We have 9 engineers and 2 designers.", True),
        ("We hired 2 designers.", "We have 9 engineers and 2 designers.", False),
        ("The number of tickets in the sales queue is 61.", "We have 48 open tickets in the support queue.", False),
        # a statement logged without its subject, a quantity said another way, a date moved
        (
            "The p95 latency of the search API is now averaging around 120ms after more tuning.",
            "Cut the p95 latency of the search API from 400ms to 180ms by adding an index.",
            True,
        ),
        (
            "The second milestone now targets completion by June 9.",
            "Planned the quarter; second milestone ends June 5.",
            True,
        ),
        # never: a word in the place of another, numbered apart, another unit, another milestone
        ("The signup page load time is 1.2s.", "The login page load time is 1.8s.", False),
        ("Release 2 of the app has 30 screens.", "Release 1 of the app has 25 screens.", False),
        (
            "The p95 latency of the search API is sampled every 5 minutes.",
            "The p95 latency of the search API is 180ms.",
            False,
        ),
        ("The API has 40 endpoints.", "The API serves 3 million requests a day.", False),
        ("The third milestone ends June 9.", "Planned the quarter; second milestone ends June 5.", False),
        ("The public launch deadline moved to May 12.", "Set the beta launch deadline to April 4.", False),
        # the subject named again after the value: another value of it, or a value of another thing
        (
            "Logs are kept for 45 days, the log retention period.",
            "Logs are kept for 30 days, the log retention period.",
            True,
        ),
        (
            "Logs are kept for 45 days, the backup retention period.",
            "Logs are kept for 30 days, the log retention period.",
            False,
        ),
        ("The deploy window is Thursday 14:00.", "The deploy window is Tuesday 10:00.", True),
    ],
)
def test_measured_quantities_counts_and_logged_statements(new, old, changed):
    assert changes(new, old) is changed


def test_a_logged_statement_states_and_its_subject_is_what_the_verb_takes():
    assert states("Reduced the build time from 42 to 30 minutes.")
    assert not states("Reduced.")
    assert subject("Reduced the build time from 42 to 30 minutes.") == frozenset({"build", "time"})
    # a determiner after a preposition goes on with the subject ("start" is a qualifier: no subject word)
    assert subject("The cold start time of the worker is 7s.") == frozenset({"cold", "time", "worker"})


def test_the_subject_is_before_the_relation_word_or_after_a_leading_value():
    assert subject("The launch moved to March 17.") == frozenset({"launch"})
    assert subject("Db-7 is the staging database.") == frozenset({"staging", "database"})
    assert subject("Always use tabs.") is None


def test_only_active_contextual_statements_of_a_changing_type_change_anything():
    assert changing({"type": "fact", "content": "x"}) and changing({"type": "preference", "content": "x"})
    assert not changing({"type": "episode", "content": "x"})
    assert not changing({"type": "fact", "scope": "always", "content": "x"})  # a correction is the host's
    assert not changing({"type": "fact", "supersedes": "a", "content": "x"})  # linked as it says


def test_updates_picks_the_newest_stored_version_and_never_one_of_the_batch_or_twice():
    finder = DuplicateFinder(
        [
            {"id": "a", "type": "fact", "content": "The launch is on March 3."},
            {"id": "b", "type": "fact", "content": "The launch moved to March 10."},
            {"id": "fx", "type": "fact", "scope": "always", "content": "The launch is on May 1."},
            {"id": "n", "type": "note", "content": "The launch is on March 3."},
        ]
    )
    batch = [
        {"id": "c", "type": "fact", "content": "The launch is now March 24."},
        {"id": "d", "type": "fact", "content": "The launch is on March 30."},
        {"id": "e", "type": "fact", "content": "The launch is on April 2."},
    ]
    assert updates(finder, batch) == ["b", "a", None]
    assert updates(finder, batch, skip={0}) == [None, "b", "a"]


def test_the_measured_false_supersede_rate_is_zero_on_both_seeds():
    import changes as bench  # benchmarks/changes.py

    for seed in (0, 1):
        linked = bench.linked_by_kind(seed)
        assert sum(linked["twin"]) == 0 and len(linked["twin"]) == 48
        assert sum(linked["twin-update"]) == 0 and len(linked["twin-update"]) == 144  # a twin's other value
        assert sum(linked["value"] + linked["negation"]) / 96 >= 0.75
        never = linked["measured-twin"] + linked["measured-claim"]
        assert sum(never) == 0 and len(never) == 66
        assert sum(linked["measured"]) / len(linked["measured"]) >= 0.9
        # standing statements that say what they revoke; never another topic's; a twin
        # sharing the revoked word is the rule's measured weakness (3 of 10 topics)
        assert (sum(linked["revoke"]), len(linked["revoke"])) == (40, 40)
        assert (sum(linked["revoke-other"]), len(linked["revoke-other"])) == (0, 360)
        assert (sum(linked["revoke-twin"]), len(linked["revoke-twin"])) == (12, 40)


def test_a_consolidators_update_never_gives_a_linked_version_a_second_predecessor():
    from poolsplit_adapters import EntryError
    from poolsplit_adapters.memory.validity import supersede

    old = {"id": "n", "type": "note", "content": "The staging database is db-1.", "created": "2026-07-01T08:00:00Z"}
    linked = {"id": "f2", "type": "fact", "content": "The staging database is db-2.", "supersedes": "f1"}
    with pytest.raises(EntryError) as caught:
        supersede(old, linked)
    assert (caught.value.entry_id, caught.value.field) == ("f2", "supersedes")
    again = supersede({"id": "f1", "content": "x", "created": "2026-07-01T08:00:00Z"}, linked)[1]
    assert again["supersedes"] == "f1"  # naming the same predecessor is no second one


def test_batch_updates_links_a_statement_to_the_latest_earlier_one_of_its_batch_it_changes():
    from poolsplit_adapters.memory.changes import batch_updates

    batch = [
        {"id": "a", "type": "fact", "content": "The launch is on March 3."},
        {"id": "i", "type": "instruction", "content": "Always use tabs."},
        {"id": "b", "type": "fact", "content": "The launch moved to March 10."},
        {"id": "o", "type": "fact", "namespace": "other", "content": "The launch is on March 12."},
        {"id": "fx", "type": "fact", "scope": "always", "content": "The launch is on May 1."},
        {"id": "j", "type": "instruction", "content": "Never use tabs."},
        {"id": "c", "type": "fact", "content": "The launch is now March 24."},
        {"id": "s", "type": "fact", "content": "The launch is on April 2."},
    ]
    # a chain a -> b -> c -> s; never across namespaces or types, never an always-scope entry
    assert batch_updates(batch) == [None, None, 0, None, None, 1, 2, 6]
    # a repeat changes nothing here; one that changes a stored version is linked to it instead
    assert batch_updates(batch, skip={2}) == [None, None, None, None, None, 1, 0, 6]
    assert batch_updates(batch, stored=[None] * 6 + ["x", None]) == [None, None, 0, None, None, 1, None, 6]


@pytest.mark.parametrize("kind", ["sqlite", "langgraph", "langgraph-async", "flush"])
def test_a_statement_changed_later_in_the_same_write_is_superseded_on_every_store(kind):
    import asyncio

    from langgraph.store.memory import InMemoryStore
    from llama_index.core.base.llms.types import ChatMessage

    from poolsplit_adapters import Pool
    from poolsplit_adapters.langchain import BaseStoreMemory
    from poolsplit_adapters.llama_index import PoolSplitMemoryStore
    from poolsplit_adapters.stores import SQLiteMemoryStore

    said = ["The launch is on March 3.", "Always use tabs.", "The launch moved to March 17.", "Never use tabs."]
    if kind == "flush":
        store = PoolSplitMemoryStore([], [Pool("all", 400, 10, ("episode", "fact"))], token_counter=lambda t: 1)
        store.flush([ChatMessage(role="user", content=t, additional_kwargs={"session_id": "a"}) for t in said])
    else:
        entries = [{"type": "instruction" if "tabs" in t else "fact", "content": t, "namespace": "m.u1"} for t in said]
        if kind == "sqlite":
            store = SQLiteMemoryStore(":memory:")
            store.write(entries)
        else:
            store = BaseStoreMemory(InMemoryStore(), ("m", "u1"))
            asyncio.run(store.awrite(entries)) if kind == "langgraph-async" else store.write(entries)
    statements = {e["content"]: e for e in store.entries() if e["type"] in ("fact", "instruction")}
    for old, new in ((said[0], said[2]), (said[1], said[3])):
        assert statements[old]["superseded_by"] == statements[new]["id"], kind
        assert statements[new]["supersedes"] == statements[old]["id"] and "superseded_by" not in statements[new]
        assert [v.entry["content"] for v in store.history(statements[new]["id"])] == [old, new]


@pytest.mark.parametrize("kind", ["sqlite", "langgraph", "langgraph-async", "flush"])
@pytest.mark.parametrize("stored_first", [False, True], ids=["one write", "first stored before"])
def test_a_fact_changed_and_changed_back_in_one_write_ends_on_its_last_value(kind, stored_first):
    # "db-7", "db-9", "db-7" again: the third was folded into the first (a repeat
    # of it), which the second closes, so "db-9" stayed current.
    import asyncio

    from langgraph.store.memory import InMemoryStore
    from llama_index.core.base.llms.types import ChatMessage

    from poolsplit_adapters import Pool
    from poolsplit_adapters.langchain import BaseStoreMemory
    from poolsplit_adapters.llama_index import PoolSplitMemoryStore
    from poolsplit_adapters.stores import SQLiteMemoryStore

    said = ["The staging database is db-7.", "The staging database is db-9.", "The staging database is db-7."]
    first, rest = (said[:1], said[1:]) if stored_first else ([], said)
    if kind == "flush":
        store = PoolSplitMemoryStore([], [Pool("all", 400, 10, ("episode", "fact"))], token_counter=lambda t: 1)
        for part in (first, rest):
            if part:
                store.flush([ChatMessage(role="user", content=t, additional_kwargs={"session_id": "a"}) for t in part])
    else:
        if kind == "sqlite":
            store = SQLiteMemoryStore(":memory:")
        else:
            store = BaseStoreMemory(InMemoryStore(), ("m", "u1"))
        for part in (first, rest):
            if part:
                entries = [{"type": "fact", "content": t, "namespace": "m.u1"} for t in part]
                asyncio.run(store.awrite(entries)) if kind == "langgraph-async" else store.write(entries)
    facts = [e for e in store.entries() if e["type"] == "fact"]
    current = [e for e in facts if "superseded_by" not in e]
    assert [e["content"] for e in current] == ["The staging database is db-7."], kind
    history = [v.entry["content"] for v in store.history(current[0]["id"])]
    assert history == said, kind


# A statement of a user's pasted into a fact is read in linear time. Before: a subject of
# 8,000 characters (no comma, no determiner) took 16 s, each of the clause and determiner
# rules searched for at every position; 6,000 counts took 9 s, each compared with every other.
# Quadratic: these sizes took minutes, against 0.2 s and 0.9 s now. The bound is a hang guard far
# above the linear time, not a speed measurement (that is benchmarks/'s).
@pytest.mark.parametrize(
    "new, old, subject_words",
    [
        ("word " * 4000 + "is 6", "word " * 4000 + "is 5", frozenset({"word"})),
        ("We ran " + "5 abs " * 12000 + "and 7 builds.", "We ran " + "5 abs " * 12000 + "and 9 builds.", None),
    ],
)
def test_a_long_statement_is_read_in_linear_time(new, old, subject_words):
    started = time.perf_counter()
    assert changes(new, old) is True
    assert subject(new) == subject_words
    assert time.perf_counter() - started < 15


@pytest.mark.parametrize(
    "new, old, revoked",
    [
        (
            "Forget the British spelling, switch back to American English from now on.",
            "From now on, answer in British English.",
            True,
        ),
        ("Stop using tabs; use spaces from now on.", "Always indent with tabs.", True),
        ("Always use spaces instead of tabs.", "Always indent with tabs.", True),
        ("I no longer prefer dark mode, I prefer light themes.", "I prefer dark mode in every editor.", True),
        ("Don't add emojis to your answers anymore.", "Always add a few emojis to your answers.", True),
        ("Switch from pytest to unittest in every example.", "Always write the examples' tests with pytest.", True),
        ("以后不要再用英式英语回答。", "以后请用英式英语回答。", True),
        # what is revoked must be what the older one says, not a word of the instruction's frame
        ("Forget the British spelling from now on.", "Always answer in Markdown.", False),
        ("Stop using answers that are long; keep them short.", "Always use type hints in answers.", False),
        # no revoking word: two standing instructions side by side
        ("Always answer in American English.", "Always cite British standards in safety answers.", False),
    ],
)
def test_a_standing_statement_that_says_what_it_revokes_revokes_it(new, old, revoked):
    from poolsplit_adapters.memory.changes import revokes

    assert revokes(new, old) is revoked


def test_a_revoking_instruction_supersedes_the_newest_one_it_names_never_a_fact_or_a_correction():
    finder = DuplicateFinder(
        [
            {"id": "a", "type": "instruction", "content": "From now on, answer in British English."},
            {"id": "m", "type": "instruction", "content": "Always answer in Markdown."},
            {"id": "fx", "type": "instruction", "scope": "always", "content": "Use British spelling in legal text."},
            {"id": "f", "type": "fact", "content": "Our office uses British spelling in contracts."},
        ]
    )
    revoking = {"id": "b", "type": "instruction", "content": "Forget the British spelling, use American English."}
    assert updates(finder, [revoking]) == ["a"]
    as_fact = {"id": "g", "type": "fact", "content": "Forget the British spelling, we use American English now."}
    assert updates(finder, [as_fact]) == [None]  # a fact revokes nothing by this rule


def test_a_revoking_instruction_later_in_one_write_supersedes_the_earlier_one():
    from poolsplit_adapters.memory.changes import batch_updates

    batch = [
        {"id": "a", "type": "instruction", "content": "From now on, answer in British English."},
        {"id": "m", "type": "instruction", "content": "Always answer in Markdown."},
        {"id": "b", "type": "instruction", "content": "Forget the British spelling, switch back to American English."},
    ]
    assert batch_updates(batch) == [None, None, 0]
