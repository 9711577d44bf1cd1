"""What a scorer can do beyond the core's scorer protocol, asked in one place.

A selection needs only the core's protocol: a spec-form function or a
[`PreparingScorer`][poolsplit_adapters.poolsplit.PreparingScorer], turned by
[`prepare_scorer`][poolsplit_adapters.poolsplit.prepare_scorer] into a
[`ScorerCall`][poolsplit_adapters.poolsplit.ScorerCall] that answers a
prepared scorer's optional ``warm``, ``admitted`` and ``fallback_reason``.
The engines above the core do more with a scorer that can, and each such
capability is a protocol here, found by [`capabilities`][] and by nothing
else in the package:

* [`RanksByWords`][]: relevance-first BM25 over a corpus (the
  [`RelevanceScorer`][poolsplit_adapters.relevance.RelevanceScorer]); the
  index scores it over its own postings (column scoring), and an adapter ranks
  it against every entry it was given (``over``);
* [`EmbedsEntries`][]: an embedding model's cosines (the
  [`EmbeddingScorer`][poolsplit_adapters.relevance.embedding.EmbeddingScorer],
  or a ``RelevanceScorer``'s embedding part); the index keeps its entry
  vectors and scores them in one matrix product (column scoring), and a
  vector store of the same model lends it its vectors;
* [`TakesStoreAnswers`][]: views that take a vector store's query vector
  and similarities instead of computing them again.

Structural, as the core's protocol is: a scorer of another library that has
these members is asked the same way, without subclassing ours.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Protocol, Sequence

from ..poolsplit import Selection
from .words import QUERY_CAP_NOTE, query_cap_note

__all__ = ["Capabilities", "EmbedsEntries", "RanksByWords", "TakesStoreAnswers", "capabilities", "note_query_cap"]


class RanksByWords(Protocol):
    """Relevance-first BM25 over a corpus (column scoring by words): what
    the index reads to score it over its postings, bit for bit its
    per-entry score over the same statistics (``with_corpus``), and
    ``over(entries)``: the scorer ranking against every entry given."""

    analyzer: Any
    corpus: Any
    embedding: Any
    known: Mapping[Any, float]
    expansion: Any
    modifiers: Any
    floor: float
    lexical_weight: float

    def with_corpus(self, corpus: Any) -> Any:
        """A view ranking against ``corpus``'s statistics."""

    def over(self, entries: Sequence[Any]) -> Any:
        """A view ranking against the statistics of ``entries``."""


class EmbedsEntries(Protocol):
    """An embedding model's cosines (column scoring by vectors): the model
    (``embedder``, ``model_id``: the vector space), entry vectors in batches
    (``vectors_of``), the similarities a store already returned (``known``:
    the index keeps no rows for such a view), and ``prepare`` whose prepared
    scorer scores a matrix of rows at once."""

    embedder: Any
    model_id: str
    known: Mapping[Any, float]

    def vectors_of(self, texts: Sequence[str]) -> Any:
        """The vectors of ``texts``, from the cache or one embedder call."""

    def prepare(self, context: Optional[Mapping[str, Any]], now: Optional[datetime.datetime]) -> Any:
        """The call's prepared scorer (the core's protocol)."""


class TakesStoreAnswers(Protocol):
    """Views taking what a vector store's search already computed: the
    query's vector (one query embedding per call) and the recalled entries'
    similarities (entry id -> cosine)."""

    def with_known_relevance(self, known: Mapping[Any, float]) -> Any:
        """The scorer with these entries' relevance known."""

    def with_query_vector(self, text: str, vector: Sequence[float]) -> Any:
        """The scorer with ``vector`` as the embedding of message ``text``."""


@dataclass(frozen=True)
class Capabilities:
    """What one scorer can do beyond the core's protocol (see the module
    docstring); None where it cannot.

    Attributes:
        words: the scorer, when it ranks by BM25 words ([`RanksByWords`][]).
        vectors: its embedding part ([`EmbedsEntries`][]): the scorer itself,
            or the embedding scorer a words scorer fuses (None without one).
        store_answers: the scorer, when it takes a vector store's answers
            ([`TakesStoreAnswers`][]).

    Example:
        >>> from poolsplit_adapters.relevance import RelevanceScorer
        >>> found = capabilities(RelevanceScorer())
        >>> found.words is not None, found.vectors
        (True, None)
    """

    words: Optional[RanksByWords] = None
    vectors: Optional[EmbedsEntries] = None
    store_answers: Optional[TakesStoreAnswers] = None


def _has(value: Any, *methods: str) -> bool:
    return all(callable(getattr(value, name, None)) for name in methods)


def capabilities(scorer: Any) -> Capabilities:
    """The one place the package asks a scorer what it can do beyond the
    core's protocol: by its members (structurally), so a scorer of another
    library with the same members is served the same way. Cheap (a few
    attribute reads): callers ask once per call.

    Example:
        ```python
        found = capabilities(scorer)
        if found.words is not None:
            scorer = found.words.over(entries)
        ```
    """
    words = scorer if _has(scorer, "with_corpus", "over") and hasattr(scorer, "analyzer") else None
    part = getattr(scorer, "embedding", None) if words is not None else scorer
    vectors = (
        part if _has(part, "vectors_of", "prepare") and hasattr(part, "model_id") and hasattr(part, "known") else None
    )
    answers = scorer if _has(scorer, "with_known_relevance", "with_query_vector") else None
    return Capabilities(words, vectors, answers)


def note_query_cap(selection: Selection, scorer: Any, context: Optional[Mapping[str, Any]]) -> Selection:
    """Record on ``selection`` (under `QUERY_CAP_NOTE`) that a words
    scorer read its query only up to `QUERY_WORDS` distinct words (the
    one rule of every selector: the index's and ``select_noted``)."""
    message = (context or {}).get("message") if isinstance(context, Mapping) else None
    if capabilities(scorer).words is not None and isinstance(message, str):
        note = query_cap_note(message)
        if note is not None:
            selection.notes[QUERY_CAP_NOTE] = note
    return selection
