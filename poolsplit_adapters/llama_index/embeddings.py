"""A deterministic LlamaIndex ``BaseEmbedding`` with real similarity (tests, demos).

LlamaIndex's ``MockEmbedding`` returns the same vector for every text, so a
retriever over it ranks nothing. [`HashEmbedding`][] wraps
[`HashEmbedder`][] (hashed words
and character n-grams): offline, the same vector on every machine, and texts
sharing words or word stems are close. Use it as ``embed_model=`` of a
``VectorStoreIndex``, with ``EmbeddingScorer``, or in ``Settings``.

This module imports ``llama_index.core`` (the ``llama-index`` extra) when it
is imported, and only then.
"""

from __future__ import annotations

from typing import Any, List

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import Field

from ..memory.hash_embedding import HashEmbedder

__all__ = ["HashEmbedding"]


class HashEmbedding(BaseEmbedding):
    """Deterministic hashed n-gram embedding (no model, no network).

    Example:
        >>> from llama_index.core import VectorStoreIndex
        >>> from llama_index.core.schema import TextNode
        >>> nodes = [TextNode(text="Refunds were rounded down by a cent"), TextNode(text="The staging URL changed")]
        >>> index = VectorStoreIndex(nodes, embed_model=HashEmbedding())
        >>> index.as_retriever(similarity_top_k=1).retrieve("refund rounding")[0].get_content()
        'Refunds were rounded down by a cent'
    """

    dim: int = Field(default=1024, gt=0, description="Vector length (hash buckets).")

    def __init__(self, dim: int = 1024, **kwargs: Any) -> None:
        kwargs.setdefault("model_name", HashEmbedder(dim).model_id)
        super().__init__(dim=dim, **kwargs)  # type: ignore[call-arg]  # pydantic field, unseen by mypy

    @classmethod
    def class_name(cls) -> str:
        return "PoolSplitHashEmbedding"

    @property
    def model_id(self) -> str:
        """The vector space's name, for ``EmbeddingScorer`` cache keys."""
        return HashEmbedder(self.dim).model_id

    def _get_query_embedding(self, query: str) -> List[float]:
        return HashEmbedder(self.dim).embed_query(query)

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> List[float]:
        return HashEmbedder(self.dim).embed(text)

    def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return HashEmbedder(self.dim).embed_documents(texts)
