"""Duplicates: exact and near matches within namespace and type, the guards
that keep updates apart, provenance of repeats, and no effect on any score."""

from __future__ import annotations

import copy
import datetime
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding

from poolsplit_adapters import Pool, select
from poolsplit_adapters.langchain.embeddings import HashEmbeddings
from poolsplit_adapters.llama_index.embeddings import HashEmbedding
from poolsplit_adapters.memory.duplicates import (
    SEEN,
    DuplicateFinder,
    DuplicateKind,
    content_words,
    key_tokens,
    normalise_text,
    record_repeat,
    swapped,
    value_tokens,
)
from poolsplit_adapters.memory.hash_embedding import HashEmbedder
from poolsplit_adapters.poolsplit import STOPWORDS, EntryError, default_scorer, prepare_scorer

NOW = datetime.datetime(2026, 12, 1)


def note(content: str, **extra: Any) -> Dict[str, Any]:
    return dict({"id": "k-" + content[:8], "type": "note", "content": content}, **extra)


# -- exact ------------------------------------------------------------------------------


def test_normalisation_is_nfkc_casefold_and_collapsed_whitespace() -> None:
    assert normalise_text("  Ｓtraße\tIS\n\n ＦＵＬＬ-width  ") == "strasse is full-width"


@pytest.mark.parametrize(
    "stored, hidden",
    [
        ("Do deploy on Fridays", "Do n\u200bot deploy on Fridays"),  # zero-width space
        ("Do deploy on Fridays", "Do n\u00adot deploy on Fridays"),  # soft hyphen
        ("Do deploy on Fridays", "Do n\u2060ot deploy on Fridays"),  # word joiner
        ("Deploy the main cluster on Fridays", "Al\u200bways deploy the main cluster on Fridays"),
        ("Do deploy on Fridays on the main cluster", "Do n\u200cot deploy on Fridays on the main cluster"),  # ZWNJ
    ],
)
def test_an_invisible_character_never_hides_a_change_of_polarity_or_extent(stored: str, hidden: str) -> None:
    # Read as "n" + "ot" (no negation) or "al" + "ways" (no qualifier), the
    # changed text was folded into the stored one as a repeat.
    for embed in (None, HashEmbedder().embed_documents):
        assert DuplicateFinder([note(stored)], embed=embed).find({"type": "note", "content": hidden}) is None
    shown = hidden.translate({0x200B: None, 0x00AD: None, 0x2060: None, 0x200C: None})
    assert normalise_text(hidden) == normalise_text(shown) == shown.casefold()
    kept = note(shown)
    hit = DuplicateFinder([kept]).find({"type": "note", "content": hidden})
    assert hit is not None and hit.kept is kept and hit.kind is DuplicateKind.EXACT  # it repeats what it reads as


def test_every_text_comparison_removes_the_invisible_characters() -> None:
    from poolsplit_adapters.memory import WriteGate
    from poolsplit_adapters.memory._words import contains, words
    from poolsplit_adapters.memory.write_gate import check_write
    from poolsplit_adapters.poolsplit import near_miss_scope, visible
    from poolsplit_adapters.relevance.words import normalise

    hidden = "\ufeffDo n\u200bot de\u200dploy on Fri\u00addays\u2060"
    assert visible(hidden) == "Do not deploy on Fridays"
    assert normalise_text(hidden) == normalise(hidden) == "do not deploy on fridays"
    gate = WriteGate()
    assert gate.key(hidden, type="note", namespace="u1") == gate.key(
        "Do not deploy on Fridays", type="note", namespace="u1"
    )
    assert words(hidden) == ("do", "not", "deploy", "on", "fridays") and contains(words(hidden), "not deploy")
    assert near_miss_scope("al\u200bways") and near_miss_scope("\u00adAlways")
    # one slip of typing is refused as well; a scope of another word is not "always" misspelt
    assert [s for s in ("allways", "alwyas", "alway", "awlays", "ways", "session", "always") if near_miss_scope(s)] == [
        "allways",
        "alwyas",
        "alway",
        "awlays",
    ]
    with pytest.raises(EntryError) as caught:
        check_write({"id": "x", "content": "Use cents.", "scope": "al\u200bways"}, 0)
    assert (caught.value.entry_id, caught.value.field) == ("x", "scope")


@pytest.mark.parametrize("store", ["sqlite", "langgraph"])
def test_every_store_refuses_content_of_only_invisible_characters_and_a_full_width_always(store: str) -> None:
    from langgraph.store.memory import InMemoryStore

    from poolsplit_adapters.langchain import BaseStoreMemory
    from poolsplit_adapters.stores import SQLiteMemoryStore

    target = SQLiteMemoryStore(":memory:") if store == "sqlite" else BaseStoreMemory(InMemoryStore(), ("m", "u1"))
    for entry, field in (
        ({"id": "blank", "content": "\u200b\u2060\u00ad"}, "content"),
        ({"id": "wide", "content": "Use cents.", "scope": "ａｌｗａｙｓ"}, "scope"),
    ):
        with pytest.raises(EntryError) as caught:
            target.add([entry])
        assert (caught.value.entry_id, caught.value.field) == (entry["id"], field)
    assert target.entries() == []


@pytest.mark.parametrize(
    "repeat",
    [
        "user: hello / assistant: ok",
        "USER: hello / assistant: OK",
        "  user:  hello /\nassistant: ok\t",
        "ｕｓｅｒ: hello / assistant: ok",
    ],
)
def test_exact_duplicate_of_a_repeated_episode(repeat: str) -> None:
    kept = note("user: hello / assistant: ok", type="episode")
    hit = DuplicateFinder([kept]).find({"type": "episode", "content": repeat})
    assert hit is not None and hit.kept is kept and hit.kind is DuplicateKind.EXACT and hit.similarity == 1.0


def test_duplicates_are_only_found_within_namespace_and_type() -> None:
    kept = note("Deploys need the checklist", namespace="tenant-a")
    finder = DuplicateFinder([kept])
    assert finder.find({"content": "Deploys need the checklist", "namespace": "tenant-b"}) is None
    assert finder.find({"content": "Deploys need the checklist"}) is None  # no namespace is its own
    assert finder.find({"type": "fact", "content": "Deploys need the checklist", "namespace": "tenant-a"}) is None
    assert finder.find({"content": "deploys need the checklist", "namespace": "tenant-a"}) is not None


def test_a_missing_type_is_note() -> None:
    finder = DuplicateFinder([{"id": "a", "content": "Same words"}])
    assert finder.find({"type": "note", "content": "same words"}) is not None


def test_inactive_entries_are_never_kept() -> None:
    closed = note("The staging DB is db-7.", superseded_by="k2")
    retired = note("Deploys are frozen.", status="retired")
    finder = DuplicateFinder([closed, retired])
    assert len(finder) == 0
    # A fact that returns to an old value is written again, not folded into the closed version.
    assert finder.find({"type": "note", "content": "The staging DB is db-7."}) is None


# -- near, and the guards ------------------------------------------------------------------


@pytest.mark.parametrize(
    "repeat",
    [
        "Note: the user prefers dark mode.",
        "User prefers dark mode, as of today.",
        "user prefers dark mode!",
        "Dark mode: user prefers it",
    ],
)
def test_near_duplicates_by_word_overlap(repeat: str) -> None:
    kept = note("The user prefers dark mode.")
    hit = DuplicateFinder([kept]).find({"type": "note", "content": repeat})
    assert hit is not None and hit.kind is DuplicateKind.NEAR and hit.kept is kept


@pytest.mark.parametrize(
    "distinct",
    [
        "The staging DB is db-9.",  # another value
        "The staging DB is not db-7.",  # negated
        "The staging DB is db-7 and db-9.",  # extended
        "The staging DB is only db-7.",  # limited
    ],
)
def test_updates_negations_and_extensions_are_never_near_duplicates(distinct: str) -> None:
    kept = note("The staging DB is db-7.")
    for embed in (None, HashEmbedder().embed_documents):
        assert DuplicateFinder([kept], embed=embed, threshold=0.5).find({"type": "note", "content": distinct}) is None


def test_key_tokens_are_values_negations_linkers_and_qualifiers() -> None:
    assert key_tokens("Region eu-west-1 is NOT primary and v2.3 only") == {"eu-west-1", "not", "and", "v2.3", "only"}
    assert key_tokens("Always keep two replicas, never 3 (-1 is off)") == {
        "always",
        "two",
        "never",
        "3",
        "-1",
        "off",
    }


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Set timeout to -5.", ("-5",)),
        ("Set timeout to \u22125", ("-5",)),  # the minus sign reads as a hyphen-minus
        ("Set timeout to +5", ("+5",)),
        ("The staging DB is db-7, not db-9.", ("db-7", "db-9")),
        ("Sample 1.5 percent of traces on v1.2.3", ("1.5 percent", "v1.2.3")),
        ("Delay is 5ms; before it was 5 ms and 5 s", ("5ms", "5 ms", "5 s")),
        ("Discount: 5% (was $5)", ("5%", "$5")),
        ("Runs at 9 pm, then 9 am", ("9 pm", "9 am")),
        ("Keep 3 replicas, 3 of them warm", ("3",)),  # once each; "replicas" and "of" are no units
        ("部署db7之后检查", ("db7",)),  # CJK characters end a run
        ("no numbers here", ()),
    ],
)
def test_values_keep_sign_decimals_versions_and_units(text: str, expected: Any) -> None:
    assert value_tokens(text) == expected


@pytest.mark.parametrize(
    "kept, other",
    [
        ("Set the checkout service timeout to 5", "Set the checkout service timeout to -5"),
        ("Set the request timeout to 5 seconds.", "Set the request timeout to \u22125 seconds."),
        ("Clock offset for the build agents is +2 hours.", "Clock offset for the build agents is -2 hours."),
        ("Set the sampling rate for traces to 1.5 percent.", "Set the sampling rate for traces to 15 percent."),
        ("Pin the payments client library at version 1.2.3.", "Pin the payments client library at version 1.2.4."),
        ("Retry delay for the payment gateway is 5ms.", "Retry delay for the payment gateway is 50ms."),
        ("Retry delay for the payment gateway is 5 ms.", "Retry delay for the payment gateway is 5 s."),
        ("The nightly report job starts at 9 am sharp.", "The nightly report job starts at 9 pm sharp."),
        ("The primary region is us-east-1 for orders.", "The primary region is eu-east-1 for orders."),
        ("Discount for partner accounts is 5%.", "Discount for partner accounts is 5."),
        ("Always use tabs for indentation in Go files.", "Sometimes use tabs for indentation in Go files."),
        ("Do use tabs for indentation in Go files.", "Do not use tabs for indentation in Go files."),
        ("You can deploy the billing service on Fridays.", "You can't deploy the billing service on Fridays."),
        (
            "The nightly build has passed on the release branch.",
            "The nightly build hasn\u2019t passed on the release branch.",
        ),
        ("Reviewers must approve schema migrations.", "Reviewers may approve schema migrations."),
        ("Delete all debug logs older than a week.", "Delete some debug logs older than a week."),
        ("Keep two replicas of the orders database.", "Keep one replicas of the orders database."),
        ("Turn the response cache off for checkout in staging.", "Turn the response cache on for checkout in staging."),
        ("Scale the search workers up during the reindex.", "Scale the search workers down during the reindex."),
        (
            "Route payment webhooks to the new ingestion endpoint.",
            "Route payment webhooks to the old ingestion endpoint.",
        ),
        # one word in twelve differs: the overlap alone (11 / 12 >= 0.9) would merge them
        (
            "Always run the full integration suite before merging a change to the main branch of billing.",
            "Usually run the full integration suite before merging a change to the main branch of billing.",
        ),
    ],
)
def test_a_change_of_sign_decimal_version_unit_or_qualifier_is_never_a_near_duplicate(kept: str, other: str) -> None:
    for embed in (None, HashEmbedder().embed_documents):
        for a, b in ((kept, other), (other, kept)):
            assert DuplicateFinder([note(a, id="k")], embed=embed).find(note(b)) is None
            # while each still merges with its own re-wording
            for repeat in ("Note: " + a[0].lower() + a[1:], a.upper().rstrip(".") + "!"):
                hit = DuplicateFinder([note(a, id="k")], embed=embed).find(note(repeat))
                assert (embed, repeat, hit and hit.kept["id"]) == (embed, repeat, "k")


@pytest.mark.parametrize(
    "kept, other", [("Set timeout to 5", "Set timeout to -5"), ("always use tabs", "never use tabs")]
)
def test_short_texts_differing_in_sign_or_frequency_are_two_memories(kept: str, other: str) -> None:
    for embed in (None, HashEmbedder().embed_documents):
        for a, b in ((kept, other), (other, kept)):
            assert DuplicateFinder([note(a, id="k")], embed=embed).find(note(b)) is None
            assert DuplicateFinder([note(a, id="k")], embed=embed).find(note(a.upper() + "!")) is not None


_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=8).filter(lambda w: w not in STOPWORDS)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_word, min_size=3, max_size=10, unique=True),
    st.integers(min_value=0, max_value=10_000),
    st.decimals(min_value=0, max_value=100, places=2, allow_nan=False),
    st.sampled_from(["ms", "s", "min", "gb", "mb", "%", "days"]),
    st.data(),
)
def test_a_value_and_its_negation_or_another_unit_never_merge_whatever_the_words(
    words: List[str], number: int, decimal: Any, unit: str, data: Any
) -> None:
    """However many words two texts share, "N" / "-N", "N.d" / "Nd" and
    "N unit" / "N other-unit" say different things; the same text re-cased
    and wrapped in filler still merges."""
    at = data.draw(st.integers(min_value=0, max_value=len(words)))
    other_unit = data.draw(st.sampled_from([u for u in ("ms", "s", "min", "gb", "mb", "%", "days") if u != unit]))

    def text(value: str) -> str:
        return " ".join(words[:at] + [value] + words[at:])

    pairs = [(str(number), "-%d" % number), ("%s %s" % (number, unit), "%s %s" % (number, other_unit))]
    if decimal != decimal.to_integral_value():
        pairs.append((str(decimal), str(decimal).replace(".", "")))
    for a, b in pairs:
        finder = DuplicateFinder([note(text(a), id="k")])
        assert finder.find(note(text(b))) is None, (text(a), text(b))
        hit = finder.find(note("Note: " + text(a).upper() + "!"))
        assert hit is not None and hit.kept["id"] == "k", text(a)


def test_a_repeat_adding_a_qualifier_for_emphasis_is_stored_twice() -> None:
    """The cheap error, chosen: "always" changes the claim as often as it
    only stresses it, and a missed repeat costs one slot, not a fact."""
    finder = DuplicateFinder([note("Use tabs for indentation in Go files.", id="k")])
    assert finder.find(note("Always use tabs for indentation in Go files.")) is None
    assert finder.find(note("Note: use tabs for indentation in Go files, as agreed")) is not None


def test_content_words_drop_short_function_words_but_keep_digits_and_cjk() -> None:
    assert content_words("The DB is db-7 of the team") == {"7", "team"}
    assert content_words("部署需要检查") == {"部署", "署需", "需要", "要检", "检查"}


def test_cjk_near_duplicates() -> None:
    kept = note("部署之前必须通过预发布检查")
    assert DuplicateFinder([kept]).find({"type": "note", "content": "注意：部署之前必须通过预发布检查。"}) is not None
    assert DuplicateFinder([kept]).find({"type": "note", "content": "部署之后不用通过预发布检查"}) is None


@pytest.mark.parametrize("embed", [None, HashEmbedder().embed_documents], ids=["words", "cosine"])
def test_a_swapped_word_is_another_claim_however_long_the_text(embed: Any) -> None:
    # 11 of 12 content words shared (overlap 0.92): the recipient changed.
    text = "please send the quarterly revenue report for the north region to %s in finance before the friday meeting"
    finder = DuplicateFinder([note(text % "alice")], embed=embed)
    assert finder.find({"type": "note", "content": text % "bob"}) is None
    assert swapped(frozenset({"report", "alice"}), frozenset({"report", "bob"}))
    # Wrapped or trimmed, it is still the same claim.
    wrapped = finder.find({"type": "note", "content": "Note: " + text % "alice"})
    assert wrapped is not None and wrapped.kind is DuplicateKind.NEAR
    assert not swapped(frozenset({"report", "alice"}), frozenset({"report", "alice", "note"}))


def test_threshold_is_inclusive_and_checked() -> None:
    kept = note("alpha beta gamma delta")
    # 4 shared of 5 words: overlap 1.0 (the shorter is contained), Jaccard 0.8.
    assert DuplicateFinder([kept], threshold=1.0).find({"type": "note", "content": "alpha beta gamma delta epsilon"})
    # 3 shared of the shorter 4 (overlap 0.75), but a word swapped: never a repeat.
    swap = {"type": "note", "content": "alpha beta gamma omega"}
    assert DuplicateFinder([kept], threshold=0.5).find(swap) is None
    # The cosine judged at exactly the threshold counts (contained words, no swap).
    vectors = {"alpha beta gamma delta": (1.0, 0.0), "alpha beta gamma delta epsilon": (0.75, 0.4375**0.5)}

    def embed(texts: List[str]) -> List[Tuple[float, float]]:
        return [vectors[t] for t in texts]

    longer = {"type": "note", "content": "alpha beta gamma delta epsilon"}
    assert DuplicateFinder([kept], embed=embed, threshold=0.75).find(longer) is not None
    assert DuplicateFinder([kept], embed=embed, threshold=0.76).find(longer) is None
    for bad in (0, 1.5, -0.1, True, "0.9"):
        with pytest.raises(ValueError, match="threshold"):
            DuplicateFinder(threshold=bad)  # type: ignore[arg-type]


def test_a_candidate_adding_more_than_it_shares_is_not_a_duplicate() -> None:
    kept = note("release checklist")
    assert (
        DuplicateFinder([kept]).find({"type": "note", "content": "release checklist covers rollback plans metrics"})
        is None
    )


def test_short_texts_are_duplicates_only_when_exact() -> None:
    # every content word shared ("this"/"that" are stopwords), yet two messages
    finder = DuplicateFinder([note("user: keep this", id="a")])
    assert finder.find({"type": "note", "content": "user: keep that"}) is None
    assert finder.find({"type": "note", "content": "User:  keep THIS"}).kind is DuplicateKind.EXACT


def test_values_must_come_in_the_same_order() -> None:
    finder = DuplicateFinder([note("port 80 forwards traffic to port 443 on the gateway", id="a")])
    assert finder.find({"type": "note", "content": "port 443 forwards traffic to port 80 on the gateway"}) is None
    assert finder.find({"type": "note", "content": "Port 80 forwards traffic to port 443 on the gateway!"}) is not None


def test_the_most_similar_kept_entry_wins_and_the_first_on_a_tie() -> None:
    a, b = note("alpha beta gamma", id="a"), note("alpha beta gamma delta", id="b")
    finder = DuplicateFinder([a, b], threshold=0.5)
    # Both contain the candidate's words (overlap 1.0); the closer in length wins.
    hit = finder.find({"type": "note", "content": "alpha beta gamma delta!"})
    assert hit is not None and hit.kept is b and hit.kind is DuplicateKind.NEAR
    hit = DuplicateFinder([b, a], threshold=0.5).find({"type": "note", "content": "alpha beta gamma!"})
    assert hit is not None and hit.kept is a
    c, d = note("apple pear plum fig", id="c"), note("apple pear plum kiwi", id="d")
    hit = DuplicateFinder([c, d], threshold=0.7).find({"type": "note", "content": "apple pear plum"})
    assert hit is not None and hit.kept is c and hit.similarity == 1.0


@pytest.mark.parametrize(
    "embed",
    [
        HashEmbedder().embed_documents,
        HashEmbeddings().embed_documents,  # LangChain Embeddings
        HashEmbedding().get_text_embedding_batch,  # LlamaIndex BaseEmbedding
    ],
)
def test_near_duplicates_by_cosine_with_each_frameworks_embeddings(embed: Any) -> None:
    kept = note("Deploys go through the release checklist")
    finder = DuplicateFinder([kept], embed=embed)
    hit = finder.find({"type": "note", "content": "deploys go through the release checklist!"})
    assert hit is not None and hit.kind is DuplicateKind.NEAR and hit.similarity == pytest.approx(1.0)
    hit = finder.find({"type": "note", "content": "Reminder: deploys go through the release checklist"})
    assert hit is not None and hit.kind is DuplicateKind.NEAR and hit.similarity >= 0.85
    assert finder.find({"type": "note", "content": "Kitten photos are in the shared drive"}) is None


def test_cosine_with_vectors_that_mean_nothing_finds_only_exact_repeats() -> None:
    # LangChain's own fake embedding: unrelated random vectors per text.
    finder = DuplicateFinder(
        [note("user prefers dark mode")], embed=DeterministicFakeEmbedding(size=64).embed_documents
    )
    assert finder.find({"type": "note", "content": "Note: user prefers dark mode"}) is None
    assert finder.find({"type": "note", "content": "USER prefers dark mode"}) is not None


def test_an_embedder_returning_the_wrong_number_of_vectors_is_an_error() -> None:
    with pytest.raises(ValueError, match="1 vectors for 2 texts"):
        DuplicateFinder([note("a b c"), note("d e f")], embed=lambda texts: [[1.0]])


# -- incremental use and batches -----------------------------------------------------------------


def test_admit_keeps_the_first_copy_of_a_batch_and_reports_the_rest() -> None:
    finder = DuplicateFinder([note("The user prefers dark mode.", id="old")])
    batch = [
        {"id": "1", "type": "note", "content": "user prefers dark mode"},
        {"id": "2", "type": "note", "content": "Tea: green, no sugar"},
        {"id": "3", "type": "note", "content": "tea: green, no sugar!"},
        {"id": "4", "type": "note", "content": "Tea: black, no sugar"},
    ]
    hits = finder.admit(batch)
    assert [None if h is None else (h.kept["id"], h.kind.value) for h in hits] == [
        ("old", "near"),
        None,
        ("2", "near"),
        None,
    ]
    assert len(finder) == 3


def test_find_only_reads_and_add_keeps() -> None:
    finder = DuplicateFinder()
    entry = note("standing rule")
    assert finder.find(entry) is None and len(finder) == 0
    finder.add(entry)
    assert finder.find(dict(entry, id="other")) is not None


def test_nearest_lists_the_namespace_neighbours_by_similarity() -> None:
    entries = [
        note("staging DB is db-7", id="a", type="fact"),
        note("staging deploys need approval", id="b", type="fact"),
        note("kitten photos", id="c", type="fact"),
        note("staging DB is db-7", id="d", type="fact", namespace="other"),
        note("staging DB password rotates monthly", id="e", type="note"),
    ]
    finder = DuplicateFinder(entries)
    near = finder.nearest({"type": "fact", "content": "staging DB is db-9"}, k=2)
    # Jaccard of content words: {staging, 9} against {staging, 7} and {staging, deploys, need, approval}.
    assert [(e["id"], round(s, 3)) for e, s in near] == [("a", 0.333), ("b", 0.2)]
    anytype = finder.nearest({"type": "fact", "content": "staging DB password"}, k=5, any_type=True)
    assert {e["id"] for e, _ in anytype} == {"a", "b", "c", "e"}
    with pytest.raises(ValueError):
        finder.nearest({"content": "x"}, k=-1)


def test_bad_entries_are_entry_errors_naming_the_field() -> None:
    with pytest.raises(EntryError, match="'content'"):
        DuplicateFinder([{"id": "x", "content": 3}])
    with pytest.raises(EntryError, match="'content'"):
        DuplicateFinder().find({"id": "y"})


def test_the_finder_never_changes_what_it_was_given() -> None:
    entries = [note("alpha beta", tags=["t"]), note("gamma delta")]
    frozen = copy.deepcopy(entries)
    finder = DuplicateFinder(entries)
    finder.admit([note("alpha beta!"), note("epsilon")])
    assert entries == frozen


# -- provenance of repeats, and no effect on any score ----------------------------------------------


def test_record_repeat_appends_provenance_on_a_copy() -> None:
    kept = note("user prefers dark mode", source="thread:a", created="2026-11-01T00:00:00Z")
    once = record_repeat(kept, source="thread:b", at="2026-11-02T00:00:00Z")
    twice = record_repeat(once, source="thread:c", at="2026-11-03T00:00:00Z")
    assert SEEN not in kept
    assert once[SEEN] == [{"source": "thread:b", "at": "2026-11-02T00:00:00Z"}]
    assert twice[SEEN] == once[SEEN] + [{"source": "thread:c", "at": "2026-11-03T00:00:00Z"}]
    assert once[SEEN] == [{"source": "thread:b", "at": "2026-11-02T00:00:00Z"}]  # not aliased
    assert {k: v for k, v in twice.items() if k != SEEN} == kept


def test_record_repeat_is_idempotent_for_a_retried_write() -> None:
    once = record_repeat(note("x"), source="thread:b", at="2026-11-02T00:00:00Z")
    assert record_repeat(once, source="thread:b", at="2026-11-02T00:00:00Z") == once


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"source": "", "at": "2026-01-01"}, TypeError),
        ({"source": None, "at": "2026-01-01"}, TypeError),
        ({"source": "s", "at": "yesterday"}, ValueError),
        ({"source": "s", "at": 5}, TypeError),
    ],
)
def test_record_repeat_refuses_bad_provenance(kwargs: Dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        record_repeat(note("x"), **kwargs)


def test_record_repeat_refuses_a_malformed_seen_naming_the_entry() -> None:
    with pytest.raises(EntryError, match="'seen'"):
        record_repeat(note("x", seen="thread:a"), source="s", at="2026-01-01")


_entry = st.fixed_dictionaries(
    {"content": st.text(min_size=1, max_size=30)},
    optional={
        "type": st.sampled_from(["note", "fact"]),
        "tags": st.lists(st.sampled_from(["ops", "db", "ui"]), max_size=2),
        "base_priority": st.integers(0, 10),
        "created": st.sampled_from(["2026-11-01T00:00:00Z", "2026-01-01T00:00:00Z"]),
        "project": st.sampled_from(["p", "q"]),
    },
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_entry, min_size=1, max_size=6),
    st.lists(
        st.tuples(
            st.sampled_from(["thread:a", "thread:b", "cli"]), st.sampled_from(["2026-11-05", "2026-12-01T08:00:00Z"])
        ),
        min_size=1,
        max_size=5,
    ),
    st.text(max_size=20),
)
def test_recording_repeats_changes_no_score_and_no_selection(
    entries: List[Dict[str, Any]], repeats: List[Any], message: str
) -> None:
    context = {"message": message, "tags": ["ops"], "project": "p"}
    prepared = prepare_scorer(default_scorer, context, NOW)
    seen = []
    for entry in entries:
        copy_ = entry
        for source, at in repeats:
            copy_ = record_repeat(copy_, source=source, at=at)
        seen.append(copy_)
        assert default_scorer(copy_, context, now=NOW) == default_scorer(entry, context, now=NOW)
        assert prepared.score(copy_) == prepared.score(entry)
    pools = [Pool("all", 40, 3)]
    before = select(entries, pools, context, now=NOW)
    after = select(seen, pools, context, now=NOW)
    index_of = {id(e): i for i, e in enumerate(entries)}
    index_after = {id(e): i for i, e in enumerate(seen)}
    assert [index_of[id(e)] for e in before.pools["all"]] == [index_after[id(e)] for e in after.pools["all"]]


_spacing = st.lists(st.sampled_from([" ", "  ", "\t", "\n", "\u3000"]), min_size=1, max_size=3).map("".join)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=8), min_size=1, max_size=6),
    st.data(),
)
def test_any_respacing_or_recasing_is_an_exact_duplicate_in_its_bucket_only(words: List[str], data: Any) -> None:
    text = " ".join(words)
    gaps = [data.draw(_spacing) for _ in range(len(words) + 1)]
    variant = gaps[0] + "".join(w.upper() + g for w, g in zip(words, gaps[1:]))
    kept = {"id": "k", "type": "note", "content": text, "namespace": "a"}
    finder = DuplicateFinder([kept])
    if normalise_text(variant) == normalise_text(text):  # upper() of some letters changes their casefold
        hit = finder.find({"type": "note", "content": variant, "namespace": "a"})
        assert hit is not None and hit.kept is kept and hit.kind is DuplicateKind.EXACT
    for other in ({"namespace": "b"}, {"namespace": None}, {"namespace": "a", "type": "fact"}):
        assert finder.find(dict({"type": "note", "content": text}, **other)) is None


@pytest.mark.parametrize(
    "kept, other",
    [
        # from the bundled demo store: one word in ten differs, and it is a route
        (
            "Provider sandbox returned 76 errors of type /checkout/confirm during the retry test.",
            "Provider sandbox returned 76 errors of type /refunds during the retry test.",
        ),
        (
            "Ported route /cart to FastAPI; 45 tests green, response schema unchanged.",
            "Ported route /cart/merge to FastAPI; 45 tests green, response schema unchanged.",
        ),
        (
            "Raise retry_limit before the nightly import job runs.",
            "Raise retry_delay before the nightly import job runs.",
        ),
    ],
)
def test_texts_naming_other_paths_or_settings_are_never_near_duplicates(kept: str, other: str) -> None:
    assert DuplicateFinder([note(kept, id="k")]).find(note(other)) is None
    assert DuplicateFinder([note(kept, id="k")]).find(note("Note: " + kept.lower())) is not None


def test_a_short_text_differing_only_by_punctuation_is_a_repeat():
    """Below MIN_NEAR_WORDS word overlap does not count, but the same words
    in the same order, punctuation aside, are one text (found by the
    score-invariance property: "deploy deploy deploy!" was stored twice)."""
    from poolsplit_adapters.memory.duplicates import DuplicateFinder, DuplicateKind

    finder = DuplicateFinder([{"id": "a", "content": "deploy deploy deploy"}])
    for repeat in ("deploy deploy deploy!", "Deploy deploy deploy.", "deploy deploy deploy ?"):
        found = finder.find({"content": repeat})
        assert found is not None and (found.kept["id"], found.kind) == ("a", DuplicateKind.NEAR)
    assert finder.find({"content": "deploy deploy"}) is None  # a word fewer: another text
    assert DuplicateFinder([{"id": "k", "content": "user: keep this"}]).find({"content": "user: keep that"}) is None
