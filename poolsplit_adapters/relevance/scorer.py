"""RelevanceScorer: relevance first, words and vectors fused, bounded boosts.

The scorer for every path beyond the core (the core's ``default_scorer``
stays exactly the spec's):

    relevance = fuse(BM25, cosine)                 (`fusion`, `bm25`)
    score     = (relevance + floor) * (1 + boost)  (`modifiers`)

so an entry of relevance ``r`` never outranks one of relevance ``r + δ``,
``δ = (1 + floor) * modifiers.bound`` (0.303 with the defaults), whatever
their ages, priorities, tags and projects. ``Pool(min_relevance=t)``
thresholds the fused relevance, in [0, 1].

**Where document frequencies come from.** BM25 needs the corpus's
statistics. A scorer with a [`WordIndex`][] (``corpus=``, or
built by [`RelevanceScorer.index_entries`][]) reads them from there: the
store that owns the entries keeps it in step as it grows
([`index_entries`][poolsplit_adapters.relevance.RelevanceScorer.index_entries] / [`forget_entries`][poolsplit_adapters.relevance.RelevanceScorer.forget_entries], O(terms of the changed
entries)), and a query costs O(query words) plus a cached term-count
lookup per scored entry. Without one (a one-off ``select(entries, ...)``)
each call counts the candidates it is asked about: the core hands each
pool's candidates to [`PreparedRelevance.warm`][] before ranking them, so
a pool's entries are ranked against the statistics of the candidates seen
so far in the call (the same input gives the same output).

Embeddings are optional: without an embedder the relevance is BM25 alone
and nothing but the standard library is used.

**Protocols.** A [`RelevanceScorer`][] is the core's
[`PreparingScorer`][poolsplit_adapters.poolsplit.PreparingScorer] (its
[`PreparedRelevance`][] answers ``warm``, ``admitted`` and
``fallback_reason``) and has the package's further capabilities
(`capabilities`): words (the index scores it over its own postings) and a
vector store's answers; nothing in the package asks for its class.
"""

from __future__ import annotations

import datetime
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from ..poolsplit import ScoringContext, check_entry
from .bm25 import Query, WordIndex
from .feedback import Feedback, best_sources, expand, expansion
from .fusion import DEFAULT_LEXICAL_WEIGHT, fuse
from .known import KnownKey, known_relevance
from .lexical import CallWords
from .modifiers import DEFAULT_FLOOR, Modifiers, combine
from .words import Analyzer

__all__ = ["RelevanceScorer", "PreparedRelevance"]


class RelevanceScorer:
    """Relevance-first scorer over Unicode words (BM25) and, optionally,
    embeddings; priority, recency, tags and project only reorder entries of
    similar relevance (the module docstring states the bound).

    Use it wherever a scorer goes: ``select(..., scorer=...)``,
    ``MemoryIndex(..., scorer=...)``, the adapters. It has
    [`prepare`][] (the core calls it once per query) and is callable in
    the spec's form ``scorer(entry, context, *, now=None)``.

    Args:
        embedder: a LangChain ``Embeddings``, a LlamaIndex ``BaseEmbedding``,
            an `EmbeddingScorer`
            (its cache and vectors are shared), or None for words alone.
        lexical_weight: ``w`` of the fusion ([`fuse`][]), in
            [0, 1]; used only with an embedder.
        modifiers: the bounded boosts and their weights, recency horizon
            included ([`Modifiers`][]).
        floor: the ``floor`` of ``(relevance + floor) * (1 + boost)``.
        analyzer: how texts become words (languages, stemming).
        corpus: document frequencies kept by the store (see the module
            docstring); None: counted per call.
        feedback: expand the query by the call's best admitted candidates
            ([`Feedback`][], pseudo-relevance feedback); the
            relevance is then the expanded query's. None (the default): off.

    Example:
        >>> from poolsplit_adapters import Pool, select
        >>> entries = [
        ...     {"id": "a", "content": "Refunds are rounded down to the cent", "created": "2025-01-05T00:00:00Z"},
        ...     {"id": "b", "content": "Lunch menu for Friday", "created": "2026-06-30T00:00:00Z", "base_priority": 10},
        ... ]
        >>> picked = select(entries, [Pool("all", 12, 1)], {"message": "refund"}, scorer=RelevanceScorer())
        >>> [e["id"] for e in picked.entries()]
        ['a']
    """

    def __init__(
        self,
        embedder: Any = None,
        *,
        lexical_weight: float = DEFAULT_LEXICAL_WEIGHT,
        modifiers: Optional[Modifiers] = None,
        floor: float = DEFAULT_FLOOR,
        analyzer: Optional[Analyzer] = None,
        corpus: Optional[WordIndex] = None,
        feedback: Optional[Feedback] = None,
    ) -> None:
        if (
            isinstance(lexical_weight, bool)
            or not isinstance(lexical_weight, (int, float))
            or not 0.0 <= lexical_weight <= 1.0
        ):
            raise ValueError("RelevanceScorer lexical_weight must be in [0, 1], got %r" % (lexical_weight,))
        if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0.0 <= floor <= 1.0:
            raise ValueError("RelevanceScorer floor must be in [0, 1], got %r" % (floor,))
        if modifiers is not None and not isinstance(modifiers, Modifiers):
            raise TypeError("RelevanceScorer modifiers must be a Modifiers, got %s" % type(modifiers).__name__)
        if feedback is not None and not isinstance(feedback, Feedback):
            raise TypeError("RelevanceScorer feedback must be a Feedback or None, got %s" % type(feedback).__name__)
        if corpus is not None and not isinstance(corpus, WordIndex):
            raise TypeError("RelevanceScorer corpus must be a WordIndex, got %s" % type(corpus).__name__)
        self.analyzer = analyzer if analyzer is not None else (corpus.analyzer if corpus is not None else Analyzer())
        if corpus is not None and corpus.analyzer != self.analyzer:
            raise ValueError("RelevanceScorer corpus was built with another analyzer than the scorer's")
        self.lexical_weight = float(lexical_weight)
        self.modifiers = modifiers if modifiers is not None else Modifiers()
        self.floor = float(floor)
        self.corpus = corpus
        self.feedback = feedback
        self.embedding: Any = None
        #: entry id -> cosine a vector store returned, without an embedder
        #: ([`with_known_relevance`][]).
        self.known: Mapping[KnownKey, float] = {}
        if embedder is not None:
            from .embedding import EmbeddingScorer  # numpy only when vectors are used

            self.embedding = embedder if isinstance(embedder, EmbeddingScorer) else EmbeddingScorer(embedder)

    @property
    def expansion(self) -> Optional[Feedback]:
        """The [`Feedback`][] a call applies: `feedback`, unless it is
        ``words_only`` and this scorer's relevance has a vector half (an
        embedder, or a vector store's similarities from
        [`with_known_relevance`][]). Every path reads it here, the columns
        of [`MemoryIndex`][poolsplit_adapters.index.MemoryIndex] included."""
        feedback = self.feedback
        if feedback is not None and feedback.words_only and (self.embedding is not None or self.known):
            return None
        return feedback

    @property
    def delta(self) -> float:
        """δ: a relevance lead no boost can undo (see the module docstring)."""
        return self.modifiers.delta(self.floor)

    # -- the corpus a store keeps --------------------------------------------

    def index_entries(self, entries: Iterable[Mapping[str, Any]]) -> None:
        """Count these entries in the corpus (creating it on first use) and,
        with an embedder, cache their vectors: a store calls it as entries
        are added."""
        batch = list(entries)
        for index, entry in enumerate(batch):
            check_entry(entry, index)
        if self.corpus is None:
            self.corpus = WordIndex(self.analyzer)
        self.corpus.add_many([entry["content"] for entry in batch])
        if self.embedding is not None:
            self.embedding.embed_entries(batch)

    def forget_entries(self, entries: Iterable[Mapping[str, Any]]) -> None:
        """Take these entries out of the corpus (a store calls it as entries
        are removed).

        Raises:
            KeyError: an entry that was never indexed (nothing is changed
                for the entries after it).
        """
        if self.corpus is None:
            raise KeyError("RelevanceScorer has no corpus: nothing was indexed")
        for entry in entries:
            self.corpus.remove(entry["content"])

    def with_corpus(self, corpus: WordIndex) -> RelevanceScorer:
        """A view ranking against ``corpus``'s statistics (a
        [`MemoryIndex`][poolsplit_adapters.index.MemoryIndex] passes the corpus it keeps
        of its own entries); shares every setting and the embedding cache,
        and leaves this scorer's own corpus as it was.

        Raises:
            ValueError: ``corpus`` was built with another analyzer.
        """
        if not isinstance(corpus, WordIndex):
            raise TypeError("RelevanceScorer.with_corpus takes a WordIndex, got %s" % type(corpus).__name__)
        if corpus.analyzer != self.analyzer:
            raise ValueError("RelevanceScorer corpus was built with another analyzer than the scorer's")
        view = object.__new__(RelevanceScorer)
        view.__dict__.update(self.__dict__)
        view.corpus = corpus
        return view

    def over(self, entries: Iterable[Any]) -> RelevanceScorer:
        """This scorer ranking against the statistics of ``entries``, every
        one of them (a view with a corpus of their contents), or itself when
        it keeps a corpus of its own. The adapters select through it, so a
        list of documents ranks as a [`MemoryIndex`][poolsplit_adapters.index.MemoryIndex]
        of the same documents does (its statistics are its whole store's),
        rather than against each pool's candidates. What is not an entry
        with a text is left for the selector to reject."""
        if self.corpus is not None and len(self.corpus):
            return self
        corpus = WordIndex(self.analyzer)
        corpus.add_many([e["content"] for e in entries if isinstance(e, Mapping) and isinstance(e.get("content"), str)])
        return self.with_corpus(corpus)

    def with_known_relevance(self, known: Mapping[KnownKey, float]) -> RelevanceScorer:
        """A view whose cosine for the entries with an ``id`` in ``known`` is
        taken from there (a vector store already returned it); shares the
        corpus, the embedding cache and the settings. Without an embedder
        the store's similarity is the vector half of the fusion all the
        same, for those entries (the others: BM25 alone), so ranking the
        candidates of a vector store never discards the store's own
        similarity."""
        view = object.__new__(RelevanceScorer)
        view.__dict__.update(self.__dict__)
        if self.embedding is not None:
            view.embedding = self.embedding.with_known_relevance(known)
        else:
            view.known = dict(known)
        return view

    def with_query_vector(self, text: str, vector: Sequence[float]) -> RelevanceScorer:
        """A view whose embedder takes ``vector`` as the embedding of the
        message ``text`` (the vector a store's search was made with:
        [`EmbeddingScorer.with_query_vector`][poolsplit_adapters.relevance.embedding.EmbeddingScorer.with_query_vector]), so a call embeds its
        query once; itself without an embedder."""
        if self.embedding is None:
            return self
        view = object.__new__(RelevanceScorer)
        view.__dict__.update(self.__dict__)
        view.embedding = self.embedding.with_query_vector(text, vector)
        return view

    # -- per call ---------------------------------------------------------------

    def prepare(
        self, context: Optional[Mapping[str, Any]], now: Optional[datetime.datetime] = None
    ) -> PreparedRelevance:
        """Digest ``context`` once for many entries.

        Raises:
            TypeError: a malformed context (as the core's scorer does).
        """
        return PreparedRelevance(self, ScoringContext(context, now), context)

    def __call__(
        self, entry: Mapping[str, Any], context: Optional[Mapping[str, Any]], *, now: Optional[datetime.datetime] = None
    ) -> float:
        """Score one entry (the spec's scorer form); prefer [`prepare`][]."""
        check_entry(entry)
        return self.prepare(context, now).score(entry)


class PreparedRelevance:
    """One query's scorer (what [`RelevanceScorer.prepare`][] returns).

    Attributes:
        fallback_reason: None, or why the embedding part is missing for this
            call or some of its entries (the relevance is then BM25 alone).

    Example:
        >>> prepared = RelevanceScorer().prepare({"message": "退款"})
        >>> prepared.relevance({"content": "退款被四舍五入"}) > prepared.relevance({"content": "午餐菜单"})
        True
    """

    def __init__(self, scorer: RelevanceScorer, context: ScoringContext, raw: Optional[Mapping[str, Any]]) -> None:
        self.scorer = scorer
        self.context = context
        self.message: str = (raw or {}).get("message") or ""
        self._words = CallWords(scorer.analyzer, scorer.corpus, self.message)
        self._memo: Dict[int, Any] = {}  # id -> (entry, relevance)
        self._first: Dict[int, Any] = {}  # id -> (entry, first-pass relevance), with feedback
        self._sources: Optional[List[Mapping[str, Any]]] = None  # the call's admitted candidates
        self._second: Optional[Query] = None  # the expanded query, once built
        self._expanding = False
        #: The scorer's `expansion`, fixed for the call (read per entry below).
        self.feedback: Optional[Feedback] = scorer.expansion
        self.embedding: Any = None
        if scorer.embedding is not None:
            self.embedding = scorer.embedding.prepare(raw, context.ref)

    @property
    def fallback_reason(self) -> Optional[str]:
        """Why embeddings were not used (None: they were, or none is set)."""
        return None if self.embedding is None else self.embedding.fallback_reason  # type: ignore[no-any-return]

    def _count(self, entries: Sequence[Mapping[str, Any]]) -> None:
        if not self._words.count(entries):
            return
        # New statistics: this call's later answers use them.
        self._memo.clear()
        self._first.clear()
        self._second = None
        self._expanding = False

    def admitted(self, entries: Sequence[Mapping[str, Any]]) -> None:
        """The call's admitted contextual candidates, in the call's order,
        before any ranking (the core calls it once per call): the only
        entries whose words [`Feedback`][] may add to the
        query. Without feedback it does nothing."""
        feedback = self.feedback
        if feedback is None:
            return
        self._sources = list(entries)
        self._count(self._sources)
        self._memo.clear()
        self._second, self._expanding = None, False
        if self.embedding is not None:
            self.embedding.warm(self._sources)

    def _expanded(self) -> Optional[Query]:
        """The second query (the best sources' texts), built on first use;
        None when there are no sources above 0."""
        if not self._expanding:
            feedback = self.feedback
            assert feedback is not None and self._sources is not None
            best = best_sources(self._sources, self.first_relevance, feedback.top)
            self._second = expansion(self._words.corpus(), [e["content"] for e in best], feedback) if best else None
            self._expanding = True
        return self._second

    def warm(self, entries: Sequence[Mapping[str, Any]]) -> None:
        """Count a pool's candidates (when the scorer keeps no corpus) and
        embed their missing vectors in one batch (the core calls it before
        ranking a pool)."""
        self._count(entries)
        if self.embedding is not None:
            self.embedding.warm(entries)

    def lexical_relevance(self, entry: Mapping[str, Any]) -> float:
        """Normalised BM25 of the entry's content, in [0, 1)."""
        words = self._words
        if words.message and words.own is not None and words.counted.get(id(entry)) is not entry:
            self._count([entry])  # counted here, so this call's stale answers are cleared
        return words.relevance(entry)

    def first_relevance(self, entry: Mapping[str, Any]) -> float:
        """The fused relevance of the query as given, in [0, 1] (BM25
        alone without embeddings): the relevance without feedback."""
        held = self._first.get(id(entry))
        if held is not None and held[0] is entry:
            return held[1]  # type: ignore[no-any-return]
        lexical = self.lexical_relevance(entry)
        if self.embedding is not None:
            value = fuse(lexical, self.embedding.embedded_relevance(entry), self.scorer.lexical_weight)
        else:
            known = known_relevance(self.scorer.known, entry)
            value = lexical if known is None else fuse(lexical, known, self.scorer.lexical_weight)
        self._first[id(entry)] = (entry, value)
        return value

    def relevance(self, entry: Mapping[str, Any]) -> float:
        """The relevance in [0, 1]: [`first_relevance`][], expanded by
        the call's best candidates when the scorer has feedback and the
        call's candidates are known ([`admitted`][])."""
        held = self._memo.get(id(entry))
        if held is not None and held[0] is entry:
            return held[1]  # type: ignore[no-any-return]
        value = self.first_relevance(entry)
        feedback = self.feedback
        if feedback is not None and self._sources is not None:
            second = self._expanded()
            if second is not None:
                value = expand(value, second.relevance(entry["content"], self.scorer.analyzer), feedback.weight)
        self._memo[id(entry)] = (entry, value)
        return value

    def boost(self, entry: Mapping[str, Any]) -> float:
        """The entry's bounded boost ([`Modifiers.boost`][])."""
        ctx = self.context
        return self.scorer.modifiers.boost(entry, ctx.tags, ctx.project, ctx.ref)

    def score(self, entry: Mapping[str, Any]) -> float:
        """``(relevance + floor) * (1 + boost)``."""
        return combine(self.relevance(entry), self.boost(entry), self.scorer.floor)

    def scores(self, entries: Sequence[Mapping[str, Any]]) -> List[float]:
        """[`score`][] of many entries (warmed first)."""
        self.warm(entries)
        return [self.score(entry) for entry in entries]
