"""Similarity between a query and memory entries: the one rule, every path.

Relevance is the cosine of two embedding vectors. This module is where that
cosine is computed, for one entry and for a whole matrix of entries, and
where a vector store's own score is turned into the same relevance.

**Exact on every path.** A float32 matrix-vector product does not give the
same last bits for a row when the matrix has a different number of rows
(BLAS picks other kernels and blockings), so a scorer that computed the
cosine one entry at a time on one path and for a whole index on another
would rank near-ties differently. Vectors are therefore *quantised*: each is
scaled so that its largest component is ``levels(dim)`` and rounded to
integers. A dot product of two such vectors is a sum of integer products
whose every partial sum stays below 2**24, so float32 arithmetic computes it
exactly, whatever the order, blocking or BLAS. The cosine is then one
float64 division, the same on every path. The price is a cosine within about
0.005 of the float one (measured on all-MiniLM-L6-v2 vectors in
``benchmarks/eval``), far below anything that matters for ranking memories;
the speed is that of a float32 product.

A vector store's score is converted by [`relevance_from_store_score`][];
the rule per metric is in [`StoreMetric`][].
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Any, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "StoreMetric",
    "levels",
    "quantise",
    "norms_of",
    "cosine",
    "score_matrix",
    "metric_for",
    "relevance_from_store_score",
]

FloatArray = NDArray[np.float32]
Float64Array = NDArray[np.float64]

#: float32 represents every integer up to 2**24 exactly.
_EXACT_LIMIT = float(1 << 24)


def levels(dim: int) -> int:
    """Largest integer magnitude of a quantised component for ``dim``
    dimensions: ``dim * levels**2 <= 2**24``, so no partial sum of a dot
    product can leave float32's exact-integer range (209 for 384 dims)."""
    if dim < 1:
        raise ValueError("an embedding needs at least one dimension, got %d" % dim)
    found = int(math.isqrt(int(_EXACT_LIMIT) // dim))
    if found < 1:
        raise ValueError("%d dimensions are too many to quantise exactly" % dim)
    return found


def quantise(vectors: Any) -> FloatArray:
    """Quantised copies of ``vectors`` (one vector or a 2-D batch), float32
    holding integers in ``[-levels(dim), levels(dim)]``.

    Each vector is scaled by its own largest magnitude, so the cosine does
    not depend on the embedder's scale (unit vectors or not). A zero vector
    stays zero (its cosine with anything is 0).

    Raises:
        ValueError: not a 1-D or 2-D array of finite numbers.
    """
    array = np.asarray(vectors, dtype=np.float64)
    if array.ndim not in (1, 2) or array.shape[-1] < 1:
        raise ValueError("embedding vectors must be a non-empty 1-D or 2-D array, got shape %r" % (array.shape,))
    if not np.isfinite(array).all():
        raise ValueError("embedding vectors contain NaN or an infinity")
    top = np.max(np.abs(array), axis=-1, keepdims=True)
    scale = np.where(top > 0.0, levels(array.shape[-1]) / np.where(top > 0.0, top, 1.0), 0.0)
    return np.rint(array * scale).astype(np.float32)


def norms_of(matrix: FloatArray) -> Float64Array:
    """Euclidean norms of the rows of a quantised matrix (exact squares sum,
    then one correctly rounded square root: the same bits as `cosine`
    computes for one row)."""
    squares: FloatArray = np.einsum("ij,ij->i", matrix, matrix)
    norms: Float64Array = np.sqrt(squares.astype(np.float64))
    return norms


def _norm(vector: FloatArray) -> float:
    return math.sqrt(float(np.dot(vector, vector)))


def cosine(query: FloatArray, vector: FloatArray) -> float:
    """Cosine of two quantised vectors, clipped to [-1, 1]; 0 when either is
    the zero vector. Bit-identical to the same row of `score_matrix`."""
    denominator = _norm(query) * _norm(vector)
    if denominator <= 0.0:
        return 0.0
    value = float(np.dot(query, vector)) / denominator
    return 1.0 if value > 1.0 else (-1.0 if value < -1.0 else value)


def score_matrix(query: FloatArray, matrix: FloatArray, norms: Optional[Float64Array] = None) -> Float64Array:
    """Cosines of a quantised query with every row of a quantised matrix:
    one matrix-vector product (plus a division per row).

    Args:
        query: quantised query vector (`quantise`), shape ``(d,)``.
        matrix: quantised entry vectors, shape ``(n, d)``.
        norms: the rows' norms (`norms_of`); computed when omitted, so
            an index that keeps them per row pays only the product per query.

    Returns:
        float64 array of ``n`` cosines in [-1, 1] (0 for a zero vector).
    """
    if matrix.ndim != 2 or query.ndim != 1 or matrix.shape[1] != query.shape[0]:
        raise ValueError("query of shape %r does not match entry vectors of shape %r" % (query.shape, matrix.shape))
    if norms is None:
        norms = norms_of(matrix)
    dots = (matrix @ query).astype(np.float64)
    denominator = _norm(query) * norms
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.where(denominator > 0.0, dots / denominator, 0.0)
    return np.clip(values, -1.0, 1.0)


class StoreMetric(str, Enum):
    """What a vector store's returned score measures, and so how it becomes
    a cosine ([`relevance_from_store_score`][]).

    The distance rules assume unit-length vectors, which is what normalised
    sentence embedders (all-MiniLM-L6-v2, OpenAI, ...) return; for vectors of
    other lengths a distance says nothing about the angle, and only
    ``COSINE`` / ``COSINE_DISTANCE`` stores can be used.
    """

    #: The score is the cosine similarity itself (LangChain
    #: ``InMemoryVectorStore.similarity_search_with_score``; LlamaIndex
    #: ``SimpleVectorStore`` in its default mode, ``NodeWithScore.score``).
    COSINE = "cosine"
    #: ``1 - cosine`` (pgvector ``<=>``, LangChain PGVector's default
    #: strategy): cosine = ``1 - d``.
    COSINE_DISTANCE = "cosine_distance"
    #: Euclidean distance ``d`` between unit vectors: ``d**2 = 2 - 2 cos``, so
    #: cosine = ``1 - d**2 / 2``.
    EUCLIDEAN = "euclidean"
    #: LlamaIndex ``SimilarityMode.EUCLIDEAN`` returns ``-d``: cosine =
    #: ``1 - s**2 / 2``.
    NEGATIVE_EUCLIDEAN = "negative_euclidean"
    #: Squared Euclidean distance between unit vectors: cosine = ``1 - d / 2``.
    SQUARED_EUCLIDEAN = "squared_euclidean"
    #: Inner product of unit vectors, equal to the cosine.
    DOT_PRODUCT = "dot_product"


def relevance_from_store_score(score: float, metric: StoreMetric) -> float:
    """A vector store's score as the cosine the embedding scorer would
    compute, clipped to [-1, 1] (see [`StoreMetric`][] for each rule).

    Example:
        >>> relevance_from_store_score(0.25, StoreMetric.COSINE_DISTANCE)
        0.75
        >>> relevance_from_store_score(1.0, StoreMetric.EUCLIDEAN)
        0.5

    Raises:
        ValueError: a score that is not a finite number.
    """
    value = float(score)
    if not math.isfinite(value):
        raise ValueError("a vector store returned the score %r; it must be a finite number" % (score,))
    metric = StoreMetric(metric)
    if metric in (StoreMetric.COSINE, StoreMetric.DOT_PRODUCT):
        cos = value
    elif metric is StoreMetric.COSINE_DISTANCE:
        cos = 1.0 - value
    elif metric in (StoreMetric.EUCLIDEAN, StoreMetric.NEGATIVE_EUCLIDEAN):
        cos = 1.0 - value * value / 2.0
    else:  # SQUARED_EUCLIDEAN
        cos = 1.0 - value / 2.0
    return 1.0 if cos > 1.0 else (-1.0 if cos < -1.0 else cos)


_KNOWN_STORES: Sequence[Tuple[str, str, StoreMetric]] = (
    # (module prefix, class name, metric): checked by name so that neither
    # framework is imported here.
    ("langchain_core.vectorstores", "InMemoryVectorStore", StoreMetric.COSINE),
    ("llama_index.core.vector_stores", "SimpleVectorStore", StoreMetric.COSINE),
)


def metric_for(store: Any) -> StoreMetric:
    """The [`StoreMetric`][] of a known vector store (LangChain
    ``InMemoryVectorStore``, LlamaIndex ``SimpleVectorStore``, or a
    ``VectorStoreIndex`` over one).

    Raises:
        ValueError: an unknown store: name its metric explicitly instead
            (guessing would silently turn a distance into a similarity).
    """
    inner = getattr(store, "vector_store", None)  # a LlamaIndex VectorStoreIndex
    for candidate in (store, inner):
        if candidate is None:
            continue
        for klass in type(candidate).__mro__:
            for module, name, metric in _KNOWN_STORES:
                if klass.__name__ == name and klass.__module__.startswith(module):
                    return metric
    raise ValueError(
        "no known score rule for %s; pass the store's metric explicitly "
        "(StoreMetric.COSINE, COSINE_DISTANCE, EUCLIDEAN, ...)" % type(store).__name__
    )
