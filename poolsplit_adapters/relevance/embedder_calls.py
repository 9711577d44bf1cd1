"""Calling an embedder: which framework's pair of methods it has, its
answers checked and quantised, texts embedded in batches through a vector cache.

`EmbeddingScorer`'s side of the embedder, apart from the score: a
LangChain ``Embeddings`` (``embed_documents`` / ``embed_query``) and a
LlamaIndex ``BaseEmbedding`` (``get_text_embedding_batch`` /
``get_query_embedding``) are told apart once, any failure of the model or
of a remote API becomes an [`EmbeddingError`][] with the cause chained, and
whatever comes back must be a batch of finite vectors of one length before
it is quantised (`quantise`: every path then ranks with the same bits).
Functions of their arguments only: the scorer keeps the state (the
dimension seen so far, the query memo, the cache).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import numpy as np

from .similarity import FloatArray, quantise
from .vector_cache import VectorCache, content_key

__all__ = [
    "EmbeddingError",
    "cached_vectors",
    "checked_vectors",
    "describe_embedder",
    "embed_query",
    "embed_texts",
    "embedder_model_id",
    "langchain_like",
]


class EmbeddingError(RuntimeError):
    """The embedder failed or returned something that is not a batch of
    finite vectors of one length. The cause is chained (``__cause__``)."""


def describe_embedder(embedder: Any) -> str:
    """The embedder's class by its full name (errors, default model ids)."""
    return "%s.%s" % (type(embedder).__module__, type(embedder).__qualname__)


def langchain_like(embedder: Any) -> bool:
    """True for LangChain's pair of methods, False for LlamaIndex's (a LangChain
    one wins when an object has both).

    Raises:
        TypeError: ``embedder`` has neither pair, naming its class.
    """
    langchain = callable(getattr(embedder, "embed_documents", None)) and callable(
        getattr(embedder, "embed_query", None)
    )
    llama = callable(getattr(embedder, "get_text_embedding_batch", None)) and callable(
        getattr(embedder, "get_query_embedding", None)
    )
    if not (langchain or llama):
        raise TypeError(
            "EmbeddingScorer needs an embedder with embed_documents and embed_query (a LangChain "
            "Embeddings) or get_text_embedding_batch and get_query_embedding (a LlamaIndex "
            "BaseEmbedding); got %s" % describe_embedder(embedder)
        )
    return langchain


def embedder_model_id(embedder: Any) -> str:
    """The name of ``embedder``'s vector space in cache keys: its own
    ``model_id``, else its class and ``model`` / ``model_name``."""
    own = getattr(embedder, "model_id", None)
    if isinstance(own, str) and own:
        return own
    name = getattr(embedder, "model", None) or getattr(embedder, "model_name", None)
    base = describe_embedder(embedder)
    return "%s:%s" % (base, name) if isinstance(name, str) and name else base


def checked_vectors(raw: Any, expected: int, dim: Optional[int]) -> FloatArray:
    """``raw`` (what the embedder returned for ``expected`` texts) as a
    quantised ``(expected, d)`` matrix, ``d`` the earlier vectors' ``dim``
    when there were any.

    Raises:
        EmbeddingError: not a list of ``expected`` finite vectors of one
            length (``dim``), saying what it was instead.
    """
    try:
        if isinstance(raw, (str, bytes)):
            raise TypeError(raw)
        rows = list(raw)
    except TypeError as exc:
        raise EmbeddingError("the embedder returned %s instead of a list of vectors" % type(raw).__name__) from exc
    if len(rows) != expected:
        raise EmbeddingError("the embedder returned %d vectors for %d texts" % (len(rows), expected))
    try:
        array = np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError("the embedder returned vectors of different lengths or non-numbers") from exc
    if array.ndim != 2 or array.shape[1] < 1:
        raise EmbeddingError("the embedder returned vectors of shape %r" % (array.shape,))
    if dim is not None and array.shape[1] != dim:
        raise EmbeddingError(
            "the embedder returned %d-dimensional vectors, earlier ones had %d" % (array.shape[1], dim)
        )
    try:
        return quantise(array)
    except ValueError as exc:
        raise EmbeddingError(str(exc)) from exc


def embed_texts(embedder: Any, langchain: bool, texts: List[str]) -> Any:
    """What ``embedder`` returns for a batch of ``texts`` (unchecked).

    Raises:
        EmbeddingError: no embedder, or the embedder raised.
    """
    if embedder is None:
        raise EmbeddingError("no embedder configured")
    try:
        if langchain:
            return embedder.embed_documents(texts)
        return embedder.get_text_embedding_batch(texts)
    except Exception as exc:  # any failure of a model or a remote API
        raise EmbeddingError("the embedder raised %s: %s" % (type(exc).__name__, exc)) from exc


def embed_query(embedder: Any, langchain: bool, text: str) -> Any:
    """What ``embedder`` returns for the query ``text`` (unchecked).

    Raises:
        EmbeddingError: no embedder, or the embedder raised.
    """
    if embedder is None:
        raise EmbeddingError("no embedder configured")
    try:
        return embedder.embed_query(text) if langchain else embedder.get_query_embedding(text)
    except Exception as exc:
        raise EmbeddingError("the embedder raised %s: %s" % (type(exc).__name__, exc)) from exc


def cached_vectors(
    texts: List[str],
    model: str,
    cache: VectorCache,
    batch_size: int,
    embed: Callable[[List[str]], FloatArray],
    dim: Optional[int],
) -> FloatArray:
    """The vectors of ``texts`` under ``model``, shape ``(len(texts), d)``:
    cached ones from ``cache``, the rest through ``embed`` (checked,
    quantised vectors) in batches of ``batch_size``, each distinct text
    once, and cached. ``dim``: the width of an empty answer.

    Raises:
        EmbeddingError: ``embed`` failed (nothing is cached from the
            failing batch; earlier batches stay cached), or the cache held
            vectors of this model of another length.
    """
    keys = [content_key(text, model) for text in texts]
    found = cache.get_many(list(dict.fromkeys(keys)))
    missing: Dict[str, str] = {}
    for key, text in zip(keys, texts):
        if key not in found and key not in missing:
            missing[key] = text
    pending = list(missing.items())
    for start in range(0, len(pending), batch_size):
        chunk = pending[start : start + batch_size]
        vectors = embed([text for _, text in chunk])
        fresh = {key: vectors[row] for row, (key, _) in enumerate(chunk)}
        cache.put_many(fresh)
        found.update(fresh)
    if not texts:
        return np.zeros((0, dim or 0), dtype=np.float32)
    try:
        return np.stack([found[key] for key in keys])
    except ValueError as exc:  # a durable cache held vectors of another length
        raise EmbeddingError("cached vectors of model %r have different lengths" % model) from exc
