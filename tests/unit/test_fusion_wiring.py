"""Words and vectors together on every default path (issue 19, wiring).

One known store, one query, three documents whose cosines with the query
are fixed by the embedder (a real framework ``Embeddings`` / ``BaseEmbedding``
over a table of 2-d unit vectors):

* ``d1`` "refund policy for orders": the only one with the query's word,
  cosine 0.1;
* ``d2`` "money back rules": no shared word, cosine 0.9;
* ``d3`` "store credit notes": no shared word, cosine 0.5.

The store alone orders d2, d3, d1; words alone put d1 first and cannot
tell d2 from d3. The fused relevance, ``0.5 * max(0, cos) + 0.5 * BM25``,
orders d2 (0.45), d1 (0.05 + 0.5 * BM25(d1)), d3 (0.25): every default path
below must give exactly that, with one query embedding per call.
"""

from __future__ import annotations

import asyncio
import datetime
import math
from typing import Any, Dict, List

import pytest
from counting_embeddings import CountingEmbeddings
from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore
from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import TextNode
from pydantic import PrivateAttr

from poolsplit_adapters import MemoryIndex, Pool, default_scorer, select
from poolsplit_adapters.defaults import FUSED_FEEDBACK, FUSED_LEXICAL_WEIGHT, hybrid_scorer
from poolsplit_adapters.langchain import (
    BaseStoreMemory,
    PoolSplitMemoryMiddleware,
    PoolSplitRetriever,
    RecallConfig,
    WriteConfig,
)
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaRetriever
from poolsplit_adapters.llama_index import poolsplit_memory_blocks
from poolsplit_adapters.memory.hash_embedding import HashEmbedder
from poolsplit_adapters.relevance import RelevanceScorer
from poolsplit_adapters.relevance.modifiers import DEFAULT_FLOOR
from poolsplit_adapters.reports import capture_selections
from poolsplit_adapters.settings import AdapterSettings

NOW = datetime.datetime(2026, 11, 20, tzinfo=datetime.timezone.utc)
CREATED = "2026-11-01T00:00:00Z"
QUERY = "refund"
TEXTS = {"d1": "refund policy for orders", "d2": "money back rules", "d3": "store credit notes"}
# d1 is the one word match and the weakest cosine: the fusion at the
# defaults' words weight (0.3) puts it before d3 (0.7 x 0.35 + 0.3 x 0.42 >
# 0.7 x 0.5), the store's order alone after it.
COSINES = {"d1": 0.35, "d2": 0.9, "d3": 0.5}
FUSED_ORDER = ["d2", "d1", "d3"]
POOLS = [Pool("all", 1000, 10)]


def _unit(cosine: float) -> List[float]:
    return [cosine, math.sqrt(1.0 - cosine * cosine)]


VECTORS = {TEXTS[key]: _unit(c) for key, c in COSINES.items()}


class TableEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` over the table above (the query is (1, 0)),
    counting query embeddings."""

    model_id = "table-2d"

    def __init__(self) -> None:
        self.queries = 0

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return [VECTORS[t] for t in texts]

    def embed_query(self, text: str) -> List[float]:
        self.queries += 1
        return [1.0, 0.0]


class TableEmbedding(BaseEmbedding):
    """The same table as a LlamaIndex ``BaseEmbedding``, counting queries."""

    _queries: int = PrivateAttr(default=0)

    @property
    def model_id(self) -> str:
        return "table-2d"

    def _get_query_embedding(self, query: str) -> List[float]:
        self._queries += 1
        return [1.0, 0.0]

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> List[float]:
        return VECTORS[text]


def _entries() -> List[Dict[str, Any]]:
    return [{"id": key, "type": "note", "content": text, "created": CREATED} for key, text in TEXTS.items()]


def _documents() -> List[Document]:
    return [Document(page_content=e["content"], id=e["id"], metadata={"created": CREATED}) for e in _entries()]


def _order(selection: Any) -> List[str]:
    return [c.entry["id"] for c in selection.chosen if not c.always]


def _vector_store(embeddings: Embeddings) -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding=embeddings)
    store.add_documents(_documents())
    return store


def test_embeddings_builds_the_fused_scorer() -> None:
    settings = AdapterSettings(pools=POOLS, embeddings=HashEmbedder())
    assert isinstance(settings.scorer, RelevanceScorer) and settings.scorer.embedding is not None
    assert isinstance(AdapterSettings(pools=POOLS).scorer, RelevanceScorer)


def test_the_cores_hybrid_scorer_is_what_embeddings_builds_and_ranks_as_the_adapters_do() -> None:
    # One rule for "words and vectors": defaults.hybrid_scorer, taken by the
    # core as scorer= and built by every adapter's embeddings=.
    settings = AdapterSettings(pools=POOLS, embeddings=TableEmbeddings())
    hybrid = hybrid_scorer(TableEmbeddings())
    assert type(settings.scorer) is type(hybrid) is RelevanceScorer
    assert (settings.scorer.lexical_weight, settings.scorer.feedback) == (hybrid.lexical_weight, hybrid.feedback)
    assert (hybrid.lexical_weight, hybrid.feedback) == (FUSED_LEXICAL_WEIGHT, FUSED_FEEDBACK)
    entries = [{"id": d.id, "content": d.page_content, **d.metadata} for d in _documents()]
    core = select(entries, POOLS, {"message": QUERY}, scorer=hybrid, now=NOW)
    assert [c.entry["id"] for c in core.chosen] == FUSED_ORDER
    retriever = PoolSplitRetriever(documents=_documents(), pools=POOLS, now=NOW, embeddings=TableEmbeddings())
    assert [d.id for d in retriever.invoke(QUERY)] == FUSED_ORDER


def test_the_store_orders_alone_and_words_alone_differ_from_the_fusion() -> None:
    store = _vector_store(TableEmbeddings())
    assert [d.id for d, _ in store.similarity_search_with_score(QUERY, k=3)] == ["d2", "d3", "d1"]
    words = PoolSplitRetriever(documents=_documents(), pools=POOLS, now=NOW)
    words.invoke(QUERY)
    assert _order(words.last_selection)[0] == "d1"


@pytest.mark.parametrize("fetch_k", [1, 20])
def test_langchain_vector_store_default_fuses_the_store_scores(fetch_k: int) -> None:
    embeddings = TableEmbeddings()
    retriever = PoolSplitRetriever.from_vectorstore(_vector_store(embeddings), POOLS, now=NOW, fetch_k=fetch_k)
    embeddings.queries = 0
    assert [d.id for d in retriever.invoke(QUERY)] == FUSED_ORDER
    assert embeddings.queries == 1  # the store's search vector, once, whatever the rounds
    # The arithmetic at RelevanceScorer's own words weight (0.5; the default
    # weighs words 0.3 and expands no query beside a vector store's scores):
    # d2 and d3 have no lexical part, so each scores 0.5 x its cosine, with
    # the same boost.
    plain = PoolSplitRetriever.from_vectorstore(
        _vector_store(embeddings), POOLS, now=NOW, fetch_k=fetch_k, scorer=RelevanceScorer()
    )
    assert [d.id for d in plain.invoke(QUERY)] == FUSED_ORDER
    chosen = {c.entry["id"]: c.score for c in plain.last_selection.chosen}
    assert chosen["d2"] / chosen["d3"] == pytest.approx((0.45 + DEFAULT_FLOOR) / (0.25 + DEFAULT_FLOOR), rel=1e-12)


def test_langchain_vector_store_with_embeddings_fuses_and_embeds_the_query_once() -> None:
    embeddings = TableEmbeddings()
    retriever = PoolSplitRetriever.from_vectorstore(_vector_store(embeddings), POOLS, now=NOW, embeddings=embeddings)
    embeddings.queries = 0
    assert [d.id for d in retriever.invoke(QUERY)] == FUSED_ORDER
    assert embeddings.queries == 1
    asyncio.run(retriever.ainvoke(QUERY))
    assert embeddings.queries == 2


def test_langchain_documents_with_embeddings_fuse_through_the_index() -> None:
    embeddings = TableEmbeddings()
    retriever = PoolSplitRetriever(documents=_documents(), pools=POOLS, now=NOW, embeddings=embeddings)
    assert [d.id for d in retriever.invoke(QUERY)] == FUSED_ORDER
    assert embeddings.queries == 1


def test_llama_index_retriever_default_fuses_the_node_scores() -> None:
    model = TableEmbedding()
    nodes = [
        TextNode(
            text=e["content"], id_=e["id"], metadata={"created": CREATED}, excluded_embed_metadata_keys=["created"]
        )
        for e in _entries()
    ]
    index = VectorStoreIndex(nodes, embed_model=model)
    model._queries = 0
    retriever = LlamaRetriever.from_vector_store_index(index, POOLS, now=NOW)
    assert [n.node.node_id for n in retriever.retrieve(QUERY)] == FUSED_ORDER
    assert model._queries == 1
    fused = LlamaRetriever.from_vector_store_index(index, POOLS, now=NOW, embeddings=model)
    assert [n.node.node_id for n in fused.retrieve(QUERY)] == FUSED_ORDER
    assert model._queries == 2  # one per call, with embeddings= too


def test_llama_index_memory_blocks_with_embeddings_fuse() -> None:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    model = TableEmbedding()
    _corrections, pooled = poolsplit_memory_blocks(_entries(), POOLS, now=NOW, embeddings=model)
    with capture_selections() as mine:
        asyncio.run(pooled.aget([ChatMessage(role=MessageRole.USER, content=QUERY)]))
    assert _order(mine[-1]) == FUSED_ORDER
    assert model._queries == 1


def _indexed_store(embeddings: Embeddings) -> InMemoryStore:
    store = InMemoryStore(index={"dims": 2, "embed": embeddings, "fields": ["content"]})
    store.batch([PutOp(("memories", "u1"), e["id"], {k: v for k, v in e.items() if k != "id"}) for e in _entries()])
    return store


def test_basestore_memory_default_fuses_the_index_scores_and_the_spec_is_one_argument_away() -> None:
    memory = BaseStoreMemory(_indexed_store(TableEmbeddings()), ("memories", "u1"))
    assert _order(memory.select(POOLS, {"message": QUERY}, now=NOW)) == FUSED_ORDER
    recall = memory.recall(POOLS, {"message": QUERY})
    assert recall.scores == pytest.approx(COSINES, rel=1e-12)
    spec = memory.select(POOLS, {"message": QUERY}, now=NOW, scorer=default_scorer)
    assert _order(spec)[0] == "d1"  # the spec's word overlap, no vectors


class _Model(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def _agent_selection(middleware: PoolSplitMemoryMiddleware, store: InMemoryStore, message: str) -> Any:
    model = _Model(messages=iter([AIMessage("ok")]))
    agent = create_agent(model, middleware=[middleware], store=store)
    with capture_selections() as mine:
        agent.invoke({"messages": [HumanMessage(message)]})
    return mine[-1]


def test_middleware_over_an_indexed_store_fuses_the_store_scores() -> None:
    embeddings = TableEmbeddings()
    store = _indexed_store(embeddings)
    embeddings.queries = 0
    middleware = PoolSplitMemoryMiddleware(
        POOLS, namespace=("memories", "u1"), now=NOW, write=WriteConfig(remember=False)
    )
    assert _order(_agent_selection(middleware, store, QUERY)) == FUSED_ORDER
    assert embeddings.queries == 1  # the store's index embeds the query once for the turn's searches


def test_middleware_auto_plans_for_the_store_types() -> None:
    store = InMemoryStore()
    typed = [
        {"id": "t1", "type": "turn", "content": "Maya adopted a dog named Biscuit", "created": CREATED},
        {"id": "e1", "type": "event", "content": "The dog show is in May", "created": CREATED},
    ]
    store.batch([PutOp(("memories", "u1"), e["id"], {k: v for k, v in e.items() if k != "id"}) for e in typed])
    middleware = PoolSplitMemoryMiddleware(
        "auto",
        namespace=("memories", "u1"),
        now=NOW,
        recall=RecallConfig(total_tokens=400, total_entries=10),
        write=WriteConfig(remember=False),
    )
    selection = _agent_selection(middleware, store, "what is the dog's name?")
    # The budget shared between the two types the store holds (not 10% for
    # a catch-all "other" pool, as without the store's types).
    budgets = {name: (s.max_tokens, s.max_entries) for name, s in selection.stats.items() if s.max_tokens}
    assert budgets == {"event": (200, 5), "turn": (200, 5)}
    assert {c.entry["id"] for c in selection.chosen} == {"t1", "e1"}


def test_memory_index_serves_the_fused_scorer_vectorised_bit_for_bit() -> None:
    entries = [
        {
            "id": "e%d" % n,
            "content": "refund %s rounding note %d" % ("early" if n % 2 else "late", n),
            "created": CREATED,
        }
        for n in range(40)
    ]
    embedder = CountingEmbeddings()
    scorer = RelevanceScorer(embedder)
    fast = MemoryIndex(entries).select(POOLS, {"message": "refund rounding early"}, now=NOW, scorer=scorer)
    assert embedder.queries == 1
    slow = MemoryIndex(entries, use_numpy=False).select(
        POOLS, {"message": "refund rounding early"}, now=NOW, scorer=scorer
    )
    assert [(c.entry["id"], c.score) for c in fast.chosen] == [(c.entry["id"], c.score) for c in slow.chosen]
