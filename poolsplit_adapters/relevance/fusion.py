"""Words and vectors together: the one fusion rule.

``relevance = (1 - w) * max(0, cosine) + w * lexical`` with ``w`` the
lexical weight (default 0.5), both parts on [0, 1]: the cosine of the
entry's and the query's embeddings (a negative cosine is no evidence
*against* an entry, so it counts as 0) and the normalised BM25 of
`bm25`. When the embedding is unavailable for a call or an entry the
relevance is the lexical part alone (and the scorer reports the fallback).

Why a weighted sum and not reciprocal-rank fusion: the core asks a scorer
about one entry at a time (``relevance(entry)``, ``score(entry)``) and a
pool's ``min_relevance`` compares that number with a fixed threshold. A
reciprocal rank depends on which other entries are candidates, so the same
entry would get another relevance in another pool or behind another
filter, and a threshold on it would mean nothing. A weighted sum of two
bounded measures is the entry's own, the same on every path; equal values
are ordered by the core's total sort key (created, id, input position), so
ties are deterministic.

**Measured, not only argued** (``benchmarks/eval/fusion_variants.py``,
all-MiniLM-L6-v2): per-query max-normalisation (of BM25, of the cosine, or
both), a cosine calibrated against the query's own distribution, and RRF
(k=60) all rank the long-horizon set a little better at small budgets
(recall 0.79-0.81 at 256 tokens where this mix has 0.74), because they weigh
the words more; on the paraphrase-heavy short set they lose 0.05 to 0.10 of the
recall (0.60-0.65 where this mix has 0.70, the cosine alone 0.69). At 1,024
tokens every variant is within 0.02 of this one. Equal weights of the two
measures on their own scales hold on both sets: that is the default.
"""

from __future__ import annotations

from typing import Optional

__all__ = ["fuse", "DEFAULT_LEXICAL_WEIGHT"]

#: Words and vectors weigh the same by default: BM25 finds exact names,
#: numbers and rare words that a sentence embedding blurs; the embedding
#: finds paraphrases that share no word.
DEFAULT_LEXICAL_WEIGHT = 0.5


def fuse(lexical: float, cosine: Optional[float], lexical_weight: float) -> float:
    """The fused relevance of one entry (see the module docstring).

    Example:
        >>> fuse(0.4, 0.6, 0.5)
        0.5
        >>> fuse(0.4, -0.2, 0.5)
        0.2
        >>> fuse(0.4, None, 0.5)
        0.4
    """
    if cosine is None:
        return lexical
    semantic = cosine if cosine > 0.0 else 0.0
    return (1.0 - lexical_weight) * semantic + lexical_weight * lexical
