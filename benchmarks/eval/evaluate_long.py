"""Long-horizon evaluation: does the evidence of a 14-month conversation
reach the model, at equal token budgets?

    python benchmarks/eval/evaluate_long.py                    # hash embedding
    python benchmarks/eval/evaluate_long.py --embedding minilm # all-MiniLM-L6-v2 (eval extra)

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
  (words and vectors fused), their corpus kept as a store would
  (``index_entries``);
* ``LangChain PoolSplitRetriever (default scorer)``: the adapter over the
  memories as documents, nothing but pools given: the adapters' default
  scorer (``settings.default_adapter_scorer``) over the retriever's
  ``MemoryIndex`` (vectorised BM25). Until 0.5 that default was the spec's
  scorer, the ``core + spec scorer`` row.

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

from poolsplit_adapters import Pool, default_scorer, select  # noqa: E402
from poolsplit_adapters.memory.embedding import EmbeddingScorer  # noqa: E402
from poolsplit_adapters.poolsplit import ScoringContext  # noqa: E402
from poolsplit_adapters.relevance import Feedback, RelevanceScorer, WordIndex  # noqa: E402
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

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if missing:
            self.memo.update(zip(missing, self.inner.embed_documents(missing)))
        return [self.memo[t] for t in texts]

    def embed_query(self, text: str) -> List[float]:
        return self.inner.embed_query(text)  # type: ignore[no-any-return]


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


def methods(
    embedder: Any,
    entries: List[Dict[str, Any]],
    thresholds: Sequence[float] = (),
    lexical_weights: Sequence[float] = (),
    feedback: Sequence[Tuple[float, int, float]] = (),
    only: Sequence[str] = (),
) -> Dict[str, Callable[[str, int], Ranking]]:
    """Every compared method, its vectors and corpus built up front;
    ``thresholds`` adds the fused scorer behind ``Pool(min_relevance=t)``,
    ``lexical_weights`` the fused scorer with other fusion weights,
    ``feedback`` (lexical weight, top, weight; a lexical weight of 1: words
    alone) the scorer with pseudo-relevance feedback; ``only`` keeps the
    methods whose name holds one of its strings."""
    cached = CachedEmbeddings(embedder)
    cost = {e["id"]: e["token_count"] for e in entries}
    store = InMemoryVectorStore(embedding=cached)
    store.add_texts([e["content"] for e in entries], ids=[e["id"] for e in entries])
    embedding = EmbeddingScorer(cached)
    embedding.embed_entries(entries)
    words = RelevanceScorer()
    words.index_entries(entries)
    fused = RelevanceScorer(embedding)
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
    return {name: rank for name, rank in found.items() if not only or any(part in name for part in only)}


def run(
    embedder: Any,
    entries: List[Dict[str, Any]],
    questions: List[Dict[str, Any]],
    budgets: Sequence[int] = BUDGETS,
    thresholds: Sequence[float] = (),
    latency_every: int = 1,
    lexical_weights: Sequence[float] = (),
    feedback: Sequence[Tuple[float, int, float]] = (),
    only: Sequence[str] = (),
) -> List[Dict[str, Any]]:
    """One row per method and budget; latency is timed on every
    ``latency_every``-th question."""
    everything = sum(e["token_count"] for e in entries)
    rows: List[Dict[str, Any]] = []
    for name, rank in methods(embedder, entries, thresholds, lexical_weights, feedback, only).items():
        latencies: List[float] = []
        loaded: Dict[int, List[set]] = {b: [] for b in budgets}
        for number, question in enumerate(questions):
            if number % latency_every == 0:
                start = time.perf_counter()
                rank(question["message"], LATENCY_BUDGET)
                latencies.append((time.perf_counter() - start) * 1000.0)
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
    parser.add_argument("--only", nargs="*", default=[], help="only the methods whose name holds one of these")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    entries, questions = load()
    questions = questions[:: args.every]
    embedder = embedder_named(args.embedding)
    start = time.perf_counter()
    rows = run(
        embedder,
        entries,
        questions,
        thresholds=args.thresholds,
        latency_every=args.latency_every,
        lexical_weights=args.lexical_weights,
        feedback=[(float(w), int(m), float(b)) for w, m, b in (spec.split(":") for spec in args.feedback)],
        only=args.only,
    )
    print(long_horizon.describe(entries, questions))
    print("embedding %s; tokens: tiktoken o200k_base" % getattr(embedder, "model_id", args.embedding))
    print(render(rows, args.markdown))
    print("long-horizon evaluation took %.1f s" % (time.perf_counter() - start))


if __name__ == "__main__":
    main()
