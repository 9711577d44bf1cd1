"""The relevance-first scorer: BM25 over Unicode words (stemming, CJK),
embeddings fused in, priority/recency/tags/project as bounded boosts.

One concern per module: `words` (text to terms), `bm25` (an
incrementally kept corpus and the normalised BM25), `fusion` (words
and vectors), `modifiers` (the bounded boosts and the score's shape),
`feedback` (query expansion from the call's best matches),
`scorer` (the scorer the core calls), `capabilities` (what a scorer can
do beyond the core's protocol, asked in one place), `columns` (BM25 postings
of a columnar store, the vectorised twin of `bm25`, numpy on use),
`batch` (a batch of texts to the postings' term codes, each distinct
word decided once: the batched twin of `words`).
Standard library only unless an embedder is given or columns are kept;
``snowballstemmer`` for stemming (see `words`).
"""

from .bm25 import WordIndex
from .columns import TermPostings
from .feedback import Feedback
from .fusion import fuse
from .modifiers import Modifiers, combine
from .scorer import PreparedRelevance, RelevanceScorer
from .words import STEMMING, Analyzer, StemmingUnavailableWarning

__all__ = [
    "RelevanceScorer",
    "PreparedRelevance",
    "Modifiers",
    "Feedback",
    "WordIndex",
    "TermPostings",
    "Analyzer",
    "fuse",
    "combine",
    "STEMMING",
    "StemmingUnavailableWarning",
]
