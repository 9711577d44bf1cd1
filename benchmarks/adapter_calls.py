"""Benchmark: each adapter's call against the bare index's, over one store,
in one run, as ratios (the issue's bar: <= x2 ``MemoryIndex.retrieve_pools``).

    python benchmarks/adapter_calls.py                   # 100k entries
    python benchmarks/adapter_calls.py --sizes 100000 1000000   # what make bench runs

For each size: the synthetic mixed store of ``benchmarks/synth.py`` (4 pools,
always-scope corrections), the same queries, the core's ``len/4`` token
counter on every side. The calls are interleaved (each round times every
call on every query, so a change of the machine's load falls on all of them
alike); per call and query the best of ``--repeats`` rounds, then the median
over the queries, on the wall clock and in process CPU time (on a shared
machine the wall clock also holds other processes' time: the CPU ratio is
the one to read). Timed:

* ``MemoryIndex.retrieve_pools`` (the baseline) and ``MemoryIndex.select``
  (the same with the report, never read), and ``MemoryIndex.select`` with
  the adapters' default scorer (:func:`~poolsplit_adapters.defaults.default_adapter_scorer`:
  BM25 with its query expansion, and bounded boosts), the part of each
  adapter call that is the ranking itself;
* LangChain ``PoolSplitRetriever(documents=...).invoke`` with a callback
  handler listening to its ``poolsplit_selection`` event (so the event is
  built and sent, as under tracing);
* LangChain ``PoolSplitMemoryMiddleware.wrap_model_call`` over a LangGraph
  ``InMemoryStore`` holding the store in one namespace (its prepared index,
  kept between calls; each call a new message, so nothing is reused), the
  stream event sent;
* LlamaIndex ``PoolSplitRetriever(nodes=...).retrieve`` with an
  instrumentation handler listening to ``PoolSplitSelectionEvent``;
* LlamaIndex ``poolsplit_memory_blocks``: both blocks' ``aget`` for one
  message (one selection, shared; consecutive calls have different
  messages, so none comes from the blocks' cache of the last message);
* the two adapters whose input is another stage's output, LangChain
  ``PoolSplitCompressor.compress_documents`` and LlamaIndex
  ``PoolSplitNodePostprocessor``, over ``--stage`` documents / nodes of the
  store (a wide base retriever's output: its corrections and an even sample
  of the rest). Their input is new on every call, so converting it and
  selecting over it is O(input) by nature: they are measured against
  the core ``select`` over the same entries with the same scorer (what any
  call over fresh input costs), and their ratio to the bare index over the
  whole store is given too.

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
from typing import Any, Callable, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The counting embeddings live with the tests (tests/counting_embeddings.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

import docs_tables  # noqa: E402
import synth  # noqa: E402
from counting_embeddings import CountingEmbedding, CountingEmbeddings  # noqa: E402
from langchain.agents.middleware.types import ModelRequest, ModelResponse  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402
from langgraph.runtime import Runtime  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402
from llama_index.core import VectorStoreIndex  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage  # noqa: E402
from llama_index.core.instrumentation import get_dispatcher  # noqa: E402
from llama_index.core.instrumentation.event_handlers import BaseEventHandler  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402

from poolsplit_adapters import MemoryIndex, select  # noqa: E402
from poolsplit_adapters.defaults import default_adapter_scorer  # noqa: E402
from poolsplit_adapters.langchain import (  # noqa: E402
    BaseStoreMemory,
    PoolSplitCompressor,
    PoolSplitMemoryMiddleware,
    RecallConfig,
    WriteConfig,
)
from poolsplit_adapters.langchain import PoolSplitRetriever as LangChainRetriever  # noqa: E402
from poolsplit_adapters.llama_index import PoolSplitNodePostprocessor, poolsplit_memory_blocks  # noqa: E402
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaIndexRetriever  # noqa: E402
from poolsplit_adapters.llama_index.events import PoolSplitSelectionEvent  # noqa: E402
from poolsplit_adapters.poolsplit import default_token_counter  # noqa: E402


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


def clocks(fn: Callable[[], Any]) -> Tuple[float, float]:
    """(wall seconds, process CPU seconds) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def stage_sample(store: List[Dict[str, Any]], count: int) -> List[int]:
    """Positions of a base stage's output: the always-scope entries and an
    even sample of the rest, ``count`` in all (in store order)."""
    fixes = [n for n, e in enumerate(store) if e.get("scope") == "always"]
    rest = len(store) - len(fixes)
    step = max(1, rest // max(1, count - len(fixes)))
    return fixes + list(range(len(fixes), len(store), step))[: max(0, count - len(fixes))]


U1 = ("memories", "u1")


def middleware_call(
    store: List[Dict[str, Any]], pools: Any, now: Any, counter: Any
) -> Tuple[Callable[[str], Any], float]:
    """One ``wrap_model_call`` per message over an ``InMemoryStore`` holding
    ``store`` in one namespace (and the seconds the load took)."""
    graph_store = InMemoryStore()
    begin = time.perf_counter()
    loader = BaseStoreMemory(graph_store, U1, token_counter=counter)
    for start in range(0, len(store), 10_000):
        loader.put_many(store[start : start + 10_000])
    loaded = time.perf_counter() - begin
    middleware = PoolSplitMemoryMiddleware(
        pools, namespace=U1, now=now, recall=RecallConfig(token_counter=counter), write=WriteConfig(remember=False)
    )
    model = GenericFakeChatModel(messages=iter([]))
    events: List[Any] = []
    runtime = Runtime(store=graph_store, stream_writer=events.append)
    answer = ModelResponse(result=[AIMessage("ok")])

    def call(message: str) -> Any:
        events.clear()
        messages = [HumanMessage(message, id="m-%d" % (hash(message) & 0xFFFF))]
        request = ModelRequest(model=model, messages=messages, state={"messages": messages}, runtime=runtime)
        response = middleware.wrap_model_call(request, lambda _request: answer)
        if not events:
            raise SystemExit("the middleware sent no selection event")
        return response

    return call, loaded


def bench_size(size: int, queries: int, repeats: int, stage: int) -> List[List[str]]:
    store = synth.make_store(size)
    contexts = [c for c in synth.make_queries(queries)]
    messages = [str(c.get("message", "")) for c in contexts]
    metadata = [{k: v for k, v in e.items() if k not in ("content", "id")} for e in store]
    documents = [Document(page_content=e["content"], metadata=m, id=e["id"]) for e, m in zip(store, metadata)]
    nodes = [TextNode(text=e["content"], metadata=m, id_=e["id"]) for e, m in zip(store, metadata)]
    pools, now = synth.POOLS, synth.NOW
    counter = default_token_counter
    index = MemoryIndex(store, token_counter=counter)
    relevance = default_adapter_scorer()
    index.select(pools, {"message": messages[-1]}, now=now, scorer=relevance)  # its postings, built once
    langchain = LangChainRetriever(documents=documents, pools=pools, token_counter=counter, now=now)
    llama = LlamaIndexRetriever(pools, nodes=nodes, token_counter=counter, now=now)
    blocks = poolsplit_memory_blocks(store, pools, token_counter=counter, now=now)
    agent_call, loaded = middleware_call(store, pools, now, counter)
    print("%d entries: the InMemoryStore namespace loaded in %.1f s" % (size, loaded))
    picked = stage_sample(store, stage)
    staged_entries = [store[n] for n in picked]
    staged_documents = [documents[n] for n in picked]
    staged_nodes = [NodeWithScore(node=nodes[n], score=1.0) for n in picked]
    compressor = PoolSplitCompressor(pools=pools, token_counter=counter, now=now)
    postprocessor = PoolSplitNodePostprocessor(pools=pools, token_counter=counter, now=now)
    del documents, nodes
    handler = Listening()
    announced = Announced()
    get_dispatcher().add_event_handler(announced)

    async def both_blocks(message: str) -> None:
        chat = [ChatMessage(role="user", content=message)]
        for block in blocks:
            await block.aget(chat)

    staged = "%s of %s" % (f"{len(picked):,}", f"{size:,}")
    # label -> (input, call); the first is the baseline of every ratio.
    calls: Dict[str, Tuple[str, Callable[[int], Any]]] = {
        "MemoryIndex.retrieve_pools": (
            "store",
            lambda n: index.retrieve_pools(pools, {"message": messages[n]}, now=now),
        ),
        "MemoryIndex.select (report unread)": (
            "store",
            lambda n: index.select(pools, {"message": messages[n]}, now=now),
        ),
        # The adapters rank with their default scorer (BM25 + expansion +
        # bounded boosts): the bare index with it is what they add work to.
        "MemoryIndex.select, the adapters' default scorer": (
            "store",
            lambda n: index.select(pools, {"message": messages[n]}, now=now, scorer=relevance),
        ),
        "LangChain PoolSplitRetriever(documents=).invoke": (
            "store",
            lambda n: langchain.invoke(messages[n], config={"callbacks": [handler]}),
        ),
        "LangChain PoolSplitMemoryMiddleware.wrap_model_call (InMemoryStore)": (
            "store",
            lambda n: agent_call(messages[n]),
        ),
        "LlamaIndex PoolSplitRetriever(nodes=).retrieve": ("store", lambda n: llama.retrieve(messages[n])),
        "LlamaIndex poolsplit_memory_blocks (both blocks' aget)": (
            "store",
            lambda n: asyncio.run(both_blocks(messages[n])),
        ),
        "core select over the stage's entries, the adapters' default scorer": (
            staged,
            lambda n: select(staged_entries, pools, {"message": messages[n]}, now=now, scorer=default_adapter_scorer()),
        ),
        "LangChain PoolSplitCompressor.compress_documents": (
            staged,
            lambda n: compressor.compress_documents(staged_documents, messages[n], callbacks=[handler]),
        ),
        "LlamaIndex PoolSplitNodePostprocessor": (
            staged,
            lambda n: postprocessor.postprocess_nodes(staged_nodes, QueryBundle(messages[n])),
        ),
    }
    timed = range(len(messages) - 1)
    walls: Dict[str, List[float]] = {label: [float("inf")] * len(timed) for label in calls}
    cpus: Dict[str, List[float]] = {label: [float("inf")] * len(timed) for label in calls}
    try:
        for _, call in calls.values():
            call(len(messages) - 1)  # warm (the last query is never timed)
        for _ in range(repeats):
            for label, (_, call) in calls.items():
                gc.collect()
                for n in timed:
                    wall, cpu = clocks(lambda n=n, c=call: c(n))
                    walls[label][n] = min(walls[label][n], wall)
                    cpus[label][n] = min(cpus[label][n], cpu)
    finally:
        get_dispatcher().event_handlers.remove(announced)
    if not handler.seen or not announced.seen:
        raise SystemExit("an adapter sent no selection event")
    base_wall = statistics.median(walls["MemoryIndex.retrieve_pools"])
    base_cpu = statistics.median(cpus["MemoryIndex.retrieve_pools"])
    fresh = "core select over the stage's entries, the adapters' default scorer"
    core_cpu = statistics.median(cpus[fresh])
    # The adapters rank with their default scorer: the bare index's select with it is the ranking's own cost.
    ranked_cpu = statistics.median(cpus["MemoryIndex.select, the adapters' default scorer"])
    rows = []
    for label, (given, _) in calls.items():
        wall, cpu = statistics.median(walls[label]), statistics.median(cpus[label])
        own = "x%.2f" % (cpu / core_cpu) if given == staged else "x%.2f" % (cpu / ranked_cpu)
        rows.append(
            [
                f"{size:,}",
                label,
                given,
                "%.1f ms" % (1000 * cpu),
                "%.1f ms" % (1000 * wall),
                "x%.2f" % (cpu / base_cpu),
                "x%.2f" % (wall / base_wall),
                own,
            ]
        )
        print(" | ".join(rows[-1]))
        if label.startswith(("LangChain", "LlamaIndex")):
            # Over the store: against the bare index; over a stage's fresh input: against the core select over it.
            basis = "MemoryIndex.retrieve_pools" if given != staged else "the core select over its input"
            BARS.append((size, label, basis, cpu / (base_cpu if given != staged else core_cpu)))
    return rows


#: (size, call, what it is measured against, cpu ratio) of each adapter call: issue 40 item 7's bar, <= x2.
BARS: List[Any] = []
AT_MOST = 2.0


def print_bars() -> None:
    """Each adapter call against its bare path, as a ratio of this run (issue 40 item 7: <= x2)."""
    print("\nissue 40 item 7, this run: every adapter call <= x%g its bare path (cpu)" % AT_MOST)
    for size, label, basis, ratio in BARS:
        verdict = "ok" if ratio <= AT_MOST else "MISSED"
        print("  %9s %-66s / %-31s x%5.2f  %s" % (f"{size:,}", label, basis, ratio, verdict))


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
    parser.add_argument("--queries", type=int, default=8, help="queries per size (the last one warms up)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds; each call's best is kept")
    parser.add_argument("--stage", type=int, default=1_000, help="documents a base stage hands the compressor")
    parser.add_argument(
        "--large", type=int, default=500_000, help="from this size on: two rounds and at most 6 queries"
    )
    args = parser.parse_args()
    print("load %.1f" % os.getloadavg()[0])
    rows: List[List[str]] = []
    for size in args.sizes:
        large = size >= args.large
        queries = min(6, args.queries) if large else args.queries
        rows += bench_size(size, queries, min(2, args.repeats) if large else args.repeats, args.stage)
    load = "load at the end %.1f" % os.getloadavg()[0]
    print(load)
    header = [
        "entries",
        "call",
        "input",
        "median cpu",
        "median wall",
        "÷ MemoryIndex.retrieve_pools (cpu)",
        "(wall)",
        "÷ the same input's core select, adapters' scorer (cpu)",
    ]
    calls = docs_tables.markdown_table(header, rows, "lllrrrrr")
    embedded = docs_tables.markdown_table(
        ["vector-store path", "query embeddings per sync call", "per async call"], embedding_calls(), "lrr"
    )
    note = "*Machine load (1-minute average) at the end of the timed calls: %s.*" % load.split()[-1]
    docs_tables.write_table("adapter_calls", calls + "\n\n" + note + "\n\n" + embedded)
    print_bars()


if __name__ == "__main__":
    main()
