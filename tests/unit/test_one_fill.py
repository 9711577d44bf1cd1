"""One fill (issue #40): every adapter call, the middleware and the stores run the core's ``fill_pools``.

Traced, not mocked: a profile hook counts the calls whose code is the core's fill
(``poolsplit_adapters.poolsplit.fill_pools.__code__``), around real framework objects (a LangChain retriever
and LCEL chain, the agent middleware's model call, a LlamaIndex retriever and memory blocks inside a
``Memory``) and the stores' ``select``. A path that filled pools by another function would count 0.
"""

from __future__ import annotations

import contextlib
import datetime
import sys
import threading
from collections.abc import Iterator
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.runtime import Runtime
from langgraph.store.memory import InMemoryStore
from lc_helpers import WordHashEmbedding
from llama_index.core import VectorStoreIndex
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.memory import Memory
from llama_index.core.schema import NodeWithScore

from poolsplit_adapters import MemoryIndex, Pool, fastpath, poolsplit
from poolsplit_adapters.langchain import (
    BaseStoreMemory,
    PoolSplitCompressor,
    PoolSplitMemoryMiddleware,
    PoolSplitRetriever,
    WriteConfig,
)
from poolsplit_adapters.llama_index import PoolSplitNodePostprocessor, nodes_from, poolsplit_memory_blocks
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaRetriever
from poolsplit_adapters.stores import InProcessStore, SQLiteMemoryStore

NOW = datetime.datetime(2026, 7, 1)
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("recent", 300, 3, ("episode", "note"))]
ENTRIES = [
    {"id": "fix", "content": "Quote amounts in integer cents.", "type": "correction", "scope": "always"},
    {"id": "ep", "content": "The refund rounding incident in October.", "type": "episode"},
    {"id": "note", "content": "Deploys go out on Tuesdays after the review.", "type": "note"},
]


@contextlib.contextmanager
def core_fills() -> Iterator[list[int]]:
    """Counts the calls of the core's fill in this thread and in threads started meanwhile."""
    code, count = poolsplit.fill_pools.__code__, [0]

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code is code:
            count[0] += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        yield count
    finally:
        sys.setprofile(previous)
        threading.setprofile(None)  # type: ignore[arg-type]


def documents() -> list[Document]:
    return [
        Document(page_content=e["content"], id=e["id"], metadata={k: v for k, v in e.items() if k != "content"})
        for e in ENTRIES
    ]


def test_the_core_select_and_its_faster_sources_run_the_one_fill():
    for run in (
        lambda: poolsplit.select(ENTRIES, POOLS, {"message": "refund"}, now=NOW),
        lambda: poolsplit.retrieve(ENTRIES, POOLS[1], {"message": "refund"}, now=NOW),
        lambda: fastpath.select(ENTRIES, POOLS, {"message": "refund"}, now=NOW),
        lambda: MemoryIndex(ENTRIES).select(POOLS, {"message": "refund"}, now=NOW),
    ):
        with core_fills() as fills:
            run()
        assert fills[0] == 1


def test_a_langchain_retriever_call_runs_the_core_fill():
    retriever = PoolSplitRetriever(pools=POOLS, documents=documents(), now=NOW)
    with core_fills() as fills:
        got = (retriever | RunnableLambda(lambda docs: [d.id for d in docs])).invoke("refund rounding")
    assert got[0] == "fix"
    assert fills[0] >= 1
    vectors = InMemoryVectorStore.from_documents(documents(), WordHashEmbedding())
    over_store = PoolSplitRetriever.from_vectorstore(vectors, pools=POOLS, now=NOW)
    with core_fills() as fills:
        assert over_store.invoke("refund rounding")[0].id == "fix"
    assert fills[0] >= 1
    with core_fills() as fills:
        compressed = PoolSplitCompressor(pools=POOLS, now=NOW).compress_documents(documents(), "refund")
    assert compressed[0].id == "fix"
    assert fills[0] >= 1


def test_a_middleware_model_call_runs_the_core_fill():
    store = InMemoryStore()
    memory = BaseStoreMemory(store, ("memories", "u1"))
    for entry in ENTRIES:
        memory.put(dict(entry))
    mw = PoolSplitMemoryMiddleware(
        POOLS, store=store, namespace=("memories", "u1"), now=NOW, write=WriteConfig(remember=False)
    )
    streamed: list[Any] = []
    messages = [HumanMessage("refund rounding?", id="m-1")]
    runtime = Runtime(context=None, stream_writer=streamed.append)
    request = ModelRequest(model=None, messages=messages, state={"messages": messages}, runtime=runtime)  # type: ignore[arg-type]
    seen: list[Any] = []

    def handler(request: Any) -> ModelResponse:
        seen.append(request)
        return ModelResponse(result=[AIMessage("ok")])

    with core_fills() as fills:
        mw.wrap_model_call(request, handler)
    assert seen and "Quote amounts in integer cents." in str(seen[0].system_message.content)
    assert fills[0] >= 1


def test_a_llama_index_retriever_memory_blocks_and_postprocessor_run_the_core_fill():
    with core_fills() as fills:
        got = LlamaRetriever(POOLS, nodes_from(ENTRIES), now=NOW).retrieve("refund rounding")
    assert got[0].node.node_id == "fix"
    assert fills[0] >= 1
    index = VectorStoreIndex(nodes_from(ENTRIES), embed_model=MockEmbedding(embed_dim=8))
    with core_fills() as fills:
        got = LlamaRetriever.from_vector_store_index(index, POOLS, now=NOW).retrieve("refund rounding")
    assert got[0].node.node_id == "fix"
    assert fills[0] >= 1
    blocks = poolsplit_memory_blocks([dict(e) for e in ENTRIES], POOLS, now=NOW)
    memory = Memory.from_defaults(session_id="s1", token_limit=2000, memory_blocks=blocks)
    memory.put(ChatMessage(role="user", content="refund rounding?"))
    with core_fills() as fills:
        shown = memory.get()
    assert "Quote amounts in integer cents." in str(shown[0].content)
    assert fills[0] >= 1
    scored = [NodeWithScore(node=n, score=1.0) for n in nodes_from(ENTRIES)]
    with core_fills() as fills:
        kept = PoolSplitNodePostprocessor(pools=POOLS, now=NOW).postprocess_nodes(scored, query_str="refund")
    assert kept[0].node.node_id == "fix"
    assert fills[0] >= 1


def test_the_stores_select_runs_the_core_fill(tmp_path):
    for store in (InProcessStore(), SQLiteMemoryStore(str(tmp_path / "m.db"))):
        store.add([dict(entry) for entry in ENTRIES])
        with core_fills() as fills:
            chosen = store.select(POOLS, {"message": "refund"}, now=NOW).entries()
        assert chosen[0]["id"] == "fix"
        assert fills[0] == 1
