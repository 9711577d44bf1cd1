"""Issue 13/14 features through the LangChain adapters (real LCEL chains,
real InMemoryVectorStore): pools="auto", progressive=True with the expand
tool, embeddings= and vector-store recall that reuses the store's scores."""

from __future__ import annotations

import datetime
from typing import List

import paraphrase
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore

from poolsplit_adapters import Pool, Visibility, default_scorer
from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.langchain import (
    HashEmbeddings,
    PoolSplitCompressor,
    PoolSplitMemoryMiddleware,
    PoolSplitRetriever,
    capture_selections,
    format_documents,
)
from poolsplit_adapters.memory.hash_embedding import HashEmbedder
from poolsplit_adapters.render import parse_markers, selection_dict

NOW = datetime.datetime(2026, 11, 20, 9)


def words(text: str) -> int:
    """Token counter for exact arithmetic in the tests: one token per word."""
    return max(1, len(text.split()))


def doc(id_: str, content: str, **metadata: object) -> Document:
    metadata.setdefault("created", "2026-11-01T00:00:00Z")
    return Document(page_content=content, id=id_, metadata=dict(metadata))


DOCS = [
    doc("fix-cents", "Quote amounts in integer cents.", type="correction", scope="always", source="user"),
    doc(
        "ep-round",
        "The October rounding incident: refunds were rounded down by one cent in the monthly totals report.",
        type="episode",
        summary="October refunds rounding incident",
    ),
    doc(
        "note-url",
        "The checkout review moved the staging URL to staging2 and every preview link changed with it.",
        type="note",
        summary="Staging URL change",
    ),
    doc(
        "skill-deploy",
        "To deploy, run make release, then watch the canary dashboard for ten minutes before promoting it.",
        type="skill",
        summary="How to deploy",
    ),
    doc(
        "ap-force",
        "Force-pushing to main destroyed the release branch history in March; nobody could bisect afterwards.",
        type="anti_pattern",
        summary="Force-push incident",
    ),
]
PLAN = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("memory", 200, 4, ("episode", "note", "skill", "anti_pattern")),
]


# -- pools="auto" ------------------------------------------------------------------------


def test_auto_pools_record_the_detected_type_and_the_plan_follows_the_phase():
    retriever = PoolSplitRetriever(
        documents=DOCS, pools="auto", total_tokens=400, total_entries=10, token_counter=words, now=NOW
    )
    budgets = {}
    for phase in ("debugging", "review"):
        chain = retriever.bind(phase=phase) | format_documents
        with capture_selections() as mine:
            text = chain.invoke("what happened with the refunds?")
        (selection,) = mine
        assert selection.notes["task_type"] == phase
        decided = [(m["field"], m["signal"], m["weight"]) for m in selection.notes["task"]["matched_signals"]]
        assert ("phase", phase, 4) in decided
        assert parse_markers(text)[0]["id"] == "fix-cents"  # the correction first, whatever the plan
        budgets[phase] = {name: s.max_tokens for name, s in selection.stats.items()}
    # The presets' weights over 400 tokens, shared among the types the documents hold (all four
    # collections, no unnamed type: no catch-all): debugging 35/15/20/20, review 15/30/10/35, of 90.
    assert budgets["debugging"] == {
        "corrections": 0,
        "episodic": 155,
        "semantic": 67,
        "skills": 89,
        "anti_patterns": 89,
    }
    assert budgets["review"] == {"corrections": 0, "episodic": 67, "semantic": 133, "skills": 44, "anti_patterns": 156}


def test_auto_pools_read_the_goal_and_fall_back_to_the_query():
    retriever = PoolSplitRetriever(
        documents=DOCS, pools="auto", total_tokens=400, total_entries=10, token_counter=words, now=NOW
    )
    with capture_selections() as mine:
        retriever.invoke("why does the import crash", action_type="read_diff")
        retriever.invoke("show me around the billing code", goal="refactor the billing module")
    assert [s.notes["task_type"] for s in mine] == ["review", "refactoring"]
    assert mine[0].notes["task"]["scores"]["review"] == 3  # action_type outweighs the query's "crash" (2)


def test_auto_pools_need_totals_and_explicit_pools_take_none():
    with pytest.raises(ArgumentError, match="pools='auto' needs total_tokens, the token budget"):
        PoolSplitRetriever(documents=DOCS, pools="auto", total_entries=10)
    with pytest.raises(ArgumentError, match=r"recall=RecallConfig\(total_tokens=\.\.\.\) to the agent middleware"):
        PoolSplitMemoryMiddleware("auto", namespace=("memories", "u"))
    with pytest.raises(ArgumentError, match="apply only to pools='auto'"):
        PoolSplitRetriever(documents=DOCS, pools=PLAN, total_tokens=400)
    with pytest.raises(ArgumentError, match="phase must be a string"):
        PoolSplitRetriever(documents=DOCS, pools="auto", total_tokens=400, total_entries=10, phase=3)


def test_auto_pools_recall_per_call_plan_from_a_vector_store():
    store = InMemoryVectorStore(HashEmbeddings())
    store.add_documents(DOCS)
    retriever = PoolSplitRetriever.from_vectorstore(
        store, "auto", total_tokens=400, total_entries=10, token_counter=words, now=NOW
    )
    with capture_selections() as mine:
        docs = retriever.invoke("refund rounding", phase="debugging")
    assert mine[0].notes["task_type"] == "debugging"
    assert [d.id for d in docs][:1] == ["fix-cents"]
    assert {d.metadata["poolsplit"]["pool"] for d in docs} == {
        "corrections",
        "episodic",
        "semantic",
        "skills",
        "anti_patterns",
    }


# -- progressive=True --------------------------------------------------------------------


def test_progressive_metrics_count_what_k_returned_not_what_it_cut():
    retriever = PoolSplitRetriever(documents=DOCS, pools=PLAN, progressive=True, token_counter=words, now=NOW)
    with capture_selections() as mine:
        docs = retriever.invoke("refund rounding", k=1)
    (selection,) = mine
    assert [d.id for d in docs] == ["fix-cents", "ep-round"]  # the correction on top of k, one contextual
    # Words: the correction 5 in full; ep-round's summary 4 (16 in full).
    assert selection.notes["metrics"] == {
        "tokens_by_layer": {"summary": 4, "timeline": 0, "full": 5},
        "entries_by_layer": {"summary": 1, "timeline": 0, "full": 1},
        "total_tokens": 9,
        "baseline_tokens": 21,
        "savings_percent": 57.14,
    }


def test_progressive_returns_summaries_with_layer_markers_and_metrics():
    retriever = PoolSplitRetriever(documents=DOCS, pools=PLAN, progressive=True, token_counter=words, now=NOW)
    with capture_selections() as mine:
        text = (retriever | format_documents).invoke("refund rounding")
    (selection,) = mine
    found = parse_markers(text)
    # Rank order: the match first, then the ties by id.
    assert [(m["id"], m.get("layer")) for m in found] == [
        ("fix-cents", None),
        ("ep-round", "summary"),
        ("ap-force", "summary"),
        ("note-url", "summary"),
        ("skill-deploy", "summary"),
    ]
    assert found[1]["content"] == "October refunds rounding incident"
    assert text.endswith(
        '[4 entries shown as summaries (layer="summary" or "timeline"); their full text is available by id]'
    )
    # Words: correction 5 in full; summaries 4 + 3 + 3 + 2 = 12; in full 16 + 16 + 16 + 14 = 62.
    assert selection.notes["metrics"] == {
        "tokens_by_layer": {"summary": 12, "timeline": 0, "full": 5},
        "entries_by_layer": {"summary": 4, "timeline": 0, "full": 1},
        "total_tokens": 17,
        "baseline_tokens": 67,
        "savings_percent": 74.63,  # 50 of 67 saved
    }
    assert selection_dict(selection)["notes"]["metrics"]["total_tokens"] == 17  # in the one JSON form too
    assert (selection.notes["detail"], selection.notes["deepened"]) == (False, False)


def test_progressive_loads_full_text_when_the_query_asks_for_detail():
    retriever = PoolSplitRetriever(documents=DOCS, pools=PLAN, progressive=True, token_counter=words, now=NOW)
    with capture_selections() as mine:
        docs = retriever.invoke("the exact details of the refund rounding")
    layers = [d.metadata["poolsplit"].get("layer", "full") for d in docs]
    assert layers == ["full"] * 5
    assert docs[1].page_content == DOCS[1].page_content
    assert (mine[0].notes["detail"], mine[0].notes["deepened"]) == (True, True)


def test_progressive_off_is_exactly_the_plain_selection():
    plain = PoolSplitRetriever(documents=DOCS, pools=PLAN, token_counter=words, now=NOW)
    docs = plain.invoke("refund rounding")
    assert all("layer" not in d.metadata["poolsplit"] for d in docs)
    by_id = {d.id: d.page_content for d in DOCS}
    assert [d.page_content for d in docs] == [
        by_id[i] for i in ("fix-cents", "ep-round", "ap-force", "note-url", "skill-deploy")
    ]
    assert "metrics" not in plain.last_selection.notes


def test_the_expand_tool_reads_full_text_only_within_the_visibility():
    team = [
        doc(
            "a-1", "Team A runbook in full: restart the worker, then drain the queue.", namespace="a", summary="Runbook"
        ),
        doc("b-1", "Team B secret plan in full.", namespace="b", summary="Plan"),
    ]
    retriever = PoolSplitRetriever(
        documents=team, pools=[Pool("all", 100, 5)], progressive=True, visibility=Visibility(namespace="a"), now=NOW
    )
    tool = retriever.expand_tool()
    assert tool.invoke({"entry_id": "a-1"}) == "Team A runbook in full: restart the worker, then drain the queue."
    message = tool.invoke({"name": tool.name, "args": {"entry_id": "b-1"}, "id": "c1", "type": "tool_call"})
    assert message.status == "error"
    assert "no memory entry with id 'b-1'" in message.content


def test_the_compressor_supports_progressive_and_auto():
    compressor = PoolSplitCompressor(
        pools="auto",
        total_tokens=400,
        total_entries=10,
        progressive=True,
        phase="debugging",
        token_counter=words,
        now=NOW,
    )
    selector = compressor.as_runnable()
    chain = RunnableLambda(lambda q: {"documents": DOCS, "query": q}) | selector
    with capture_selections() as mine:
        docs = chain.invoke("refund rounding")
    assert mine[0].notes["task_type"] == "debugging"
    assert [d.metadata["poolsplit"].get("layer", "full") for d in docs] == ["full"] + ["summary"] * 4


# -- embeddings= -------------------------------------------------------------------------

PARAPHRASE = [doc(id_, text, **metadata) for id_, text, metadata in paraphrase.PARAPHRASE]


def test_embeddings_rank_a_paraphrase_above_an_unrelated_entry():
    one = [Pool("one", 1000, 1)]
    spec = PoolSplitRetriever(documents=PARAPHRASE, pools=one, scorer=default_scorer, now=paraphrase.JULY)
    words = PoolSplitRetriever(documents=PARAPHRASE, pools=one, now=paraphrase.JULY)
    embedded = PoolSplitRetriever(documents=PARAPHRASE, pools=one, embeddings=HashEmbeddings(), now=paraphrase.JULY)
    assert [d.id for d in spec.invoke(paraphrase.QUESTION)] == ["note"]  # see tests/paraphrase.py for all three
    assert [d.id for d in words.invoke(paraphrase.QUESTION)] == ["episode"]
    assert [d.id for d in embedded.invoke(paraphrase.QUESTION)] == ["episode"]


def test_embeddings_and_scorer_are_exclusive_and_checked():
    with pytest.raises(ArgumentError, match="give embeddings= or scorer=, not both"):
        PoolSplitRetriever(documents=DOCS, pools=PLAN, embeddings=HashEmbeddings(), scorer=lambda e, c, now=None: 1.0)
    with pytest.raises(ArgumentError, match="embeddings: EmbeddingScorer needs an embedder"):
        PoolSplitRetriever(documents=DOCS, pools=PLAN, embeddings="openai")


class Counting(Embeddings):
    """HashEmbedder as a LangChain Embeddings that counts its calls."""

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.documents = 0
        self.queries = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        self.documents += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> List[float]:
        self.queries += 1
        return self.inner.embed_query(text)


def test_vector_store_recall_uses_the_store_scores_instead_of_re_embedding():
    embeddings = Counting()
    store = InMemoryVectorStore(embeddings)
    store.add_documents(PARAPHRASE)
    assert embeddings.documents == 2
    retriever = PoolSplitRetriever.from_vectorstore(
        store, [Pool("one", 1000, 1)], embeddings=embeddings, now=paraphrase.JULY
    )
    with capture_selections() as mine:
        assert [d.id for d in retriever.invoke(paraphrase.QUESTION)] == ["episode"]
        assert [d.id for d in retriever.invoke("refunded totals")] == ["episode"]
    assert embeddings.documents == 2  # the recalled documents were never embedded again
    # One query embedding per call: the scorer takes the vector the store searched with.
    assert embeddings.queries == 2
    # The relevance is the store's cosine, so the score matches the scorer's own within quantisation.
    own = PoolSplitRetriever(
        documents=PARAPHRASE, pools=[Pool("one", 1000, 1)], embeddings=embeddings, now=paraphrase.JULY
    )
    assert own.invoke(paraphrase.QUESTION)[0].metadata["poolsplit"]["score"] == pytest.approx(
        mine[0].chosen[0].score, abs=0.01
    )


@pytest.mark.asyncio
async def test_vector_store_recall_uses_the_store_scores_async():
    embeddings = Counting()
    store = InMemoryVectorStore(embeddings)
    await store.aadd_documents(PARAPHRASE)
    retriever = PoolSplitRetriever.from_vectorstore(
        store, [Pool("one", 1000, 1)], embeddings=embeddings, now=paraphrase.JULY
    )
    assert [d.id for d in await retriever.ainvoke(paraphrase.QUESTION)] == ["episode"]
    assert embeddings.documents == 2


def test_an_unknown_store_metric_is_refused_and_a_named_one_is_used():
    store = InMemoryVectorStore(HashEmbeddings())
    with pytest.raises(ArgumentError, match="store_metric must be one of cosine"):
        PoolSplitRetriever.from_vectorstore(store, PLAN, store_metric="manhattan")
    retriever = PoolSplitRetriever.from_vectorstore(store, PLAN, store_metric="cosine_distance")
    assert retriever._metric.value == "cosine_distance"


def test_a_failing_embedder_falls_back_and_the_report_says_so():
    class Broken(Embeddings):
        def embed_documents(self, texts: List[str]) -> List[List[float]]:
            raise RuntimeError("quota exceeded")

        def embed_query(self, text: str) -> List[float]:
            raise RuntimeError("quota exceeded")

    retriever = PoolSplitRetriever(
        documents=PARAPHRASE, pools=[Pool("one", 1000, 1)], embeddings=Broken(), now=paraphrase.JULY
    )
    with pytest.warns(UserWarning, match="ranking lexically"):
        docs = retriever.invoke(paraphrase.QUESTION)
    # The lexical relevance-first ranking (BM25 over stems: refund, round, total are shared).
    assert [d.id for d in docs] == ["episode"]
    assert retriever.last_selection.notes["scorer_fallback"] == (
        "query embedding failed: the embedder raised RuntimeError: quota exceeded"
    )


# -- the default scorer: words of any language -------------------------------------------

MULTILINGUAL = [
    doc("menu", "午餐菜单已经更新", base_priority=10, created="2026-11-19T00:00:00Z"),
    doc("zh", "退款金额被四舍五入少了一分钱", created="2025-07-01T00:00:00Z"),
    doc("he", "החזר כספי נשלח ללקוח אתמול", created="2025-07-01T00:00:00Z"),
    doc("en", "Customer asked about refunds for order 12", created="2025-07-01T00:00:00Z"),
    doc("fresh", "Stand-up: the deploy went fine", base_priority=10, created="2026-11-20T00:00:00Z"),
]


@pytest.mark.parametrize(
    "query, expected",
    [("为什么退款少了一分钱", "zh"), ("מתי נשלח החזר כספי", "he"), ("refund", "en")],
)
def test_the_default_retriever_finds_the_entry_that_answers_in_any_language(query, expected):
    # Each answer is the one entry sharing the query's words (CJK bigrams,
    # Hebrew words, the stem of "refunds"), older than the fresh top-priority
    # noise: relevance first (the bound of relevance.modifiers).
    retriever = PoolSplitRetriever(documents=MULTILINGUAL, pools=[Pool("one", 1000, 1)], now=NOW)
    assert [d.id for d in retriever.invoke(query)] == [expected]
    spec = PoolSplitRetriever(documents=MULTILINGUAL, pools=[Pool("one", 1000, 1)], scorer=default_scorer, now=NOW)
    assert [d.id for d in spec.invoke(query)] == ["fresh"]  # the spec's words: no match, recency and priority rank
