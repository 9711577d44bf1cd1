"""How to fuse words and vectors: the candidates measured before choosing
:mod:`poolsplit_adapters.relevance.fusion`'s rule, on both labelled sets.

    python benchmarks/eval/fusion_variants.py --embedding minilm   # about a minute
    python benchmarks/eval/fusion_variants.py --embedding hash

Why a script of its own: ``evaluate_long.py`` measures the library's paths
(one ``select`` per question and method, vector store included, about a
quarter of an hour with the real model). A fusion rule only changes the
relevance, so here each question's normalised BM25 (the library's
:class:`~poolsplit_adapters.relevance.WordIndex` over the whole store, as a
store keeps it) and cosine are computed once, as matrices, and every
variant is ranked from them with the core's score and order: ``(relevance
+ floor) * (1 + boost)`` with the default :class:`Modifiers`, ties by
(created, id, position), then the greedy fill of ``evaluate_long.fill`` at
each budget. Words alone and the default fusion reproduce the
``core + RelevanceScorer`` rows of ``evaluate_long.py`` exactly.

The variants (``L`` the normalised BM25, ``C`` the cosine, ``C+ = max(0, C)``):

* ``convex w``: ``w L + (1 - w) C+``, the library's rule (both parts on their
  theoretical [0, 1] scale: the entry's own number);
* ``max-normalised``: ``L`` and/or ``C+`` divided by the query's largest
  value over the store (per-query min-max, the minimum being 0);
* ``calibrated cosine``: ``(C - median) / (max - median)`` over the store,
  clipped to [0, 1] (the query's own cosine distribution);
* ``RRF k=60``: ``1/(60 + rank_L) + 1/(60 + rank_C)``, no lexical term for
  an entry without a query word, scaled by ``61 / 2`` into [0, 1];
* ``+ feedback m, b``: pseudo-relevance feedback as the library computes it
  (``RelevanceScorer(feedback=Feedback(m, b))``), ``(1 - b) first + b F``
  with ``F`` the normalised BM25 of the query made of the ``m`` most
  relevant entries (relevance above 0, ties by created, id, position);
  ``evaluate_long.py --feedback W:M:B`` measures the same through ``select``.

``--short`` also ranks the short set of ``evaluate.py`` (paraphrase-heavy,
the pool plan of ``examples/pools.toml`` and one budget of the same size)
with the per-query variants, through ``select`` with a scorer that reads the
store-wide statistics up front.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import long_horizon  # noqa: E402
import numpy as np  # noqa: E402
from evaluate_long import BUDGETS, load  # noqa: E402

from poolsplit_adapters.poolsplit import ScoringContext  # noqa: E402
from poolsplit_adapters.relevance import (  # noqa: E402
    Feedback,
    Modifiers,
    PreparedRelevance,
    RelevanceScorer,
    WordIndex,
)

Matrix = Any  # numpy array, questions x entries

#: (lexical weight, feedback top, feedback weight) measured with a fusion.
GRID = [(w, m, b) for w in (0.5, 0.6, 0.7) for m in (1, 2, 3) for b in (0.1, 0.2, 0.3, 0.35, 0.4)]
#: the same through select on the short set (the long set's best rows).
SHORT_FEEDBACK = [(0.5, 2, 0.3), (0.5, 2, 0.35), (0.6, 2, 0.3), (0.7, 2, 0.3)]


class LongSet:
    """The long-horizon set as matrices: BM25 and cosine of every
    (question, entry), and what the core's score and order need."""

    def __init__(self, embedder: Any) -> None:
        self.entries, self.questions = load()
        texts = [e["content"] for e in self.entries]
        self.texts = texts
        self.corpus = WordIndex()
        self.corpus.add_many(texts)
        self.lexical = np.array([self.bm25(q["message"]) for q in self.questions])
        vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float64)
        queries = np.asarray([embedder.embed_query(q["message"]) for q in self.questions], dtype=np.float64)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-300)
        queries /= np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-300)
        self.cosine = queries @ vectors.T
        mods = Modifiers()
        self.boost = np.array([mods.boost(e, frozenset(), None, long_horizon.NOW) for e in self.entries])
        self.cost = np.array([e["token_count"] for e in self.entries])
        n = len(self.entries)
        key = sorted(range(n), key=lambda k: (self.entries[k].get("created") or "", self.entries[k]["id"], k))
        self.tie = np.empty(n, dtype=np.int64)
        self.tie[key] = np.arange(n)
        position = {e["id"]: k for k, e in enumerate(self.entries)}
        self.evidence = [[position[i] for i in q["evidence"]] for q in self.questions]

    def bm25(self, message: str) -> List[float]:
        query = self.corpus.query(message)
        return [query.relevance(t, self.corpus.analyzer) for t in self.texts]

    def order(self, relevance: Any, modifiers: bool = True) -> Any:
        score = (np.maximum(relevance, 0.0) + 0.01) * (1.0 + self.boost) if modifiers else relevance
        return np.lexsort((self.tie, -score))

    def recall(self, relevance: Matrix, modifiers: bool = True) -> List[float]:
        hits = dict.fromkeys(BUDGETS, 0)
        for number, evidence in enumerate(self.evidence):
            order = self.order(relevance[number], modifiers)
            for budget in BUDGETS:
                left, taken = budget, set()
                for k in order.tolist():
                    if self.cost[k] <= left:
                        taken.add(k)
                        left -= self.cost[k]
                        if not left:
                            break
                hits[budget] += sum(1 for k in evidence if k in taken)
        total = sum(map(len, self.evidence))
        return [hits[b] / total for b in BUDGETS]

    def feedback(self, first: Matrix, m: int) -> Matrix:
        """The library's rule (:mod:`poolsplit_adapters.relevance.feedback`):
        the ``m`` most relevant entries with relevance above 0, ties by
        (created, id, position), their texts joined in that order as the
        second query."""
        out = np.zeros_like(first)
        for number in range(len(first)):
            order = np.lexsort((self.tie, -first[number]))[:m]
            best = [k for k in order.tolist() if first[number][k] > 0.0]
            if best:
                out[number] = self.bm25(" ".join(self.texts[k] for k in best))
        return out


def ranks(values: Matrix, tie: Any) -> Matrix:
    out = np.empty_like(values)
    for number, row in enumerate(values):
        out[number, np.lexsort((tie, -row))] = np.arange(1, row.shape[0] + 1)
    return out


def long_variants(data: LongSet) -> Dict[str, Callable[[], List[float]]]:
    lexical, cosine = data.lexical, data.cosine
    positive = np.maximum(cosine, 0.0)
    lexical_max = lexical / np.maximum(lexical.max(axis=1, keepdims=True), 1e-12)
    cosine_max = positive / np.maximum(positive.max(axis=1, keepdims=True), 1e-12)
    median = np.median(cosine, axis=1, keepdims=True)
    top = cosine.max(axis=1, keepdims=True)
    calibrated = np.clip((cosine - median) / np.maximum(top - median, 1e-12), 0.0, 1.0)
    found: Dict[str, Callable[[], List[float]]] = {
        "vector top-k (cosine order)": lambda: data.recall(cosine, modifiers=False),
        "words (BM25)": lambda: data.recall(lexical),
    }
    for w in (0.5, 0.6, 0.7, 0.8, 0.9):
        found["convex w=%.1f" % w] = lambda w=w: data.recall(w * lexical + (1 - w) * positive)
    found["max-normalised BM25 and cosine, w=0.5"] = lambda: data.recall(0.5 * lexical_max + 0.5 * cosine_max)
    found["max-normalised BM25, w=0.5"] = lambda: data.recall(0.5 * lexical_max + 0.5 * positive)
    found["max-normalised BM25 + calibrated cosine, w=0.5"] = lambda: data.recall(0.5 * lexical_max + 0.5 * calibrated)
    found["convex w=0.5, calibrated cosine"] = lambda: data.recall(0.5 * lexical + 0.5 * calibrated)

    def rrf() -> List[float]:
        by_words, by_vector = ranks(lexical, data.tie), ranks(cosine, data.tie)
        fused = np.where(lexical > 0.0, 1.0 / (60.0 + by_words), 0.0) + 1.0 / (60.0 + by_vector)
        return data.recall(fused * 61.0 / 2.0)

    found["RRF k=60"] = rrf
    for m, b in ((1, 0.1), (2, 0.1), (2, 0.2), (2, 0.3), (2, 0.35), (3, 0.1)):
        found["words + feedback m=%d b=%.1f" % (m, b)] = lambda m=m, b=b: data.recall(
            (1 - b) * lexical + b * data.feedback(lexical, m)
        )

    expanded: Dict[Tuple[float, int], Tuple[Matrix, Matrix]] = {}  # (w, m) -> (first, F), one pass each

    def fused_feedback(w: float, m: int, b: float) -> List[float]:
        if (w, m) not in expanded:
            first = w * lexical + (1 - w) * positive
            expanded[w, m] = (first, data.feedback(first, m))
        first, second = expanded[w, m]
        return data.recall((1 - b) * first + b * second)

    for w, m, b in GRID:
        found["convex w=%.1f + feedback m=%d b=%.1f" % (w, m, b)] = lambda w=w, m=m, b=b: fused_feedback(w, m, b)
    return found


class StoreWide(RelevanceScorer):
    """A fused scorer whose relevance is one of the per-query variants,
    from statistics over ``store`` (every entry the store holds), read once
    per query: an experiment only (the library's rule is the entry's own)."""

    def setup(self, store: Sequence[Dict[str, Any]], mode: str) -> StoreWide:
        self.store, self.mode = list(store), mode
        return self

    def prepare(self, context: Any, now: Any = None) -> PreparedRelevance:
        return _StoreWide(self, ScoringContext(context, now), context)


class _StoreWide(PreparedRelevance):
    stats: Optional[Dict[str, Any]] = None

    def _stats(self) -> Dict[str, Any]:
        if self.stats is None:
            store = self.scorer.store  # type: ignore[attr-defined]
            lexical = np.array([PreparedRelevance.lexical_relevance(self, e) for e in store])
            self.embedding.warm(store)
            cosine = np.array([self.embedding.embedded_relevance(e) or 0.0 for e in store])
            tie = np.arange(len(store))
            by_words, by_vector = ranks(lexical[None, :], tie)[0], ranks(cosine[None, :], tie)[0]
            self.stats = {
                "lexical max": max(float(lexical.max()), 1e-12),
                "cosine max": max(float(cosine.max()), 1e-12),
                "cosine median": float(np.median(cosine)),
                "ranks": {id(e): (by_words[k] if lexical[k] > 0 else None, by_vector[k]) for k, e in enumerate(store)},
            }
        return self.stats

    def relevance(self, entry: Any) -> float:
        stats, mode = self._stats(), self.scorer.mode  # type: ignore[attr-defined]
        lexical = PreparedRelevance.lexical_relevance(self, entry)
        cosine = self.embedding.embedded_relevance(entry) or 0.0
        if mode == "max-normalised BM25 and cosine":
            return 0.5 * lexical / stats["lexical max"] + 0.5 * max(cosine, 0.0) / stats["cosine max"]
        if mode == "max-normalised BM25":
            return 0.5 * lexical / stats["lexical max"] + 0.5 * max(cosine, 0.0)
        if mode == "max-normalised BM25 + calibrated cosine":
            spread = max(stats["cosine max"] - stats["cosine median"], 1e-12)
            return 0.5 * lexical / stats["lexical max"] + 0.5 * min(
                1.0, max(0.0, (cosine - stats["cosine median"]) / spread)
            )
        by_words, by_vector = stats["ranks"][id(entry)]
        return 61.0 / 2.0 * ((1.0 / (60.0 + by_words) if by_words else 0.0) + 1.0 / (60.0 + by_vector))


def short_rows(embedder: Any) -> List[Tuple[str, str, Dict[str, float]]]:
    import evaluate
    from dataset import load_entries, load_pools, load_queries, one_budget

    from poolsplit_adapters.relevance.embedding import EmbeddingScorer

    entries, queries = load_entries(), load_queries()
    pools = load_pools()
    embedding = EmbeddingScorer(embedder)
    embedding.embed_entries(entries)
    scorers: Dict[str, Any] = {"embedding": embedding, "words": RelevanceScorer()}
    for w in (0.5, 0.6, 0.7, 0.8):
        scorers["convex w=%.1f" % w] = RelevanceScorer(embedding, lexical_weight=w)
    # The library's feedback (RelevanceScorer(feedback=...)), through select.
    scorers["words + feedback m=2 b=0.1"] = RelevanceScorer(feedback=Feedback(top=2, weight=0.1))
    for w, m, b in SHORT_FEEDBACK:
        scorers["convex w=%.1f + feedback m=%d b=%.1f" % (w, m, b)] = RelevanceScorer(
            embedding, lexical_weight=w, feedback=Feedback(top=m, weight=b)
        )
    for mode in (
        "max-normalised BM25 and cosine",
        "max-normalised BM25",
        "max-normalised BM25 + calibrated cosine",
        "RRF k=60",
    ):
        scorers[mode + ", w=0.5" if mode != "RRF k=60" else mode] = StoreWide(embedding).setup(entries, mode)
    rows = []
    for name, scorer in scorers.items():
        if isinstance(scorer, RelevanceScorer):
            scorer.index_entries(entries)
        for layout, plan in (("one budget", one_budget(pools)), ("pools", pools)):
            rows.append((name, layout, evaluate.run_config(entries, queries, scorer, plan, None)))
    return rows


def main(argv: Optional[Sequence[str]] = None) -> None:
    from evaluate import embedder_named

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedding", default="hash", choices=["hash", "minilm"])
    parser.add_argument("--short", action="store_true", help="also the short set of evaluate.py")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    embedder = embedder_named(args.embedding)
    data = LongSet(embedder)
    print("long-horizon set, embedding %s" % getattr(embedder, "model_id", args.embedding))
    print("| variant | " + " | ".join("recall @%d" % b for b in BUDGETS) + " | x vector @1024 | min x vector |")
    print("|---|" + "---|" * (len(BUDGETS) + 2))
    vector: List[float] = []
    for name, measure in long_variants(data).items():
        got = measure()
        vector = vector or got
        ratios = [g / v for g, v in zip(got, vector)]
        cells = ["%.3f" % g for g in got] + ["%.3f" % ratios[BUDGETS.index(1024)], "%.3f" % min(ratios)]
        print("| %s | %s |" % (name, " | ".join(cells)), flush=True)
    if args.short:
        print("\nshort set (evaluate.py), recall of the contextual entries")
        print("| scorer | budget | recall | paraphrase | keyword |\n|---|---|---|---|---|")
        for name, layout, row in short_rows(embedder):
            print(
                "| %s | %s | %.3f | %.3f | %.3f |"
                % (name, layout, row["recall"], row["recall_paraphrase"], row["recall_keyword"])
            )
    print("took %.1f s" % (time.perf_counter() - start))


if __name__ == "__main__":
    main()
