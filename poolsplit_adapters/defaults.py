"""The adapters' default scorer, chosen in one place, with the standard
library only: the stores (SQLite, in-process), the CLI and every adapter
import it from here (`poolsplit_adapters.settings` re-exports it), so
a store needs no pydantic to rank as the adapters do.

The vendorable core's [`default_scorer`][]
stays exactly the spec's; it is one argument away everywhere
(``scorer=default_scorer``, docs/migrating.md).
"""

from __future__ import annotations

from typing import Any, Optional

from .poolsplit import Scorer
from .relevance import Feedback, RelevanceScorer

#: The words-only default's query expansion: the two best admitted matches'
#: words at 0.1 of the relevance (benchmarks/eval/README.md, "Pseudo-relevance
#: feedback": second hops share no word with the question; at 0.1 every budget
#: of the long-horizon set gains, at 0.35 the 1,024-token budget loses).
#: ``words_only``: a call with a vector half (a vector store's similarities,
#: an embedder) does not expand (see `FUSED_FEEDBACK`).
WORDS_FEEDBACK = Feedback(top=2, weight=0.1, words_only=True)
#: With a vector half (``embeddings=``, or a vector store's similarities):
#: words weigh 0.3 of the fused relevance and the query is not expanded.
#: Measured with all-MiniLM-L6-v2 on three sets (benchmarks/eval/README.md,
#: "Fusion on long conversations"): on long conversations every expansion
#: weight and every words weight above 0.3 loaded less than plain vector
#: top-k at 2,048 or 4,096 tokens; at 0.3 without expansion every budget is
#: at least vector top-k's there, on the long-horizon set (x1.014 to x1.038)
#: and on the paraphrase set with one budget.
FUSED_LEXICAL_WEIGHT: float = 0.3
FUSED_FEEDBACK: Optional[Feedback] = None

__all__ = ["default_adapter_scorer", "hybrid_scorer"]


def default_adapter_scorer() -> Scorer:
    """The scorer of every adapter, the middleware, the LangGraph store
    memory, the stores' ``select`` and the CLI's ``search`` and ``select``
    when neither ``scorer=`` nor ``embeddings=`` is given: the one place it
    is chosen.

    A fresh [`RelevanceScorer`][] (BM25
    over Unicode words, stemmed, CJK bigrams; priority, recency, tags and
    project as bounded boosts), not the core's ``default_scorer``: the
    spec's recency factor (x0.3 after 90 days against a relevance factor of
    at most x2.5) lets any entry of the last month outrank any older match,
    and its ASCII word rule gives other scripts no relevance at all. Fresh
    on every call, so a host that gives one adapter's scorer a corpus
    (``index_entries``) changes no other adapter. Over a vector store the
    store's similarity is its vector half
    (`takes_store_scores`), weighed as `hybrid_scorer` weighs
    the cosine (`FUSED_LEXICAL_WEIGHT`). With words alone the query is
    expanded by the call's two best admitted matches (`WORDS_FEEDBACK`,
    pseudo-relevance feedback), which finds the second hop of a question;
    with a vector store's similarities it is not (`FUSED_FEEDBACK`).
    ``scorer=default_scorer`` brings the spec's ranking back
    (docs/migrating.md).

    Example:
        >>> from poolsplit_adapters import Pool, select
        >>> entries = [{"id": "a", "content": "Refunds are rounded down"}, {"id": "b", "content": "Lunch menu"}]
        >>> picked = select(entries, [Pool("all", 100, 1)], {"message": "refund"}, scorer=default_adapter_scorer())
        >>> [e["id"] for e in picked.entries()]
        ['a']
    """
    return RelevanceScorer(lexical_weight=FUSED_LEXICAL_WEIGHT, feedback=WORDS_FEEDBACK)


def hybrid_scorer(embeddings: Any) -> RelevanceScorer:
    """The words-and-vectors default, the one place it is chosen: what every
    adapter's ``embeddings=`` builds, and what the core takes as
    ``select(..., scorer=hybrid_scorer(embeddings))``.

    A fresh [`RelevanceScorer`][] fusing
    BM25 (`FUSED_LEXICAL_WEIGHT` of the relevance) with the cosine of
    ``embeddings`` (a LangChain ``Embeddings``, a LlamaIndex
    ``BaseEmbedding``, or an ``EmbeddingScorer``, whose vector cache it
    shares), the query not expanded (`FUSED_FEEDBACK`). Cosine alone
    (``EmbeddingScorer(embeddings)``) misses exact names and numbers and, on
    the long-horizon evaluation, loads less evidence than plain vector top-k
    at 2,048 tokens; the fusion loads at least as much at every budget of
    the three labelled sets (benchmarks/eval/README.md). numpy is imported
    on use.

    Example:
        >>> from poolsplit_adapters import Pool, select
        >>> from poolsplit_adapters.memory import HashEmbedder
        >>> entries = [{"id": "a", "content": "Refunds are rounded down"}, {"id": "b", "content": "Lunch menu"}]
        >>> picked = select(entries, [Pool("all", 100, 1)], {"message": "refund"}, scorer=hybrid_scorer(HashEmbedder()))
        >>> [e["id"] for e in picked.entries()]
        ['a']
    """
    return RelevanceScorer(embeddings, lexical_weight=FUSED_LEXICAL_WEIGHT, feedback=FUSED_FEEDBACK)
