"""Every adapter call path reports without building a row per entry that
did not load: its event carries counts and a bounded sample, and
``Selection.dropped`` is read only when a caller asks for it."""

from __future__ import annotations

import datetime
import functools
import json
from typing import Any, Dict, List

import pytest
from agent_fakes import ToolCallingFakeModel, thread
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from lc_helpers import WordHashEmbedding, flooded_memory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.memory import Memory
from llama_index.core.schema import NodeWithScore, QueryBundle

from poolsplit_adapters import Pool, Selection
from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitCompressor, PoolSplitMemoryMiddleware, WriteConfig
from poolsplit_adapters.langchain import PoolSplitRetriever as LangChainRetriever
from poolsplit_adapters.llama_index import PoolSplitNodePostprocessor, nodes_from, poolsplit_memory_blocks
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaIndexRetriever
from poolsplit_adapters.llama_index.events import PoolSplitSelectionEvent
from poolsplit_adapters.render import DROPPED_SAMPLE, dropped_rows, selection_dict
from poolsplit_adapters.reports import capture_selections, event_payload

NOW = datetime.datetime(2026, 7, 7)
POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("content", 400, 6, ("note", "task", "fact")),
    Pool("skills", 120, 2, ("skill",)),
]
QUERY = "did the deploy of checkout to staging finish"
FLOOD = 60  # notes: far more left out than the sample lists


@pytest.fixture
def row_reads(monkeypatch: pytest.MonkeyPatch) -> List[int]:
    """How often any selection's ``dropped`` rows are built (one counter)."""
    reads = [0]
    build = Selection.__dict__["dropped"].func  # the core's cached property

    def counted(self: Selection) -> Any:
        reads[0] += 1
        return build(self)

    counting = functools.cached_property(counted)
    counting.__set_name__(Selection, "dropped")
    monkeypatch.setattr(Selection, "dropped", counting)
    return reads


class Events(BaseCallbackHandler):
    """A LangChain handler that keeps the selection events it is sent."""

    def __init__(self) -> None:
        self.payloads: List[Any] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name == "poolsplit_selection":
            self.payloads.append(data)


class Announced(BaseEventHandler):
    events: List[Any] = []

    @classmethod
    def class_name(cls) -> str:
        return "Announced"

    def handle(self, event: Any, **kwargs: Any) -> None:
        if isinstance(event, PoolSplitSelectionEvent):
            self.events.append(event)


def _entries() -> List[Dict[str, Any]]:
    docs = flooded_memory(FLOOD)
    return [{"id": d.id, "content": d.page_content, **d.metadata} for d in docs]


def _checked_sample(payload: Dict[str, Any]) -> None:
    assert payload["dropped_total"] == sum(row["entries"] for row in payload["dropped_counts"])
    assert payload["dropped_total"] > len(payload["dropped"]) and not payload["dropped_complete"]
    per_key: Dict[Any, int] = {}
    for row in payload["dropped"]:
        per_key[(row["pool"], row["reason"])] = per_key.get((row["pool"], row["reason"]), 0) + 1
    assert max(per_key.values()) == DROPPED_SAMPLE
    json.dumps(payload)  # still plain JSON


def test_langchain_paths_send_events_without_reading_rows(row_reads):
    handler = Events()
    config = {"callbacks": [handler]}
    docs = flooded_memory(FLOOD)
    retriever = LangChainRetriever(documents=docs, pools=POOLS, now=NOW)
    vector = LangChainRetriever.from_vectorstore(
        InMemoryVectorStore.from_documents(docs, WordHashEmbedding()), POOLS, fetch_k=40, now=NOW
    )
    compressor = PoolSplitCompressor(pools=POOLS, now=NOW)
    with capture_selections() as mine:
        retriever.invoke(QUERY, config=config)
        vector.invoke(QUERY, config=config)
        compressor.compress_documents(docs, QUERY, callbacks=[handler])
    assert len(handler.payloads) == 3 and row_reads[0] == 0
    for payload in handler.payloads:
        _checked_sample(payload)
    # The full list, on request: built now, from the call's own selection.
    every = handler.payloads[0].all_dropped()
    assert row_reads[0] == 1
    assert every == dropped_rows(mine[0], None) and len(every) == handler.payloads[0]["dropped_total"]


def test_llama_index_paths_send_events_without_reading_rows(row_reads):
    handler = Announced()
    root = get_dispatcher()
    root.add_event_handler(handler)
    try:
        nodes = nodes_from(_entries())
        LlamaIndexRetriever(POOLS, nodes=nodes, now=NOW).retrieve(QUERY)
        PoolSplitNodePostprocessor(pools=POOLS, now=NOW).postprocess_nodes(
            [NodeWithScore(node=n) for n in nodes], query_bundle=QueryBundle(QUERY)
        )
        memory = Memory.from_defaults(
            session_id="rows", token_limit=4000, memory_blocks=poolsplit_memory_blocks(_entries(), POOLS, now=NOW)
        )
        memory.put(ChatMessage(role="user", content=QUERY))
        memory.get()
    finally:
        root.event_handlers.remove(handler)
    assert {e.source for e in handler.events} == {"retriever", "postprocessor", "memory"}
    assert row_reads[0] == 0
    for event in handler.events:
        _checked_sample(event.summary)
    every = handler.events[0].all_dropped()
    assert row_reads[0] == 1 and len(every) == handler.events[0].summary["dropped_total"]


def test_middleware_model_call_streams_its_event_without_reading_rows(row_reads):
    store = InMemoryStore()
    BaseStoreMemory(store, ("memories", "u1")).put_many(_entries())
    middleware = PoolSplitMemoryMiddleware(
        POOLS, namespace=("memories", "u1"), now=NOW, write=WriteConfig(remember=False)
    )
    agent = create_agent(ToolCallingFakeModel(), middleware=[middleware], checkpointer=InMemorySaver(), store=store)
    with capture_selections() as mine:
        chunks = list(agent.stream({"messages": [HumanMessage(QUERY)]}, thread("rows"), stream_mode="custom"))
    (event,) = [c["poolsplit_selection"] for c in chunks if "poolsplit_selection" in c]
    assert row_reads[0] == 0
    _checked_sample(event)
    (selection,) = mine
    assert {k: v for k, v in event.items() if k in selection_dict(selection)} == selection_dict(selection)


def test_the_event_payload_copies_and_pickles_as_its_plain_dict():
    import copy
    import pickle

    docs = [Document(page_content="note %d" % n, id="n%d" % n, metadata={"type": "note"}) for n in range(30)]
    retriever = LangChainRetriever(documents=docs, pools=[Pool("notes", 20, 2, ("note",))], now=NOW)
    retriever.invoke("note")
    payload = event_payload(retriever.last_selection)
    for twin in (copy.copy(payload), copy.deepcopy(payload), pickle.loads(pickle.dumps(payload))):
        assert type(twin) is dict and twin == payload
    assert payload["dropped_total"] == 28 and len(payload["dropped"]) == DROPPED_SAMPLE
    assert [row["id"] for row in payload.all_dropped()] == ["n%d" % n for n in range(2, 30)]
