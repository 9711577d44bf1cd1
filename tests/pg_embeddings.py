"""A deterministic embedding with real similarity, for the Postgres tests and
benchmark: words and word pairs hashed into a fixed number of dimensions.

Texts that share words (and word order) get close vectors; no model, no
download, the same vector on every machine. The LangChain and the LlamaIndex
classes are two faces of one function, so both stores see identical vectors.
"""

from __future__ import annotations

import math
import re
import zlib
from typing import Any, Dict, List

DIMS = 256
_WORD = re.compile(r"[a-z0-9]+")


def hashed_ngrams(text: str, dims: int = DIMS) -> List[float]:
    """Unigrams and bigrams of ``text``, signed-hashed into ``dims``, L2-normalised.

    The sign bit comes from the same hash: colliding features then cancel as
    often as they add up, instead of always inflating similarity. A text
    without words gets a fixed unit vector (cosine distance to an all-zero
    vector is undefined in pgvector)."""
    words = _WORD.findall(text.lower())
    vec = [0.0] * dims
    for gram in words + ["%s %s" % pair for pair in zip(words, words[1:])]:
        h = zlib.crc32(gram.encode("utf-8"))
        vec[h % dims] += 1.0 if (h >> 31) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:
        vec[0], norm = 1.0, 1.0
    return [v / norm for v in vec]


def _langchain_class() -> type:
    from langchain_core.embeddings import Embeddings

    class HashedNgramEmbeddings(Embeddings):
        """LangChain face of :func:`hashed_ngrams`."""

        def __init__(self, dims: int = DIMS) -> None:
            self.dims = dims

        def embed_documents(self, texts: List[str]) -> List[List[float]]:
            return [hashed_ngrams(t, self.dims) for t in texts]

        def embed_query(self, text: str) -> List[float]:
            return hashed_ngrams(text, self.dims)

    return HashedNgramEmbeddings


def _llama_class() -> type:
    from llama_index.core.base.embeddings.base import BaseEmbedding

    class HashedNgramLlamaEmbedding(BaseEmbedding):
        """LlamaIndex face of :func:`hashed_ngrams` (``MockEmbedding`` returns
        one constant vector, so it cannot rank anything)."""

        dims: int = DIMS

        def _get_query_embedding(self, query: str) -> List[float]:
            return hashed_ngrams(query, self.dims)

        async def _aget_query_embedding(self, query: str) -> List[float]:
            return hashed_ngrams(query, self.dims)

        def _get_text_embedding(self, text: str) -> List[float]:
            return hashed_ngrams(text, self.dims)

    return HashedNgramLlamaEmbedding


# Each class is built on first use, so a process that needs one framework
# (a writer in the fault tests) does not pay for importing the other.
_BUILDERS = {"HashedNgramEmbeddings": _langchain_class, "HashedNgramLlamaEmbedding": _llama_class}
_BUILT: Dict[str, Any] = {}


def __getattr__(name: str) -> Any:
    if name not in _BUILDERS:
        raise AttributeError(name)
    if name not in _BUILT:
        _BUILT[name] = _BUILDERS[name]()
    return _BUILT[name]
