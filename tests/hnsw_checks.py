"""The corrections-under-HNSW checks every Postgres vector store shares: a
synthetic memory of ROWS rows with CORRECTIONS always-scope ones, QUERIES
queries, the premise (the store's own filtered search, the index forced,
misses corrections) and the guarantee (every retriever call holds them)."""

from __future__ import annotations

from typing import Any, Dict, List

import synth

ROWS, CORRECTIONS, QUERIES = 5_000, 6, 20
#: Sessions that cannot scan sequentially: the planner must use the index.
FORCE_INDEX = {"options": "-c enable_seqscan=off"}


def memory() -> List[Dict[str, Any]]:
    return synth.make_store(ROWS, corrections=CORRECTIONS)


def fix_ids(items: List[Dict[str, Any]]) -> List[str]:
    ids = sorted(e["id"] for e in items if e.get("scope") == "always")
    assert len(ids) == CORRECTIONS
    return ids


def queries() -> List[str]:
    return [q["message"] for q in synth.make_queries(QUERIES)]


def assert_store_search_misses_corrections(store: Any) -> None:
    """The premise: the store's own filtered similarity search for the
    corrections, through the forced index, loses some (so the guarantee's
    test can fail)."""
    found = [len(store.similarity_search(q, k=1000, filter={"scope": "always"})) for q in queries()]
    assert max(found) < CORRECTIONS


def assert_every_call_holds_every_correction(store: Any, items: List[Dict[str, Any]]) -> None:
    """Every call of the LangChain retriever over ``store`` holds every
    correction of ``items``: 100% of corrections in 100% of queries."""
    from poolsplit_adapters.langchain import PoolSplitRetriever

    retriever = PoolSplitRetriever.from_vectorstore(store, synth.POOLS, fetch_k=20, now=synth.NOW)
    wanted = fix_ids(items)
    present = [sorted(d.id for d in retriever.invoke(q) if d.metadata.get("scope") == "always") for q in queries()]
    assert present == [wanted] * QUERIES
