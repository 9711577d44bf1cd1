"""The LangChain adapters inside real langchain-core objects."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any, Dict, List

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests
from lc_helpers import CORRECTIONS, WordHashEmbedding, flooded_memory

from poolsplit_adapters import EntryError, Pool, Reason
from poolsplit_adapters.langchain import (
    SELECTION_EVENT,
    SELECTION_KEY,
    PoolSplitCompressor,
    PoolSplitRetriever,
    format_documents,
)
from poolsplit_adapters.render import parse_markers

NOW = datetime.datetime(2026, 7, 7)
POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("content", 400, 6, ("note", "task", "fact")),
    Pool("skills", 120, 2, ("skill",)),
    Pool("growth", 80, 1, ("growth",)),
]
QUERY = "did the deploy of checkout to staging finish"


def _corpus() -> List[Document]:
    return [
        Document(
            page_content="Memory note %d about deploys and staging." % n,
            id="m%d" % n,
            metadata={"type": "note", "created": "2026-07-0%dT00:00:00Z" % (1 + n % 5)},
        )
        for n in range(8)
    ]


class TestStandardRetriever(RetrieversIntegrationTests):
    """langchain-tests' own conformance suite. The corpus has no always-scope
    document, so k is exactly the number returned; the always-on-top-of-k
    behaviour is pinned in the tests below."""

    @property
    def retriever_constructor(self) -> type[PoolSplitRetriever]:
        return PoolSplitRetriever

    @property
    def retriever_constructor_params(self) -> Dict[str, Any]:
        return {"documents": _corpus(), "pools": [Pool("memory", 10_000, 50)], "k": 4, "now": NOW}

    @property
    def retriever_query_example(self) -> str:
        return "deploys to staging"


def test_always_scope_documents_come_first_and_on_top_of_k():
    retriever = PoolSplitRetriever(documents=flooded_memory(50), pools=POOLS, now=NOW)
    for k in (0, 1, 3):
        docs = retriever.invoke(QUERY, k=k)
        assert [d.id for d in docs[:3]] == ["fix-0", "fix-1", "fix-2"]
        assert len(docs) == 3 + k
        assert all(d.metadata[SELECTION_KEY]["always"] for d in docs[:3])


def test_k_is_dealt_round_robin_across_pools():
    retriever = PoolSplitRetriever(documents=flooded_memory(50), pools=POOLS, now=NOW)
    docs = retriever.invoke(QUERY, k=3)
    assert [d.metadata[SELECTION_KEY]["pool"] for d in docs[3:]] == ["content", "skills", "growth"]
    unlimited = retriever.invoke(QUERY)
    assert [d.metadata[SELECTION_KEY]["pool"] for d in unlimited].count("content") == 6


def test_returned_documents_are_copies_and_inputs_untouched():
    memory = flooded_memory(10)
    before = [(d.page_content, dict(d.metadata), d.id) for d in memory]
    retriever = PoolSplitRetriever(documents=memory, pools=POOLS, now=NOW)
    docs = retriever.invoke(QUERY)
    assert all(d is not m for d in docs for m in memory)
    assert [(d.page_content, dict(d.metadata), d.id) for d in memory] == before
    picked = docs[3]
    assert picked.metadata["source"] == "ci" and picked.metadata[SELECTION_KEY]["pool"] == "content"
    assert isinstance(picked.metadata[SELECTION_KEY]["score"], float)


class PromptSpy(BaseCallbackHandler):
    def __init__(self) -> None:
        self.prompts: List[str] = []

    def on_chat_model_start(self, serialized, messages, **kwargs):  # noqa: ANN001
        self.prompts.append("\n".join(m.content for batch in messages for m in batch))


def test_lcel_rag_chain_prompt_holds_every_correction_first_under_a_flood():
    retriever = PoolSplitRetriever(documents=flooded_memory(300), pools=POOLS, now=NOW)
    prompt = ChatPromptTemplate.from_messages([("system", "Use this memory:\n{context}"), ("human", "{question}")])
    model = GenericFakeChatModel(messages=iter([AIMessage(content="ok")] * 4))
    chain = (
        {"context": retriever | format_documents, "question": RunnablePassthrough()}
        | prompt
        | model
        | StrOutputParser()
    )
    spy = PromptSpy()
    for _ in range(3):
        assert chain.invoke(QUERY, config={"callbacks": [spy]}) == "ok"
    assert len(spy.prompts) == 3
    for text in spy.prompts:
        markers = parse_markers(text)
        assert [m["content"] for m in markers[:3]] == CORRECTIONS
        assert [m["id"] for m in markers[:3]] == ["fix-0", "fix-1", "fix-2"]
        assert {m["pool"] for m in markers[3:]} == {"content", "skills", "growth"}
        assert all(text.index(c) < text.index("Deploy log") for c in CORRECTIONS)
        # 300 notes competed for 6 slots: the prompt says so explicitly.
        assert "[294 more entries left out by budget or k: content 294]" in text


def test_formatter_counts_what_k_left_out():
    retriever = PoolSplitRetriever(documents=flooded_memory(20), pools=POOLS, now=NOW)
    text = format_documents(retriever.invoke(QUERY, k=1))
    assert text.splitlines()[-1] == "[21 more entries left out by budget or k: content 19, skills 1, growth 1]"
    assert len(parse_markers(text)) == 4


def _vector_store(docs: List[Document]) -> InMemoryVectorStore:
    store = InMemoryVectorStore(WordHashEmbedding())
    store.add_documents(docs)
    return store


QUERIES = [
    "deploy checkout staging",
    "is the staging deploy green",
    "checks for the checkout service",
    "deploy log finished",
    "what happened with the service deploy",
]


def test_per_pool_recall_fills_low_priority_pools_where_plain_top_k_misses_them():
    memory = flooded_memory(300)
    store = _vector_store(memory)
    pooled = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=10, now=NOW)
    plain = store.as_retriever(search_kwargs={"k": 12})
    pooled_hits = plain_hits = 0
    for query in QUERIES:
        got = pooled.invoke(query)
        pooled_hits += any(d.metadata.get("type") == "skill" for d in got)
        plain_hits += any(d.metadata.get("type") == "skill" for d in plain.invoke(query))
        assert [d.id for d in got[:3]] == ["fix-0", "fix-1", "fix-2"]
    rate = {"pooled": pooled_hits / len(QUERIES), "plain top-k": plain_hits / len(QUERIES)}
    print("skill pool filled:", rate)
    assert rate == {"pooled": 1.0, "plain top-k": 0.0}


class RunLog(BaseCallbackHandler):
    def __init__(self) -> None:
        self.retriever_tags: List[List[str]] = []
        self.events: List[Dict[str, Any]] = []

    def on_retriever_start(self, serialized, query, **kwargs):  # noqa: ANN001
        self.retriever_tags.append(list(kwargs.get("tags") or []))

    def on_custom_event(self, name, data, **kwargs):  # noqa: ANN001
        if name == SELECTION_EVENT:
            self.events.append(data)


def test_sub_retrievals_are_child_runs_and_the_report_is_an_event():
    store = _vector_store(flooded_memory(40))
    retriever = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=10, now=NOW)
    log = RunLog()
    retriever.invoke(QUERY, config={"callbacks": [log]})
    child_tags = {t for tags in log.retriever_tags[1:] for t in tags}
    assert {"pool:content", "pool:skills", "pool:growth", "always"} <= child_tags
    assert len(log.retriever_tags) == 5  # the retriever + 3 pool recalls + 1 always fetch
    (event,) = log.events
    assert [c["id"] for c in event["chosen"][:3]] == ["fix-0", "fix-1", "fix-2"]
    assert retriever.last_selection is not None
    assert "not loaded" in retriever.explain()


async def test_async_batch_and_astream_events():
    store = _vector_store(flooded_memory(40))
    retriever = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=5, now=NOW)
    sync = retriever.invoke(QUERY)
    got = await retriever.ainvoke(QUERY)
    assert [d.id for d in got] == [d.id for d in sync]
    batch = await retriever.abatch(QUERIES[:3])
    assert all([d.id for d in docs[:3]] == ["fix-0", "fix-1", "fix-2"] for docs in batch)
    assert [[d.id for d in docs] for docs in retriever.batch(QUERIES[:3])] == [[d.id for d in docs] for docs in batch]
    kinds = []
    async for event in retriever.astream_events(QUERY, version="v2"):
        kinds.append((event["event"], event.get("name")))
    assert ("on_custom_event", SELECTION_EVENT) in kinds
    assert sum(1 for kind, _ in kinds if kind == "on_retriever_start") == 5


async def test_async_recall_runs_concurrently():
    class SlowStore(InMemoryVectorStore):
        active = 0
        peak = 0

        async def asimilarity_search(self, query, k=4, **kwargs):  # noqa: ANN001
            SlowStore.active += 1
            SlowStore.peak = max(SlowStore.peak, SlowStore.active)
            await asyncio.sleep(0.02)
            SlowStore.active -= 1
            return self.similarity_search(query, k=k, **kwargs)

    store = SlowStore(WordHashEmbedding())
    store.add_documents(flooded_memory(20))
    retriever = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=5, now=NOW)
    await retriever.ainvoke(QUERY)
    assert SlowStore.peak == 4


def test_base_retriever_mode_pools_what_the_base_returns():
    store = _vector_store(flooded_memory(40))
    retriever = PoolSplitRetriever(base_retriever=store.as_retriever(search_kwargs={"k": 8}), pools=POOLS, now=NOW)
    docs = retriever.invoke(QUERY)
    assert all(d.metadata.get("type") == "note" for d in docs)  # the base's top-8 held only notes
    assert 0 < len(docs) <= 6


def test_compressor_and_lcel_selector():
    memory = flooded_memory(30)
    compressor = PoolSplitCompressor(pools=POOLS, now=NOW, k=2)
    out = compressor.compress_documents(memory, QUERY)
    assert [d.id for d in out[:3]] == ["fix-0", "fix-1", "fix-2"] and len(out) == 5
    assert compressor.last_selection is not None
    store = _vector_store(memory)
    selector = PoolSplitCompressor(pools=POOLS, now=NOW).as_runnable()
    chain = {"documents": store.as_retriever(search_kwargs={"k": 40}), "query": RunnablePassthrough()} | selector
    docs = chain.invoke(QUERY)
    assert {d.metadata[SELECTION_KEY]["pool"] for d in docs} >= {"corrections", "content"}
    plain = (store.as_retriever(search_kwargs={"k": 40}) | selector).invoke(QUERY)
    assert [d.id for d in plain[:3]] == ["fix-0", "fix-1", "fix-2"]


def test_document_without_type_is_a_note():
    docs = [Document(page_content="untyped memory", id="u1")]
    retriever = PoolSplitRetriever(documents=docs, pools=[Pool("notes", 100, 5, ("note",))], now=NOW)
    assert [d.id for d in retriever.invoke("memory")] == ["u1"]


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"tags": "ops"}, "document 'bad-1': metadata field 'tags' must be a list or tuple of strings"),
        ({"token_count": -3}, "document 'bad-1': metadata field 'token_count' must be a positive integer, got -3"),
        ({"token_count": True}, "document 'bad-1': metadata field 'token_count' must be a positive integer"),
        ({"created": 2026}, "document 'bad-1': metadata field 'created' must be a string or None"),
        ({"base_priority": "high"}, "document 'bad-1': metadata field 'base_priority' must be a finite number"),
    ],
)
def test_malformed_metadata_names_the_document_and_field(metadata, message):
    docs = [Document(page_content="fine", id="ok"), Document(page_content="x", id="bad-1", metadata=metadata)]
    with pytest.raises(EntryError, match=message.replace("(", r"\(").replace(")", r"\)")):
        PoolSplitRetriever(documents=docs, pools=POOLS)
    with pytest.raises(EntryError, match="bad-1"):
        PoolSplitCompressor(pools=POOLS).compress_documents(docs, "q")


def test_constructor_errors_are_clear():
    with pytest.raises(ValueError, match="exactly one of documents=, vectorstore= or base_retriever="):
        PoolSplitRetriever(pools=POOLS)
    with pytest.raises(ValueError, match="duplicate pool name"):
        PoolSplitRetriever(documents=[], pools=[Pool("a", 1, 1), Pool("a", 1, 1)])


def test_report_explains_budget_cuts():
    retriever = PoolSplitRetriever(documents=flooded_memory(30), pools=POOLS, now=NOW)
    retriever.invoke(QUERY)
    reasons = retriever.last_selection.dropped_by_reason()
    assert len(reasons[Reason.ENTRY_CAP]) + len(reasons.get(Reason.TOKEN_BUDGET, [])) == 30 - 6


def test_compressor_inside_contextual_compression_retriever_and_pipeline():
    from langchain_classic.retrievers import ContextualCompressionRetriever
    from langchain_classic.retrievers.document_compressors import DocumentCompressorPipeline

    store = _vector_store(flooded_memory(60))
    compressor = PoolSplitCompressor(pools=POOLS, now=NOW)
    wide = store.as_retriever(search_kwargs={"k": 65})
    retriever = ContextualCompressionRetriever(base_compressor=compressor, base_retriever=wide)
    docs = retriever.invoke(QUERY)
    assert [d.id for d in docs[:3]] == ["fix-0", "fix-1", "fix-2"]
    assert [d.metadata[SELECTION_KEY]["pool"] for d in docs].count("content") == 6
    pipeline = DocumentCompressorPipeline(transformers=[compressor])
    assert [d.id for d in pipeline.compress_documents(wide.invoke(QUERY), QUERY)] == [d.id for d in docs]
