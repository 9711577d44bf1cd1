"""search_all_namespaces: the operators' explicit door across tenants."""

from __future__ import annotations

import pathlib

import pytest

import poolsplit_adapters
from poolsplit_adapters import EntryError
from poolsplit_adapters.stores import SQLiteMemoryStore, search_all_namespaces

ENTRIES = [
    {"id": "a1", "namespace": "acme", "content": "refund totals round half-even", "tags": ["money"]},
    {"id": "a2", "namespace": "acme", "content": "refund approvals need a manager"},
    {"id": "a3", "namespace": "acme", "content": "nothing relevant here"},
    {"id": "b1", "namespace": "bolt", "content": "money moves on fridays", "superseded_by": "b2"},
    {"id": "b2", "namespace": "bolt", "content": "money moves on mondays"},
    {"id": "g1", "content": "never guess a refund currency", "status": "archived"},
    {"id": "g2", "content": "REFUND policy: ask first"},
]


def ids(found):
    return {ns: [(h.entry["id"], h.score, h.matched) for h in hits] for ns, hits in found.items()}


def test_matches_grouped_by_namespace_ranked_by_share_of_query_words():
    found = search_all_namespaces(ENTRIES, "refund money")
    assert list(found) == [None, "acme", "bolt"]  # entries without a namespace first, then by name
    assert ids(found) == {
        None: [("g2", 0.5, ("refund",))],
        "acme": [("a1", 1.0, ("money", "refund")), ("a2", 0.5, ("refund",))],  # tags count as words
        "bolt": [("b2", 0.5, ("money",))],
    }


def test_inactive_entries_only_on_request_and_limit_per_namespace():
    found = search_all_namespaces(ENTRIES, "refund money", include_inactive=True, limit=1)
    assert ids(found) == {
        None: [("g1", 0.5, ("refund",))],  # ties on score break by id
        "acme": [("a1", 1.0, ("money", "refund"))],
        "bolt": [("b1", 0.5, ("money",))],
    }
    assert search_all_namespaces(ENTRIES, "unmatched words") == {}


def test_reads_a_store_and_refuses_bad_arguments(tmp_path):
    with SQLiteMemoryStore(tmp_path / "m.db") as store:
        store.add(ENTRIES)
        assert ids(search_all_namespaces(store, "mondays")) == {"bolt": [("b2", 1.0, ("mondays",))]}
    with pytest.raises(ValueError, match="no searchable word"):
        search_all_namespaces(ENTRIES, "a an the")
    with pytest.raises(ValueError, match="limit must be a non-negative int"):
        search_all_namespaces(ENTRIES, "refund", limit=-1)
    with pytest.raises(EntryError, match=r"entry 'x' \(index 1\): field 'tags'"):
        search_all_namespaces([ENTRIES[0], {"id": "x", "content": "y", "tags": "ops"}], "refund")


def test_words_of_any_script_and_their_inflections_match():
    entries = [
        {"id": "r1", "content": "Refunds are rounded down to the cent"},
        {"id": "r2", "content": "Two refunds were late"},
        {"id": "zh", "content": "退款被四舍五入到分"},
        {"id": "he", "content": "החזר כספי נשלח ביום שני"},
        {"id": "menu", "content": "Lunch menu"},
    ]
    # Both say "refunds" once (share 1.0); r2 has 3 terms (two, refund, late)
    # against r1's 4 (refund, round, down, cent), so BM25 puts it first.
    assert ids(search_all_namespaces(entries, "refund")) == {None: [("r2", 1.0, ("refund",)), ("r1", 1.0, ("refund",))]}
    assert ids(search_all_namespaces(entries, "退款")) == {None: [("zh", 1.0, ("退款",))]}
    assert ids(search_all_namespaces(entries, "מתי נשלח החזר")) == {None: [("he", 2 / 3, ("החזר", "נשלח"))]}


def test_no_agent_path_uses_the_cross_namespace_search():
    # Only the CLI (an operator's tool) and the stores package that defines
    # and exports it may name it; adapters, middleware and memory blocks never.
    package = pathlib.Path(poolsplit_adapters.__file__).parent
    allowed = {package / "cli.py", package / "stores" / "__init__.py", package / "stores" / "search.py"}
    users = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path not in allowed and ("search_all_namespaces" in path.read_text() or "stores.search" in path.read_text())
    ]
    assert users == []
