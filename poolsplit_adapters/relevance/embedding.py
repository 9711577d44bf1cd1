"""EmbeddingScorer: rank memories by meaning, relevance first.

Word overlap misses paraphrase: "fix the rounding bug in the refunds total"
shares one word with "The October rounding incident: float multiplication
lost a cent". This scorer's relevance is the cosine of the query's and the
entry's embedding vectors, and the score puts it first:

```text
relevance = cos(query, entry)                                   (in [-1, 1])
score     = (max(0, relevance) + floor) * (1 + boost(entry))
```

``boost`` is priority, recency (a linear boost within a horizon, 30 days
by default), tags and project, each bounded, in ``[0, m]``
([`Modifiers`][], where the rule
and its bound δ are stated once). Until 0.4 the score was the spec's
partial score times ``1 + 1.5 * max(0, cos)``: relevance weighed at most
x2.5 against a recency factor that falls to x0.3 after 90 days, so on a
months-long store any entry of the last month outranked any older match
(an independent run loaded a third of plain vector search's evidence).
Now an entry of cosine ``c`` never outranks one of cosine ``c + δ``.

* **max(0, cos)**: a negative cosine is not evidence against an entry (real
  sentence embedders put unrelated texts anywhere around 0), so it must not
  rank below "no match".
* **No cut-off inside the score**: cosines are continuous, a hidden cliff
  would make a 0.001 change flip an entry's weight, and dropping weak
  matches is the job of the explicit per-pool threshold
  (``Pool(min_relevance=...)``), which reports what it cuts.

A **hybrid** mixes the two measures: ``relevance = (1 - h) * cos + h * f``
where ``f`` is the core's lexical overlap fraction; ``lexical_weight=h``.
For words and vectors fused properly (BM25, any language, stemming) use
[`RelevanceScorer`][poolsplit_adapters.relevance.RelevanceScorer] with an embedder.

**Fallback.** Without an embedder, or when the embedder raises (or returns
something that is not a vector), the scorer ranks with the lexical
relevance-first scorer (BM25,
[`RelevanceScorer`][poolsplit_adapters.relevance.RelevanceScorer] with the same
modifiers; seed 003: vector search with a keyword fallback). It says so once
per scorer in an [`EmbeddingFallbackWarning`][] and on every prepared
call in ``prepared.fallback_reason``, for the selection report. An entry
whose own vector cannot be computed is scored lexically too.

**Cost.** Entry vectors are computed in batches and cached by content hash
(`vector_cache`; the embedder is called and its answers checked in
`embedder_calls`); the query is embedded once
per [`EmbeddingScorer.prepare`][] (and remembered for repeated messages),
or not at all when the caller already has its vector: a vector store embeds
the query for its search, and [`EmbeddingScorer.with_query_vector`][]
hands that vector over instead of paying for a second embedding.
Over a matrix of entry vectors, relevance is one matrix-vector product
(`PreparedEmbeddingScore.relevance_of_matrix`); vectors are quantised
so that product is exact and every path ranks identically.

**Protocols.** It is the core's
[`PreparingScorer`][poolsplit_adapters.poolsplit.PreparingScorer] and has the
package's vectors and store-answers capabilities (`capabilities`): the
index keeps its entry vectors, a vector store of its model lends it hers.

numpy is required (the ``fast`` extra; every framework that provides
embeddings already pulls it in).
"""

from __future__ import annotations

import datetime
import threading
import warnings
from collections import OrderedDict
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from ..poolsplit import ScoringContext, check_entry
from .embedder_calls import (
    EmbeddingError,
    cached_vectors,
    checked_vectors,
    embed_query,
    embed_texts,
    embedder_model_id,
    langchain_like,
)
from .known import KnownKey, known_relevance
from .lexical import CallWords
from .modifiers import DEFAULT_FLOOR, Modifiers, combine
from .similarity import Float64Array, FloatArray, cosine, norms_of, score_matrix
from .vector_cache import InMemoryVectorCache, VectorCache, content_key
from .words import Analyzer

__all__ = [
    "EmbeddingScorer",
    "PreparedEmbeddingScore",
    "EmbeddingFallbackWarning",
    "EmbeddingError",
]

_QUERY_MEMO = 64  # distinct recent messages whose vectors are remembered


class EmbeddingFallbackWarning(UserWarning):
    """An [`EmbeddingScorer`][] is ranking lexically because embeddings
    are unavailable or the embedder failed. Emitted once per scorer; every
    later fallback is still recorded in ``prepared.fallback_reason``."""


class _Shared:
    """State shared by a scorer and its [`with_known_relevance`][poolsplit_adapters.relevance.embedding.EmbeddingScorer.with_known_relevance] views:
    the vector cache, the query memo, the dimension and the warn-once flag."""

    def __init__(self, cache: VectorCache) -> None:
        self.cache = cache
        self.queries: OrderedDict[str, FloatArray] = OrderedDict()
        self.dim: Optional[int] = None
        self.warned = False
        self.lock = threading.Lock()
        self.last_fallback: Optional[str] = None


class EmbeddingScorer:
    """Pool-split scorer whose relevance is embedding similarity.

    Use it wherever a scorer goes (``select(..., scorer=...)``,
    ``MemoryIndex.select(..., scorer=...)``, the adapters): it is callable as
    ``scorer(entry, context, *, now=None)`` (the spec's scorer form) and has
    [`prepare`][], which the selector calls once per query.

    Args:
        embedder: a LangChain ``Embeddings`` (``embed_documents`` /
            ``embed_query``), a LlamaIndex ``BaseEmbedding``
            (``get_text_embedding_batch`` / ``get_query_embedding``), any
            object with either pair of methods, or None (rank lexically: the
            "no embeddings available" case, warned once).
        modifiers: the bounded boosts (priority, recency horizon and weight,
            tags, project) and so the bound δ; default
            [`Modifiers()`][poolsplit_adapters.relevance.Modifiers].
        floor: ``floor`` in ``(max(0, relevance) + floor) * (1 + boost)``.
        lexical_weight: ``h`` of the hybrid ``(1 - h) * cos + h * overlap``;
            0 (default) is pure embedding similarity.
        cache: where entry vectors are kept (a `VectorCache`); by
            default an unbounded `InMemoryVectorCache` of this scorer.
        model_id: names the vector space in cache keys; by default the
            embedder's ``model_id``, else its class and ``model`` /
            ``model_name``. Give one when two differently configured
            embedders of one class share a durable cache.
        batch_size: texts per embedder call when entries are embedded.

    Example:
        >>> from poolsplit_adapters import Pool, select
        >>> from poolsplit_adapters.memory.hash_embedding import HashEmbedder
        >>> scorer = EmbeddingScorer(HashEmbedder())
        >>> entries = [
        ...     {"id": "a", "content": "Refunds were rounded down by a cent"},
        ...     {"id": "b", "content": "The staging URL changed"},
        ... ]
        >>> picked = select(entries, [Pool("all", 100, 1)], {"message": "refund rounding"}, scorer=scorer)
        >>> [e["id"] for e in picked.entries()]
        ['a']
    """

    def __init__(
        self,
        embedder: Any = None,
        *,
        modifiers: Optional[Modifiers] = None,
        floor: float = DEFAULT_FLOOR,
        lexical_weight: float = 0.0,
        cache: Optional[VectorCache] = None,
        model_id: Optional[str] = None,
        batch_size: int = 256,
    ) -> None:
        # Which pair of methods the embedder is called through (`embedder_calls`).
        self._langchain_like = False if embedder is None else langchain_like(embedder)
        if modifiers is not None and not isinstance(modifiers, Modifiers):
            raise TypeError("EmbeddingScorer modifiers must be a Modifiers, got %s" % type(modifiers).__name__)
        if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0.0 <= floor <= 1.0:
            raise ValueError("EmbeddingScorer floor must be in [0, 1], got %r" % (floor,))
        if (
            isinstance(lexical_weight, bool)
            or not isinstance(lexical_weight, (int, float))
            or not 0.0 <= lexical_weight <= 1.0
        ):
            raise ValueError("EmbeddingScorer lexical_weight must be in [0, 1], got %r" % (lexical_weight,))
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError("EmbeddingScorer batch_size must be a positive int, got %r" % (batch_size,))
        if model_id is not None and not (isinstance(model_id, str) and model_id):
            raise TypeError("EmbeddingScorer model_id must be a non-empty string, got %r" % (model_id,))
        self.embedder = embedder
        self.modifiers = modifiers if modifiers is not None else Modifiers()
        self.floor = float(floor)
        self.lexical_weight = float(lexical_weight)
        self.batch_size = batch_size
        self._model_id = model_id
        self._known: Mapping[KnownKey, float] = {}
        self._given_query: Optional[tuple[str, Any]] = None
        self._shared = _Shared(cache if cache is not None else InMemoryVectorCache())

    # -- identity and cache ---------------------------------------------------

    @property
    def model_id(self) -> str:
        """The vector space's name in cache keys (see the ``model_id`` arg)."""
        return self._model_id if self._model_id is not None else embedder_model_id(self.embedder)

    @property
    def known(self) -> Mapping[KnownKey, float]:
        """The similarities a vector store returned, by entry id
        ([`with_known_relevance`][]); empty for a scorer that embeds all."""
        return self._known

    @property
    def cache(self) -> VectorCache:
        """The entry-vector cache (shared with [`with_known_relevance`][] views)."""
        return self._shared.cache

    @property
    def last_fallback_reason(self) -> Optional[str]:
        """Why the most recent prepared call (or batch embedding) fell back,
        or None when it did not."""
        return self._shared.last_fallback

    # -- embedding ------------------------------------------------------------

    def _check_batch(self, raw: Any, expected: int) -> FloatArray:
        """`checked_vectors` against the dimension of the vectors so far, which it then holds."""
        quantised = checked_vectors(raw, expected, self._shared.dim)
        self._shared.dim = quantised.shape[1]
        return quantised

    def _embed_documents(self, texts: List[str]) -> FloatArray:
        return self._check_batch(embed_texts(self.embedder, self._langchain_like, texts), len(texts))

    def _embed_query(self, text: str) -> FloatArray:
        given = self._given_query
        if given is not None and given[0] == text:
            # Checked here, not when handed over: a bad vector is a fallback
            # of this call, reported like a failing embedder.
            handed: FloatArray = self._check_batch([given[1]], 1)[0]
            handed.setflags(write=False)
            return handed
        shared = self._shared
        with shared.lock:
            known = shared.queries.get(text)
            if known is not None:
                shared.queries.move_to_end(text)
                return known
        vector: FloatArray = self._check_batch([embed_query(self.embedder, self._langchain_like, text)], 1)[0]
        vector.setflags(write=False)
        with shared.lock:
            shared.queries[text] = vector
            while len(shared.queries) > _QUERY_MEMO:
                shared.queries.popitem(last=False)
        return vector

    def vectors_of(self, texts: Sequence[str]) -> FloatArray:
        """(Named ``vectors_for`` until 0.4: ``MemoryIndex`` probed that name
        for its matrix path, which multiplied the old score's factor; it
        reaches this scorer through the per-entry path until it asks the
        prepared scorer for the relevance-first score.)

        Quantised vectors of ``texts``, shape ``(len(texts), dim)``: cached
        ones from the cache, the rest embedded in batches of ``batch_size``
        (each distinct text once) and cached.

        Raises:
            EmbeddingError: the embedder failed (nothing is cached from the
                failing batch; earlier batches stay cached).
        """
        model, cache = self.model_id, self.cache
        return cached_vectors(list(texts), model, cache, self.batch_size, self._embed_documents, self._shared.dim)

    def embed_entries(self, entries: Sequence[Mapping[str, Any]]) -> None:
        """Make sure every entry's content has a cached vector (batched), so
        later queries embed only the query. A store calls this when entries
        are added.

        Raises:
            EmbeddingError: the embedder failed.
        """
        self.vectors_of([entry["content"] for entry in entries])

    def fill_cache(self, texts: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        """Fill the vector cache with vectors computed elsewhere (a vector
        store returns them with its hits), so recalled entries are not
        embedded again. They must come from the same model (``model_id``)."""
        texts = list(texts)
        array = self._check_batch(vectors, len(texts))
        model = self.model_id
        self.cache.put_many({content_key(text, model): array[row] for row, text in enumerate(texts)})

    #: Row norms for `score_matrix` (an index keeps them per row).
    norms_of = staticmethod(norms_of)

    # -- the score ------------------------------------------------------------

    def relevance_from(
        self, cosines: Union[float, Float64Array], overlap: Union[None, float, Float64Array] = None
    ) -> Union[float, Float64Array]:
        """Relevance from cosines (and, for the hybrid, lexical overlap
        fractions): ``cos``, or ``(1 - h) * cos + h * overlap``. Works on a
        float or element-wise on arrays, with the same float64 operations,
        so a vectorised index computes the scalar path's exact bits."""
        h = self.lexical_weight
        if h == 0.0:
            return cosines
        mixed = (1.0 - h) * cosines + h * (0.0 if overlap is None else overlap)
        return mixed

    def prepare(
        self, context: Optional[Mapping[str, Any]], now: Optional[datetime.datetime] = None
    ) -> PreparedEmbeddingScore:
        """Digest ``context`` once for many entries: checks it, computes the
        lexical pieces, embeds ``context["message"]`` (once; repeated
        messages are remembered).

        Raises:
            TypeError: a malformed context (as the default scorer does).
        """
        lexical = ScoringContext(context, now)
        message = (context or {}).get("message") or ""
        query: Optional[FloatArray] = None
        reason: Optional[str] = None
        if self.embedder is None:
            reason = "no embedder configured"
        elif message.strip():
            try:
                query = self._embed_query(message)
            except EmbeddingError as exc:
                reason = "query embedding failed: %s" % exc
        self._shared.last_fallback = reason
        if reason is not None:
            self._fell_back(reason)
        return PreparedEmbeddingScore(self, lexical, query, reason, context)

    def __call__(
        self, entry: Mapping[str, Any], context: Optional[Mapping[str, Any]], *, now: Optional[datetime.datetime] = None
    ) -> float:
        """Score one entry (the spec's scorer form). Prefer [`prepare`][]
        for many entries: it checks and digests the context once."""
        check_entry(entry)
        return self.prepare(context, now).score(entry)

    def with_known_relevance(self, known: Mapping[KnownKey, float]) -> EmbeddingScorer:
        """A view of this scorer that takes the relevance of the entries
        whose ``id`` is in ``known`` from there instead of embedding them:
        a vector store already returned their similarity (converted by
        [`relevance_from_store_score`][poolsplit_adapters.relevance.similarity.relevance_from_store_score]). Shares the cache,
        the query memo and the warn-once state."""
        view = object.__new__(EmbeddingScorer)
        view.__dict__.update(self.__dict__)
        view._known = dict(known)
        return view

    def with_query_vector(self, text: str, vector: Sequence[float]) -> EmbeddingScorer:
        """A view of this scorer that takes ``vector`` as the embedding of
        the message ``text`` instead of asking the embedder: the vector a
        vector store's search was made with (same model: see
        `same_vector_space`), so a call
        costs one query embedding, not two. A message other than ``text`` is
        embedded as usual. Shares the cache, the query memo and the
        warn-once state.

        Example:
            ```python
            vector = embeddings.embed_query("refund rounding")
            hits = store.similarity_search_by_vector(vector, k=20)
            scorer = EmbeddingScorer(embeddings).with_query_vector("refund rounding", vector)
            ```
        """
        view = object.__new__(EmbeddingScorer)
        view.__dict__.update(self.__dict__)
        view._given_query = (text, vector)
        return view

    def _fell_back(self, reason: str) -> None:
        shared = self._shared
        with shared.lock:
            if shared.warned:
                return
            shared.warned = True
        warnings.warn(
            "EmbeddingScorer is ranking lexically: %s. Later fallbacks of this scorer are recorded in "
            "prepared.fallback_reason only." % reason,
            EmbeddingFallbackWarning,
            stacklevel=4,
        )


class PreparedEmbeddingScore:
    """One query's scorer: what [`EmbeddingScorer.prepare`][] returns.

    Attributes:
        fallback_reason: None when ranking by embeddings; else why this call
            (the query could not be embedded: every entry) or some of its
            entries (theirs could not) ranked lexically. Record it in the
            selection report.
        has_query: False when the context has no message: every relevance is
            then 0 and nothing is embedded.
        query_vector: the quantised query vector (None without a query or in
            fallback), for `score_matrix`.

    Example:
        >>> from poolsplit_adapters.memory.hash_embedding import HashEmbedder
        >>> prepared = EmbeddingScorer(HashEmbedder()).prepare({"message": "refund rounding"})
        >>> prepared.relevance({"content": "refunds rounded"}) > prepared.relevance({"content": "staging URL"})
        True
    """

    __slots__ = (
        "scorer",
        "lexical",
        "query_vector",
        "has_query",
        "_memo",
        "_query_failure",
        "_entry_failure",
        "_context",
        "_words",
    )

    def __init__(
        self,
        scorer: EmbeddingScorer,
        lexical: ScoringContext,
        query: Optional[FloatArray],
        reason: Optional[str],
        context: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self.scorer = scorer
        self.lexical = lexical
        self._context = context
        self._words: Optional[CallWords] = None  # the lexical fallback, built when first needed
        self.query_vector = query
        self._query_failure = reason
        self.has_query = query is not None or (reason is not None and lexical.nwords > 0)
        self._memo: Dict[int, Any] = {}  # id(entry) -> (entry, relevance or None)
        self._entry_failure: Optional[str] = None

    @property
    def fallback_reason(self) -> Optional[str]:
        """None while every entry is ranked by embeddings; else why this call
        (or some of its entries) ranked lexically."""
        return self._query_failure or self._entry_failure

    def _fallback(self) -> CallWords:
        """The lexical relevance (BM25 over the call's own corpus, what a
        `RelevanceScorer` without an
        embedder ranks by) this call falls back to where vectors are
        missing; its score takes the same modifiers and floor
        (`score`)."""
        if self._words is None:
            self._words = CallWords(Analyzer(), None, (self._context or {}).get("message") or "")
        return self._words

    def embedded_relevance(self, entry: Mapping[str, Any]) -> Optional[float]:
        """The relevance from vectors (cosine, or the hybrid mix), or None
        when this entry has none in this call (fallback)."""
        return self._embedded_relevance(entry)

    def boost(self, entry: Mapping[str, Any]) -> float:
        """The entry's bounded boost (priority, recency, tags, project)."""
        ctx = self.lexical
        return self.scorer.modifiers.boost(entry, ctx.tags, ctx.project, ctx.ref)

    def _overlap(self, entry: Mapping[str, Any]) -> float:
        # The default scorer's own relevance: one rule, in the core.
        return float(self.lexical.relevance(entry))

    def _embedded_relevance(self, entry: Mapping[str, Any]) -> Optional[float]:
        """Relevance from vectors, or None when this entry must be scored
        lexically (fallback, or its vector could not be computed)."""
        if self._query_failure is not None:
            return None
        held = self._memo.get(id(entry))
        if held is not None and held[0] is entry:
            return held[1]  # type: ignore[no-any-return]
        relevance: Optional[float]
        scorer = self.scorer
        given = known_relevance(scorer._known, entry)
        if given is not None:
            overlap = self._overlap(entry) if scorer.lexical_weight else None
            relevance = float(scorer.relevance_from(float(given), overlap))
        elif self.query_vector is None:
            relevance = 0.0
        else:
            vector = self._entry_vector(entry["content"])
            if vector is None:
                relevance = None
            else:
                cos = cosine(self.query_vector, vector)
                overlap = self._overlap(entry) if scorer.lexical_weight else None
                relevance = float(scorer.relevance_from(cos, overlap))
        self._memo[id(entry)] = (entry, relevance)
        return relevance

    def _entry_vector(self, content: str) -> Optional[FloatArray]:
        """The entry's vector, or None when it cannot be had. After one
        failure in this call the embedder is not asked again (a failing
        remote API would otherwise be called once per entry); cached
        vectors are still used."""
        scorer = self.scorer
        if self._entry_failure is not None:
            key = content_key(content, scorer.model_id)
            return scorer.cache.get_many([key]).get(key)
        try:
            vector: FloatArray = scorer.vectors_of([content])[0]
        except EmbeddingError as exc:
            self._entry_failure = reason = "entry embedding failed: %s" % exc
            scorer._shared.last_fallback = reason
            scorer._fell_back(reason)
            return None
        return vector

    def relevance(self, entry: Mapping[str, Any]) -> float:
        """How well ``entry`` matches the query: the cosine (or the hybrid
        mix), in [-1, 1]. In fallback, the lexical relevance (normalised
        BM25, in [0, 1))."""
        relevance = self._embedded_relevance(entry)
        if relevance is None:
            return float(self._fallback().relevance(entry))
        return relevance

    def score(self, entry: Mapping[str, Any]) -> float:
        """The entry's score: ``(max(0, relevance) + floor) * (1 + boost)``;
        in fallback, the lexical relevance-first score (the same shape)."""
        relevance = self._embedded_relevance(entry)
        if relevance is None:
            relevance = self._fallback().relevance(entry)
        return combine(relevance, self.boost(entry), self.scorer.floor)

    def relevances(self, entries: Sequence[Mapping[str, Any]]) -> List[float]:
        """`relevance` of many entries, their missing vectors embedded
        in batches first (one embedder call per ``batch_size`` texts)."""
        self.warm(entries)
        return [self.relevance(entry) for entry in entries]

    def scores(self, entries: Sequence[Mapping[str, Any]]) -> List[float]:
        """`score` of many entries, embedding missing vectors in batches."""
        self.warm(entries)
        return [self.score(entry) for entry in entries]

    def warm(self, entries: Sequence[Mapping[str, Any]]) -> None:
        """Embed the missing vectors of ``entries`` in batches now, instead of
        one embedder call per entry later: a selector calls it once with the
        call's candidates before asking for scores. A failure is recorded
        (``fallback_reason``) and those entries are then scored lexically.

        The relevances are computed here, from the vectors of the batch, and
        kept for the call: the per-entry path would otherwise look every
        vector up a second time (key hash and cache lookup per entry).
        Entries already worked out in this call are skipped (the core warms
        the same group again for the threshold and the ranking)."""
        if self._query_failure is not None:
            self._fallback().count(entries)
            return
        if self.query_vector is None:
            return
        scorer = self.scorer
        known = scorer._known
        memo = self._memo
        pending: List[Mapping[str, Any]] = []
        for entry in entries:
            if known and known_relevance(known, entry) is not None:  # a vector store already said how relevant
                continue
            held = memo.get(id(entry))
            if held is not None and held[0] is entry:
                continue
            pending.append(entry)
        if not pending:
            return
        try:
            vectors = scorer.vectors_of([entry["content"] for entry in pending])
        except EmbeddingError as exc:
            # Entries without a cached vector are then scored lexically.
            self._entry_failure = reason = "entry embedding failed: %s" % exc
            scorer._shared.last_fallback = reason
            scorer._fell_back(reason)
            self._fallback().count(entries)
            return
        # The same operations as _embedded_relevance, so the same bits.
        query = self.query_vector
        for entry, vector in zip(pending, vectors):
            cos = cosine(query, vector)
            overlap = self._overlap(entry) if scorer.lexical_weight else None
            memo[id(entry)] = (entry, float(scorer.relevance_from(cos, overlap)))

    def relevance_of_matrix(
        self, matrix: FloatArray, norms: Optional[Float64Array] = None, overlap: Optional[Float64Array] = None
    ) -> Float64Array:
        """Relevance of every row of a quantised entry matrix (the vectorised
        path: one matrix-vector product). ``overlap`` holds the lexical
        overlap fractions for a hybrid scorer. Bit-identical, row by row, to
        `relevance`.

        Raises:
            ValueError: the prepared call is in fallback or has no query (use
                the lexical path / zeros), or the shapes do not match.
        """
        if self.query_vector is None:
            raise ValueError("no query vector: this call %s" % (self._query_failure or "has no message"))
        cosines = score_matrix(self.query_vector, matrix, norms)
        return np.asarray(self.scorer.relevance_from(cosines, overlap), dtype=np.float64)
