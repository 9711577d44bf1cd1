"""A deterministic LangChain ``Embeddings`` with real similarity (tests, demos).

LangChain's own test embeddings (``FakeEmbeddings``,
``DeterministicFakeEmbedding``) give every text an unrelated random vector,
so nothing built on them can rank by meaning. [`HashEmbeddings`][] wraps
[`HashEmbedder`][] (hashed words
and character n-grams): offline, the same vector on every machine, and texts
sharing words or word stems are close. Use it with ``InMemoryVectorStore``,
``EmbeddingScorer`` or anything else that takes an ``Embeddings``.

This module imports ``langchain_core`` (the ``langchain`` extra) when it is
imported, and only then.
"""

from __future__ import annotations

from typing import List

from langchain_core.embeddings import Embeddings
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import override

from ..memory.hash_embedding import HashEmbedder

__all__ = ["HashEmbeddings"]


class HashEmbeddings(Embeddings, BaseModel):
    """Deterministic hashed n-gram embeddings (no model, no network).

    Example:
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = InMemoryVectorStore(HashEmbeddings())
        >>> _ = store.add_texts(["Refunds were rounded down by a cent", "The staging URL changed"])
        >>> store.similarity_search("refund rounding", k=1)[0].page_content
        'Refunds were rounded down by a cent'
    """

    model_config = ConfigDict(frozen=True)

    dim: int = Field(default=1024, gt=0, description="Vector length (hash buckets).")

    @property
    def model_id(self) -> str:
        """The vector space's name, for ``EmbeddingScorer`` cache keys."""
        return HashEmbedder(self.dim).model_id

    @override
    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return HashEmbedder(self.dim).embed_documents(texts)

    @override
    def embed_query(self, text: str) -> List[float]:
        return HashEmbedder(self.dim).embed_query(text)
