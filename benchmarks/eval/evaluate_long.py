"""Long-horizon evaluation: does the evidence of a 14-month conversation
reach the model, at equal token budgets?

    python benchmarks/eval/evaluate_long.py                    # hash embedding
    python benchmarks/eval/evaluate_long.py --embedding minilm # all-MiniLM-L6-v2 (eval extra)
    python benchmarks/eval/evaluate_long.py --every 2 --offset 1  # the other half of the questions

Every method fills the same budget of tiktoken tokens (o200k_base, counted
once per memory) from the whole store of :mod:`long_horizon`, for every
question; what loads is compared with the question's evidence ids:

* ``recall``: evidence that loaded / evidence (over all questions), also
  per question kind and for the questions in other languages than English;
* ``all evidence``: share of questions whose every evidence memory loaded
  (what a multi-hop question needs);
* ``p50`` / ``p95``: latency of one retrieval at 1,024 tokens, in ms, the
  query's embedding included (entry vectors are computed once, up front).

Methods:

* ``vector top-k``: LangChain ``InMemoryVectorStore`` similarity order, the
  greedy fill (take what fits, skip what does not, go on);
* ``BM25``: the normalised BM25 of :mod:`poolsplit_adapters.relevance.bm25`
  over the whole store, alone (no boosts), the same fill;
* ``core + spec scorer``: ``select`` with the core's ``default_scorer``;
* ``core + EmbeddingScorer (0.3 shape)``: the old score, the spec's partial
  times ``1 + 1.5 max(0, cos)`` (reimplemented here to show the regression);
* ``core + EmbeddingScorer``: the relevance-first one;
* ``core + RelevanceScorer`` (words) and ``core + RelevanceScorer(e)``
  (words and vectors fused): the adapters' two defaults
  (``defaults.default_adapter_scorer`` and ``settings.embedding_scorer_for``,
  query expansion included), their corpus kept as a store would
  (``index_entries``);
* ``LangChain PoolSplitRetriever (default scorer)``: the adapter over the
  memories as documents, nothing but pools given: the adapters' default
  scorer (``settings.default_adapter_scorer``) over the retriever's
  ``MemoryIndex`` (vectorised BM25). Until 0.5 that default was the spec's
  scorer, the ``core + spec scorer`` row.
* the default path of every adapter (:data:`ADAPTER_PATHS`, issue 19's
  "Done when"), each built with nothing but its pools (``Pool("all",
  budget)``) and called at each budget, since its recall grows with the
  budget: LangChain ``PoolSplitRetriever.from_vectorstore`` over the same
  ``InMemoryVectorStore`` as ``vector top-k``, without and with
  ``embeddings=``, and with ``pools="auto"`` (``total_tokens=budget``);
  ``PoolSplitMemoryMiddleware`` in a real ``create_agent``
  (``GenericFakeChatModel``) over a LangGraph ``InMemoryStore`` with a
  vector index on ``content`` (one agent turn per question); LlamaIndex
  ``PoolSplitRetriever.from_vector_store_index`` over a ``VectorStoreIndex``
  of the same vectors (the metadata left out of what is embedded), and the
  memory blocks (the pooled block's ``aget``), without and
  with ``embeddings=``. ``--no-adapters`` leaves them out, ``--only`` picks
  methods by name.

A question's ranking is computed once per method (one ``select`` whose budget
holds the whole store returns every entry in the core's rank order) and the
greedy fill is replayed on it for each budget: the core's fill rule for one
pool without an entry cap, checked against real ``select`` calls by
``tests/test_eval.py``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import long_horizon  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

from poolsplit_adapters import Pool, default_scorer, select  # noqa: E402
from poolsplit_adapters.poolsplit import ScoringContext  # noqa: E402
from poolsplit_adapters.relevance import Feedback, RelevanceScorer, WordIndex  # noqa: E402
from poolsplit_adapters.relevance.embedding import EmbeddingScorer  # noqa: E402
from poolsplit_adapters.settings import default_adapter_scorer, embedding_scorer_for  # noqa: E402
from poolsplit_adapters.tokens import TiktokenCounter  # noqa: E402

BUDGETS = (256, 512, 1024, 2048)
LATENCY_BUDGET = 1024
KINDS = ("single", "paraphrase", "temporal", "multi-hop")

Ranking = List[Tuple[str, int]]  # (id, cost) in rank order


class CachedEmbeddings(Embeddings):
    """An embedder behind LangChain's interface, each text embedded once: the
    vector store and the scorers share one model's work."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_id = getattr(inner, "model_id", type(inner).__name__)
        self.memo: Dict[str, List[float]] = {}
        self.query_memo: Dict[str, List[float]] = {}
        self.queries = 0
        self.timing = False

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if missing:
            self.memo.update(zip(missing, self.inner.embed_documents(missing)))
        return [self.memo[t] for t in texts]

    def embed_query(self, text: str) -> List[float]:
        self.queries += 1
        if self.timing or text not in self.query_memo:
            # Timed calls pay for their query embedding; the untimed ones
            # (the same question at each budget) reuse it.
            self.query_memo[text] = self.inner.embed_query(text)
        return self.query_memo[text]


class LlamaEmbedding(BaseEmbedding):
    """The same cached embedder behind LlamaIndex's ``BaseEmbedding``."""

    _cached: Any = PrivateAttr()

    def __init__(self, cached: CachedEmbeddings) -> None:
        super().__init__(model_name=cached.model_id)
        self._cached = cached

    @property
    def model_id(self) -> str:
        return self._cached.model_id  # type: ignore[no-any-return]

    def _get_query_embedding(self, query: str) -> List[float]:
        return self._cached.embed_query(query)  # type: ignore[no-any-return]

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> List[float]:
        return self._cached.embed_documents([text])[0]  # type: ignore[no-any-return]

    def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return self._cached.embed_documents(texts)  # type: ignore[no-any-return]


class SpecShapedEmbeddingScorer:
    """EmbeddingScorer's 0.3 score, kept here only to measure it: the spec's
    partial score (priority x recency x tags x project) times
    ``1 + 1.5 * max(0, cos)``."""

    def __init__(self, embedding: EmbeddingScorer) -> None:
        self.embedding = embedding

    def prepare(self, context: Optional[Mapping[str, Any]], now: Any) -> Any:
        return _SpecShaped(self.embedding.prepare(context, now), ScoringContext(context, now))


class _SpecShaped:
    def __init__(self, inner: Any, spec: ScoringContext) -> None:
        self.inner, self.spec = inner, spec
        self.fallback_reason = inner.fallback_reason

    def warm(self, entries: Sequence[Mapping[str, Any]]) -> None:
        self.inner.warm(entries)

    def relevance(self, entry: Mapping[str, Any]) -> float:
        return float(self.inner.relevance(entry))

    def score(self, entry: Mapping[str, Any]) -> float:
        cosine = self.inner.embedded_relevance(entry) or 0.0
        return self.spec.partial(entry) * (1.0 + 1.5 * max(0.0, cosine))


def fill(ranking: Ranking, budget: int) -> List[str]:
    """The greedy fill of one pool without an entry cap (the core's rule):
    in rank order, take what fits, skip what does not, go on."""
    left, taken = budget, []
    for entry_id, cost in ranking:
        if cost <= left:
            taken.append(entry_id)
            left -= cost
    return taken


def core_method(
    scorer: Any, entries: List[Dict[str, Any]], threshold: Optional[float] = None
) -> Callable[[str, int], Ranking]:
    def rank(message: str, budget: int) -> Ranking:
        plan = [Pool("all", budget, 10**9, min_relevance=threshold)]
        selection = select(entries, plan, {"message": message}, scorer=scorer, now=long_horizon.NOW)
        return [(c.entry["id"], c.cost) for c in selection.chosen]

    return rank


def vector_method(store: InMemoryVectorStore, cost: Dict[str, int]) -> Callable[[str, int], Ranking]:
    def rank(message: str, budget: int) -> Ranking:
        # Enough hits to fill the budget with the store's shortest memories.
        k = min(len(cost), budget // max(1, min(cost.values())) + 1)
        hits = store.similarity_search_with_score(message, k=k)
        return [(doc.id, cost[doc.id]) for doc, _ in hits if doc.id is not None]

    return rank


def bm25_method(entries: List[Dict[str, Any]]) -> Callable[[str, int], Ranking]:
    corpus = WordIndex()
    corpus.add_many([e["content"] for e in entries])

    def rank(message: str, budget: int) -> Ranking:
        query = corpus.query(message)
        scored = [(-query.relevance(e["content"], corpus.analyzer), k) for k, e in enumerate(entries)]
        scored.sort()
        return [(entries[k]["id"], entries[k]["token_count"]) for _, k in scored]

    return rank


def adapter_method(entries: List[Dict[str, Any]]) -> Callable[[str, int], Ranking]:
    """The LangChain retriever with its defaults, one per budget (a
    retriever's pools are fixed at construction), each built once."""
    from langchain_core.documents import Document

    from poolsplit_adapters.langchain import PoolSplitRetriever

    documents = [
        Document(
            page_content=e["content"], id=e["id"], metadata={k: v for k, v in e.items() if k not in ("content", "id")}
        )
        for e in entries
    ]
    retrievers: Dict[int, Any] = {}

    def rank(message: str, budget: int) -> Ranking:
        retriever = retrievers.get(budget)
        if retriever is None:
            plan = [Pool("all", budget, 10**9)]
            retriever = retrievers[budget] = PoolSplitRetriever(documents=documents, pools=plan, now=long_horizon.NOW)
        retriever.invoke(message)
        return [(c.entry["id"], c.cost) for c in retriever.last_selection.chosen]

    return rank


def _documents(entries: List[Dict[str, Any]]) -> List[Any]:
    from langchain_core.documents import Document

    return [
        Document(
            page_content=e["content"], id=e["id"], metadata={k: v for k, v in e.items() if k not in ("content", "id")}
        )
        for e in entries
    ]


class PerBudget:
    """A method whose object is built per budget (an adapter's pools are
    fixed at construction) and called at that budget: what it returns is
    the selection it made there, not a ranking to replay (recall grows
    with the budget, so a whole-store call would not be the same call)."""

    def __init__(self, build: Callable[[int], Callable[[str], Any]]) -> None:
        self.build = build
        self.made: Dict[int, Callable[[str], Any]] = {}

    def __call__(self, message: str, budget: int) -> Ranking:
        call = self.made.get(budget)
        if call is None:
            call = self.made[budget] = self.build(budget)
        selection = call(message)
        return [(c.entry["id"], c.cost) for c in selection.chosen if not c.always]


def _capture(run: Callable[[], Any]) -> Any:
    from poolsplit_adapters.reports import capture_selections

    with capture_selections() as mine:
        run()
    return mine[-1]


def lc_vectorstore_method(store: InMemoryVectorStore, auto: bool = False, **options: Any) -> PerBudget:
    """``PoolSplitRetriever.from_vectorstore`` with its defaults (and
    ``options``, e.g. ``embeddings=``); ``auto``: ``pools="auto"`` with the
    budget as ``total_tokens``."""
    from poolsplit_adapters.langchain import PoolSplitRetriever

    def build(budget: int) -> Callable[[str], Any]:
        if auto:
            retriever = PoolSplitRetriever.from_vectorstore(
                store, "auto", total_tokens=budget, total_entries=10**6, now=long_horizon.NOW, **options
            )
        else:
            retriever = PoolSplitRetriever.from_vectorstore(
                store, [Pool("all", budget, 10**9)], now=long_horizon.NOW, **options
            )
        return lambda message: _capture(lambda: retriever.invoke(message))

    return PerBudget(build)


def middleware_method(cached: CachedEmbeddings, entries: List[Dict[str, Any]], dims: int) -> PerBudget:
    """``PoolSplitMemoryMiddleware`` with its defaults in a real
    ``create_agent`` (``GenericFakeChatModel``), over a LangGraph
    ``InMemoryStore`` with a vector index on ``content``: one agent turn per
    question; what the model call got is the middleware's selection."""
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.store.base import PutOp
    from langgraph.store.memory import InMemoryStore

    from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, WriteConfig

    store = InMemoryStore(index={"dims": dims, "embed": cached, "fields": ["content"]})
    namespace = ("memories", "eval")
    # In batches of distinct texts: InMemoryStore's batch embeds each text
    # once and then miscounts the items that share it (langgraph 1.x).
    rounds: List[List[Dict[str, Any]]] = []
    for entry in entries:
        home = next((r for r in rounds if all(e["content"] != entry["content"] for e in r)), None)
        if home is None:
            rounds.append([])
            home = rounds[-1]
        home.append(entry)
    for batch in rounds:
        store.batch([PutOp(namespace, e["id"], {k: v for k, v in e.items() if k != "id"}) for e in batch])

    class Model(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    def build(budget: int) -> Callable[[str], Any]:
        middleware = PoolSplitMemoryMiddleware(
            [Pool("all", budget, 10**9)], namespace=namespace, now=long_horizon.NOW, write=WriteConfig(remember=False)
        )
        model = Model(messages=iter(AIMessage("ok") for _ in range(10**9)))
        agent = create_agent(model, middleware=[middleware], store=store)

        def turn(message: str) -> Any:
            return _capture(lambda: agent.invoke({"messages": [HumanMessage(message)]}))

        return turn

    return PerBudget(build)


def llama_retriever_method(index: Any) -> PerBudget:
    """LlamaIndex ``PoolSplitRetriever.from_vector_store_index`` with its defaults."""
    from poolsplit_adapters.llama_index import PoolSplitRetriever

    def build(budget: int) -> Callable[[str], Any]:
        retriever = PoolSplitRetriever.from_vector_store_index(
            index, [Pool("all", budget, 10**9)], now=long_horizon.NOW
        )
        return lambda message: _capture(lambda: retriever.retrieve(message))

    return PerBudget(build)


def llama_blocks_method(entries: List[Dict[str, Any]], **options: Any) -> PerBudget:
    """LlamaIndex memory blocks (``poolsplit_memory_blocks``, defaults and
    ``options``): the pooled block's ``aget`` for the question."""
    import asyncio

    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    from poolsplit_adapters.llama_index import poolsplit_memory_blocks

    def build(budget: int) -> Callable[[str], Any]:
        _corrections, pooled = poolsplit_memory_blocks(
            entries, [Pool("all", budget, 10**9)], now=long_horizon.NOW, **options
        )

        def get(message: str) -> Any:
            messages = [ChatMessage(role=MessageRole.USER, content=message)]
            return _capture(lambda: asyncio.run(pooled.aget(messages)))

        return get

    return PerBudget(build)


def methods(
    embedder: Any,
    entries: List[Dict[str, Any]],
    thresholds: Sequence[float] = (),
    lexical_weights: Sequence[float] = (),
    adapters: bool = True,
    feedback: Sequence[Tuple[float, int, float]] = (),
) -> Dict[str, Callable[[str, int], Ranking]]:
    """Every compared method, its vectors and corpus built up front;
    ``thresholds`` adds the fused scorer behind ``Pool(min_relevance=t)``,
    ``lexical_weights`` the fused scorer with other fusion weights,
    ``feedback`` (lexical weight, top, weight; a lexical weight of 1: words
    alone) the scorer with pseudo-relevance feedback."""
    cached = embedder if isinstance(embedder, CachedEmbeddings) else CachedEmbeddings(embedder)
    cost = {e["id"]: e["token_count"] for e in entries}
    store = InMemoryVectorStore(embedding=cached)
    store.add_texts([e["content"] for e in entries], ids=[e["id"] for e in entries])
    embedding = EmbeddingScorer(cached)
    embedding.embed_entries(entries)
    # The adapters' two defaults: words alone, and what embeddings= builds
    # (both with their query expansion, poolsplit_adapters.defaults).
    words = default_adapter_scorer()
    words.index_entries(entries)
    fused = embedding_scorer_for(embedding)
    fused.index_entries(entries)
    found = {
        "vector top-k": vector_method(store, cost),
        "BM25": bm25_method(entries),
        "core + spec scorer": core_method(default_scorer, entries),
        "core + EmbeddingScorer (0.3 shape)": core_method(SpecShapedEmbeddingScorer(embedding), entries),
        "core + EmbeddingScorer": core_method(embedding, entries),
        "core + RelevanceScorer (words)": core_method(words, entries),
        "core + RelevanceScorer (fused)": core_method(fused, entries),
        "LangChain PoolSplitRetriever (default scorer)": adapter_method(entries),
    }
    if adapters:
        found.update(adapter_methods(cached, entries))
    for threshold in thresholds:
        found["core + RelevanceScorer (fused), min_relevance=%g" % threshold] = core_method(fused, entries, threshold)
    for weight in lexical_weights:
        other = RelevanceScorer(embedding, lexical_weight=weight)
        other.index_entries(entries)
        found["core + RelevanceScorer (fused, lexical_weight=%g)" % weight] = core_method(other, entries)
    for weight, top, share in feedback:
        with_feedback = RelevanceScorer(
            embedding if weight < 1.0 else None, lexical_weight=min(weight, 1.0), feedback=Feedback(top, share)
        )
        with_feedback.index_entries(entries)
        what = "words" if weight >= 1.0 else "fused, lexical_weight=%g" % weight
        name = "core + RelevanceScorer (%s, feedback top=%d weight=%g)" % (what, top, share)
        found[name] = core_method(with_feedback, entries)
    return found


#: The default path of every adapter, as the run names them (issue 19's "Done when").
ADAPTER_PATHS = (
    "LC from_vectorstore (default)",
    "LC from_vectorstore (embeddings=)",
    'LC from_vectorstore, pools="auto"',
    'LC from_vectorstore, pools="auto", embeddings=',
    "LC middleware (create_agent, InMemoryStore index)",
    "LI from_vector_store_index (default)",
    "LI memory blocks (default)",
    "LI memory blocks (embeddings=)",
)


def adapter_methods(
    cached: CachedEmbeddings, entries: List[Dict[str, Any]]
) -> Dict[str, Callable[[str, int], Ranking]]:
    """The default path of every adapter (issue 19's "Done when"), each
    called at each budget (:class:`PerBudget`)."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    dims = len(cached.embed_query("dimension probe"))
    # The adapters' store holds the memories as a host would keep them, as
    # documents with their metadata (type, created, ...), and the same vectors
    # as the baseline's (content only, one embedding per text, cached).
    store = InMemoryVectorStore(embedding=cached)
    store.add_documents(_documents(entries))
    llama_embedding = LlamaEmbedding(cached)
    nodes = []
    for e in entries:
        metadata = {k: v for k, v in e.items() if k not in ("content", "id")}
        # The same vectors as the LangChain store's (content only): LlamaIndex
        # would embed "type: turn\ncreated: ..." with each text by default.
        nodes.append(
            TextNode(text=e["content"], id_=e["id"], metadata=metadata, excluded_embed_metadata_keys=list(metadata))
        )
    index = VectorStoreIndex(nodes, embed_model=llama_embedding)
    made = (
        lc_vectorstore_method(store),
        lc_vectorstore_method(store, embeddings=cached),
        lc_vectorstore_method(store, auto=True),
        lc_vectorstore_method(store, auto=True, embeddings=cached),
        middleware_method(cached, entries, dims),
        llama_retriever_method(index),
        llama_blocks_method(entries),
        llama_blocks_method(entries, embeddings=llama_embedding),
    )
    return dict(zip(ADAPTER_PATHS, made))


def run(
    embedder: Any,
    entries: List[Dict[str, Any]],
    questions: List[Dict[str, Any]],
    budgets: Sequence[int] = BUDGETS,
    thresholds: Sequence[float] = (),
    latency_every: int = 1,
    lexical_weights: Sequence[float] = (),
    adapters: bool = True,
    only: Optional[Sequence[str]] = None,
    feedback: Sequence[Tuple[float, int, float]] = (),
) -> List[Dict[str, Any]]:
    """One row per method and budget; latency is timed on every
    ``latency_every``-th question (the query's embedding included: the
    timed call embeds it afresh). ``only``: methods whose name contains one
    of these (plus the vector top-k baseline)."""
    everything = sum(e["token_count"] for e in entries)
    rows: List[Dict[str, Any]] = []
    cached = CachedEmbeddings(embedder)  # run() switches its query memo off for the timed calls
    found = methods(cached, entries, thresholds, lexical_weights, adapters, feedback)
    for name, rank in found.items():
        if only and name != "vector top-k" and not any(part in name for part in only):
            continue
        latencies: List[float] = []
        loaded: Dict[int, List[set]] = {b: [] for b in budgets}
        for number, question in enumerate(questions):
            if number % latency_every == 0:
                cached.timing = True
                start = time.perf_counter()
                rank(question["message"], LATENCY_BUDGET)
                latencies.append((time.perf_counter() - start) * 1000.0)
                cached.timing = False
            if isinstance(rank, PerBudget):
                for budget in budgets:
                    loaded[budget].append(set(fill(rank(question["message"], budget), budget)))
                continue
            ranking = rank(question["message"], everything)
            for budget in budgets:
                loaded[budget].append(set(fill(ranking, budget)))
        latencies.sort()
        p50 = statistics.median(latencies)
        p95 = latencies[min(len(latencies) - 1, int(round(0.95 * (len(latencies) - 1))))]
        for budget in budgets:
            rows.append({"method": name, "budget": budget, "p50": p50, "p95": p95, **score(questions, loaded[budget])})
    return rows


def score(questions: List[Dict[str, Any]], loaded: List[set]) -> Dict[str, float]:
    """Recall (overall, per kind, other languages) and the all-evidence share."""

    def recall(pick: Callable[[Dict[str, Any]], bool]) -> float:
        hits = total = 0
        for question, got in zip(questions, loaded):
            if pick(question):
                hits += sum(1 for i in question["evidence"] if i in got)
                total += len(question["evidence"])
        return hits / total if total else 0.0

    complete = sum(1 for q, got in zip(questions, loaded) if all(i in got for i in q["evidence"]))
    out = {"recall": recall(lambda q: True), "all evidence": complete / len(questions)}
    for kind in KINDS:
        out[kind] = recall(lambda q, kind=kind: q["kind"] == kind)
    out["other languages"] = recall(lambda q: q["language"] != "en")
    return out


COLUMNS = ("recall", "all evidence", "single", "paraphrase", "temporal", "multi-hop", "other languages")


def render(rows: List[Dict[str, Any]], markdown: bool = False) -> str:
    """A recall table (methods x budgets) and a detail table per budget."""
    budgets = sorted({r["budget"] for r in rows})
    names = list(dict.fromkeys(r["method"] for r in rows))
    by = {(r["method"], r["budget"]): r for r in rows}
    header = ["method"] + ["recall @%d" % b for b in budgets] + ["all evidence @1024", "p50 ms", "p95 ms"]
    lines = []
    for name in names:
        first = by[(name, budgets[0])]
        middle = by.get((name, 1024), first)
        lines.append(
            [name]
            + ["%.3f" % by[(name, b)]["recall"] for b in budgets]
            + ["%.3f" % middle["all evidence"], "%.1f" % first["p50"], "%.1f" % first["p95"]]
        )
    detail_header = ["method", "budget"] + list(COLUMNS)
    detail = [[r["method"], str(r["budget"])] + ["%.3f" % r[c] for c in COLUMNS] for r in rows]
    return _table(header, lines, markdown) + "\n\n" + _table(detail_header, detail, markdown)


def _table(header: List[str], lines: List[List[str]], markdown: bool) -> str:
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        return "\n".join(out + ["| " + " | ".join(line) + " |" for line in lines])
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    fmt = "  ".join("%%-%ds" % w for w in widths)
    return "\n".join([fmt % tuple(header)] + [fmt % tuple(line) for line in lines])


def load(turns_per_day: int = long_horizon.TURNS_PER_DAY) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """The set with every memory's tiktoken cost stamped as ``token_count``."""
    entries, questions = long_horizon.build(turns_per_day)
    counts = TiktokenCounter().count_many([e["content"] for e in entries])
    for entry, count in zip(entries, counts):
        entry["token_count"] = count
    return entries, questions


def main(argv: Optional[Sequence[str]] = None) -> None:
    from evaluate import embedder_named

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedding", default="hash", choices=["hash", "minilm"])
    parser.add_argument("--every", type=int, default=1, help="evaluate every n-th question (1: all)")
    parser.add_argument(
        "--offset", type=int, default=0, help="with --every n, start at this question (the other split: 1)"
    )
    parser.add_argument("--latency-every", type=int, default=4, help="time every n-th question")
    parser.add_argument("--thresholds", type=float, nargs="*", default=[0.05, 0.1, 0.2])
    parser.add_argument("--lexical-weights", type=float, nargs="*", default=[0.8])
    parser.add_argument(
        "--feedback",
        nargs="*",
        default=[],
        metavar="W:TOP:WEIGHT",
        help="rows with RelevanceScorer(feedback=Feedback(TOP, WEIGHT)) at lexical weight W (1: words alone)",
    )
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--no-adapters", action="store_true", help="leave out the adapters' default paths")
    parser.add_argument("--only", nargs="*", help="only methods whose name contains one of these (and vector top-k)")
    args = parser.parse_args(argv)
    entries, questions = load()
    questions = questions[args.offset :: args.every]
    embedder = embedder_named(args.embedding)
    start = time.perf_counter()
    rows = run(
        embedder,
        entries,
        questions,
        thresholds=args.thresholds,
        latency_every=args.latency_every,
        lexical_weights=args.lexical_weights,
        adapters=not args.no_adapters,
        feedback=[(float(w), int(m), float(b)) for w, m, b in (spec.split(":") for spec in args.feedback)],
        only=args.only,
    )
    print(long_horizon.describe(entries, questions))
    print("embedding %s; tokens: tiktoken o200k_base" % getattr(embedder, "model_id", args.embedding))
    print(render(rows, args.markdown))
    print("long-horizon evaluation took %.1f s" % (time.perf_counter() - start))


if __name__ == "__main__":
    main()
