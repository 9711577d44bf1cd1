"""The relevance-first scorer: BM25 over Unicode words (stemming, CJK),
embeddings fused in, priority/recency/tags/project as bounded boosts.

One concern per module: :mod:`.words` (text to terms), :mod:`.bm25` (an
incrementally kept corpus and the normalised BM25), :mod:`.fusion` (words
and vectors), :mod:`.modifiers` (the bounded boosts and the score's shape),
:mod:`.feedback` (query expansion from the call's best matches),
:mod:`.scorer` (the scorer the core calls), :mod:`.columns` (BM25 postings
of a columnar store, the vectorised twin of :mod:`.bm25`, numpy on use),
:mod:`.batch` (a batch of texts to the postings' term codes, each distinct
word decided once: the batched twin of :mod:`.words`).
Standard library only unless an embedder is given or columns are kept;
``snowballstemmer`` for stemming (see :mod:`.words`).
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
