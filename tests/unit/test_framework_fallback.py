"""A framework release that moves a private name the stores read: the call
is served by the store's own public path (the same answer) and a
`FrameworkInternalsWarning` names the distribution, its installed version,
the name and the tested range, once per process and name.

The release is simulated on a real store: its ``_data`` replaced by a
mapping that the store's own methods still use but that is no longer the
``dict`` the package reads (as a release changing the attribute's type
would), or its ``_cursor`` taken away (the Postgres one is in
tests/integration/test_postgres_framework_fallback.py).
"""

from __future__ import annotations

import importlib.metadata
import warnings
from collections import UserDict
from typing import Any, List

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.memory import InMemoryStore

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import BaseStoreMemory
from poolsplit_adapters.stores import internals
from poolsplit_adapters.stores.internals import FrameworkInternalsWarning
from poolsplit_adapters.stores.langgraph.memory_store_search import serves_in_memory_store
from poolsplit_adapters.stores.langgraph.prepared import watermark

NS = ("memories", "u1")
WORDS = ["deploy", "refund", "invoice", "lunch", "garden", "staging"]


class Counts(Embeddings):
    """One count per word of a six-word vocabulary: exact similarities."""

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> List[float]:
        words = text.lower().replace(".", " ").split()
        return [float(words.count(w)) + (0.5 if i == 0 else 0.0) for i, w in enumerate(WORDS)]


class Namespaces(UserDict):  # type: ignore[type-arg]
    """What a release might hold items in: a mapping, not a dict, that
    still makes a namespace's dict on first use as ``defaultdict(dict)`` did."""

    def __missing__(self, key: Any) -> dict:  # type: ignore[type-arg]
        self.data[key] = {}
        return self.data[key]


def _filled(moved: bool) -> InMemoryStore:
    store = InMemoryStore(index={"dims": len(WORDS), "embed": Counts(), "fields": ["content"]})
    if moved:
        store._data = Namespaces()  # the simulated release
    store.put(NS, "fix", {"content": "Quote amounts in cents.", "type": "correction", "scope": "always"})
    for i in range(12):
        text = "%s %s note %d" % (WORDS[i % 6], WORDS[(i * 5) % 6], i)
        store.put(NS, "n%02d" % i, {"content": text, "type": "note"})
    return store


@pytest.fixture(autouse=True)
def _fresh_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(internals, "_warned", set())


POOLS = [Pool("corrections", 0, 0, ("correction",)), Pool("notes", 10_000, 4, ("note",))]


def test_a_moved_in_memory_store_dict_is_said_once_and_the_answer_is_the_same():
    want = BaseStoreMemory(_filled(moved=False), NS, fetch_k=4).select(POOLS, {"message": "refund invoice"})
    store = _filled(moved=True)
    with pytest.warns(FrameworkInternalsWarning) as caught:
        assert not serves_in_memory_store(store)
        got = BaseStoreMemory(store, NS, fetch_k=4).select(POOLS, {"message": "refund invoice"})
    assert [c.entry["id"] for c in got.chosen] == [c.entry["id"] for c in want.chosen]
    assert got.chosen[0].entry["id"] == "fix"
    messages = [str(w.message) for w in caught if w.category is FrameworkInternalsWarning]
    version = importlib.metadata.version("langgraph-checkpoint")
    low, high = internals.TESTED["langgraph-checkpoint"]
    assert messages == [
        "langgraph-checkpoint %s: InMemoryStore._data is not what "
        "poolsplit_adapters/stores/langgraph/memory_store_search.py reads (expected a dict of "
        "namespace -> {key: Item}; tested with langgraph-checkpoint %s to %s); the ranked type "
        "searches run the store's own search instead" % (version, low, high)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FrameworkInternalsWarning)  # said once: no second warning
        again = BaseStoreMemory(store, NS, fetch_k=4).select(POOLS, {"message": "refund invoice"})
    assert [c.entry["id"] for c in again.chosen] == [c.entry["id"] for c in want.chosen]


def test_a_host_that_sets_the_warning_to_error_stops_instead():
    store = _filled(moved=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FrameworkInternalsWarning)
        with pytest.raises(FrameworkInternalsWarning, match="langgraph-checkpoint .*InMemoryStore._data"):
            serves_in_memory_store(store)


def test_a_store_the_fast_path_is_not_for_warns_nothing():
    """A store without an index, or with its own ``batch``, is served by its
    own search by design: no reach moved, nothing to say."""

    class Instrumented(InMemoryStore):
        def batch(self, ops):  # type: ignore[no-untyped-def]
            return super().batch(ops)

    with warnings.catch_warnings():
        warnings.simplefilter("error", FrameworkInternalsWarning)
        assert not serves_in_memory_store(InMemoryStore())
        indexed = {"dims": len(WORDS), "embed": Counts(), "fields": ["content"]}
        assert not serves_in_memory_store(Instrumented(index=indexed))
        assert serves_in_memory_store(_filled(moved=False))


def test_the_agents_watermark_reads_every_turn_when_the_dict_moved():
    """Without the dict there is no cheap change mark: the middleware's
    prepared recall reads the store each turn (None), and says why once."""
    assert watermark(_filled(moved=False), [NS]) is not None
    store = _filled(moved=True)
    with pytest.warns(FrameworkInternalsWarning, match=r"InMemoryStore\._data .*prepared\.py"):
        assert watermark(store, [NS]) is None


def test_a_postgres_store_without_its_cursor_is_served_by_its_own_path():
    """``PostgresStore._cursor()`` gone (a store made without connecting:
    the check reads the class, not the server)."""
    from langgraph.store.postgres import PostgresStore

    from poolsplit_adapters.stores.postgres import plain_postgres_store

    class Moved(PostgresStore):
        _cursor = None  # type: ignore[assignment]

    version = importlib.metadata.version("langgraph-checkpoint-postgres")
    with pytest.warns(FrameworkInternalsWarning) as caught:
        assert not plain_postgres_store(Moved(conn=None))  # type: ignore[arg-type]
    assert [str(w.message) for w in caught] == [
        "langgraph-checkpoint-postgres %s: PostgresStore._cursor() is not what poolsplit_adapters/stores/"
        "postgres.py reads (expected a context manager yielding a cursor of the store's connection; "
        "tested with langgraph-checkpoint-postgres %s to %s); the store's own search and list serve "
        "the reads instead" % ((version,) + internals.TESTED["langgraph-checkpoint-postgres"])
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FrameworkInternalsWarning)
        assert plain_postgres_store(PostgresStore(conn=None))  # type: ignore[arg-type]
