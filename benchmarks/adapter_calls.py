"""Benchmark: each adapter's call against the bare index's, over one store,
in one run, as ratios (the issue's bar: <= x2 ``MemoryIndex.retrieve_pools``).

    python benchmarks/adapter_calls.py                   # 100k entries
    python benchmarks/adapter_calls.py --sizes 100000 1000000 --queries 5

For each size: the synthetic mixed store of ``benchmarks/synth.py`` (4 pools,
always-scope corrections), the same queries, the core's ``len/4`` token
counter on every side, and the median over the queries (each query the best
of ``--repeats``) of:

* ``MemoryIndex.retrieve_pools`` (the baseline) and ``MemoryIndex.select``
  (the same with the report, never read), and ``MemoryIndex.select`` with
  the adapters' default scorer (``RelevanceScorer``: BM25 and bounded
  boosts), the part of each adapter call that is the ranking itself;
* LangChain ``PoolSplitRetriever(documents=...).invoke`` with a callback
  handler listening to its ``poolsplit_selection`` event (so the event is
  built and sent, as under tracing);
* LlamaIndex ``PoolSplitRetriever(nodes=...).retrieve`` with an
  instrumentation handler listening to ``PoolSplitSelectionEvent``;
* LlamaIndex ``poolsplit_memory_blocks``: both blocks' ``aget`` for one
  message (one selection, shared), timed on each message's first call (the
  blocks keep the selection of the last message).

A second table counts query embeddings per call on the vector-store paths
(LangChain ``from_vectorstore`` over ``InMemoryVectorStore``, LlamaIndex
``from_vector_store_index`` over ``VectorStoreIndex``; without and with
``embeddings=``, sync and async), with the counting hash embeddings of
``tests/counting_embeddings.py``: the issue's bar is exactly 1.

Construction is measured by ``benchmarks/construction.py``; the agent
middleware per turn by ``benchmarks/middleware_turn.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The counting embeddings live with the tests (tests/counting_embeddings.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

import docs_tables  # noqa: E402
import synth  # noqa: E402
from counting_embeddings import CountingEmbedding, CountingEmbeddings  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402
from llama_index.core import VectorStoreIndex  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage  # noqa: E402
from llama_index.core.instrumentation import get_dispatcher  # noqa: E402
from llama_index.core.instrumentation.event_handlers import BaseEventHandler  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402

from poolsplit_adapters import MemoryIndex  # noqa: E402
from poolsplit_adapters.langchain import PoolSplitRetriever as LangChainRetriever  # noqa: E402
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaIndexRetriever  # noqa: E402
from poolsplit_adapters.llama_index import poolsplit_memory_blocks  # noqa: E402
from poolsplit_adapters.llama_index.events import PoolSplitSelectionEvent  # noqa: E402
from poolsplit_adapters.poolsplit import default_token_counter  # noqa: E402
from poolsplit_adapters.relevance import RelevanceScorer  # noqa: E402


class Listening(BaseCallbackHandler):
    """A LangChain handler that receives the selection event (and keeps its total)."""

    def __init__(self) -> None:
        self.seen = 0

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name == "poolsplit_selection":
            self.seen += data["dropped_total"] > 0


class Announced(BaseEventHandler):
    seen: int = 0

    @classmethod
    def class_name(cls) -> str:
        return "Announced"

    def handle(self, event: Any, **kwargs: Any) -> None:
        if isinstance(event, PoolSplitSelectionEvent):
            self.seen += 1


def best(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_size(size: int, queries: int, repeats: int) -> List[List[str]]:
    store = synth.make_store(size)
    contexts = [c for c in synth.make_queries(queries)]
    messages = [str(c.get("message", "")) for c in contexts]
    metadata = [{k: v for k, v in e.items() if k not in ("content", "id")} for e in store]
    documents = [Document(page_content=e["content"], metadata=m, id=e["id"]) for e, m in zip(store, metadata)]
    nodes = [TextNode(text=e["content"], metadata=m, id_=e["id"]) for e, m in zip(store, metadata)]
    pools, now = synth.POOLS, synth.NOW
    counter = default_token_counter
    index = MemoryIndex(store, token_counter=counter)
    relevance = RelevanceScorer()
    index.select(pools, {"message": messages[-1]}, now=now, scorer=relevance)  # its postings, built once
    langchain = LangChainRetriever(documents=documents, pools=pools, token_counter=counter, now=now)
    llama = LlamaIndexRetriever(pools, nodes=nodes, token_counter=counter, now=now)
    blocks = poolsplit_memory_blocks(store, pools, token_counter=counter, now=now)
    del documents, nodes
    handler = Listening()
    announced = Announced()
    get_dispatcher().add_event_handler(announced)

    async def both_blocks(message: str) -> None:
        chat = [ChatMessage(role="user", content=message)]
        for block in blocks:
            await block.aget(chat)

    calls: Dict[str, Callable[[int], Any]] = {
        "MemoryIndex.retrieve_pools": lambda n: index.retrieve_pools(pools, {"message": messages[n]}, now=now),
        "MemoryIndex.select (report unread)": lambda n: index.select(pools, {"message": messages[n]}, now=now),
        # The adapters rank with RelevanceScorer (BM25 + bounded boosts): the
        # bare index with that scorer is what the adapters add their work to.
        "MemoryIndex.select, the adapters' RelevanceScorer": lambda n: index.select(
            pools, {"message": messages[n]}, now=now, scorer=relevance
        ),
        "LangChain PoolSplitRetriever(documents=).invoke": lambda n: langchain.invoke(
            messages[n], config={"callbacks": [handler]}
        ),
        "LlamaIndex PoolSplitRetriever(nodes=).retrieve": lambda n: llama.retrieve(messages[n]),
        "LlamaIndex poolsplit_memory_blocks (both blocks' aget)": lambda n: asyncio.run(both_blocks(messages[n])),
    }
    # The memory blocks keep one selection per message (both blocks share
    # it): each message is timed once, on its first call, never from that cache.
    once = {"LlamaIndex poolsplit_memory_blocks (both blocks' aget)"}
    medians: Dict[str, float] = {}
    try:
        for label, call in calls.items():
            call(len(messages) - 1) if label in once else call(0)  # warm
            gc.collect()
            runs = 1 if label in once else repeats
            times = (best(lambda n=n, c=call: c(n), runs) for n in range(len(messages) - 1))
            medians[label] = statistics.median(times)
    finally:
        get_dispatcher().event_handlers.remove(announced)
    if not handler.seen or not announced.seen:
        raise SystemExit("an adapter sent no selection event")
    base = medians["MemoryIndex.retrieve_pools"]
    rows = []
    for label, seconds in medians.items():
        rows.append([f"{size:,}", label, "%.1f ms" % (1000 * seconds), "x%.2f" % (seconds / base)])
        print(" | ".join(rows[-1]))
    return rows


def embedding_calls(size: int = 200) -> List[List[str]]:
    """Query embeddings per call on each vector-store path, counted (a small
    store: the count does not depend on its size)."""
    store = synth.make_store(size, seed=4)
    metadata = [{k: v for k, v in e.items() if k not in ("content", "id")} for e in store]
    pools, now, counter = synth.POOLS, synth.NOW, default_token_counter
    message = str(synth.make_queries(1)[0]["message"])
    rows: List[List[str]] = []

    def lc(with_embeddings: bool) -> Any:
        embeddings = CountingEmbeddings()
        vectors = InMemoryVectorStore(embeddings)
        vectors.add_documents(
            [Document(page_content=e["content"], metadata=m, id=e["id"]) for e, m in zip(store, metadata)]
        )
        extra = {"embeddings": embeddings} if with_embeddings else {}
        retriever = LangChainRetriever.from_vectorstore(vectors, pools, token_counter=counter, now=now, **extra)
        return retriever, lambda: embeddings.queries

    def li(with_embeddings: bool) -> Any:
        embed = CountingEmbedding()
        index = VectorStoreIndex(
            [TextNode(text=e["content"], metadata=m, id_=e["id"]) for e, m in zip(store, metadata)], embed_model=embed
        )
        extra = {"embeddings": embed} if with_embeddings else {}
        retriever = LlamaIndexRetriever.from_vector_store_index(index, pools, token_counter=counter, now=now, **extra)
        return retriever, lambda: embed._queries

    for label, make, sync, asynchronous in (
        ("LangChain from_vectorstore", lc, "invoke", "ainvoke"),
        ("LlamaIndex from_vector_store_index", li, "retrieve", "aretrieve"),
    ):
        for with_embeddings in (False, True):
            retriever, queries = make(with_embeddings)
            counts = []
            for mode in ("sync", "async"):
                before = queries()
                if mode == "sync":
                    getattr(retriever, sync)(message)
                else:
                    asyncio.run(getattr(retriever, asynchronous)(message))
                counts.append(queries() - before)
            name = label + (" + embeddings=" if with_embeddings else "")
            rows.append([name, str(counts[0]), str(counts[1])])
            print(" | ".join(rows[-1]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--large", type=int, default=500_000, help="from this size on: one repetition and half the queries"
    )
    args = parser.parse_args()
    print("load %.1f" % os.getloadavg()[0])
    rows: List[List[str]] = []
    for size in args.sizes:
        large = size >= args.large
        rows += bench_size(size, max(3, args.queries // 2) if large else args.queries, 1 if large else args.repeats)
    print("load at the end %.1f" % os.getloadavg()[0])
    header = ["entries", "call", "median", "÷ MemoryIndex.retrieve_pools"]
    calls = docs_tables.markdown_table(header, rows, "llrr")
    embedded = docs_tables.markdown_table(
        ["vector-store path", "query embeddings per sync call", "per async call"], embedding_calls(), "lrr"
    )
    docs_tables.write_table("adapter_calls", calls + "\n\n" + embedded)


if __name__ == "__main__":
    main()
