"""Real framework embeddings over the hash embedding that count their calls,
for the tests that check one query embedding per call (not mocks: the
frameworks call them as they call any embedding)."""

from __future__ import annotations

from typing import List

from langchain_core.embeddings import Embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from poolsplit_adapters.memory.hash_embedding import HashEmbedder


class CountingEmbeddings(Embeddings):
    """The hash embedding as a LangChain ``Embeddings`` that counts query embeddings."""

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.queries = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> List[float]:
        self.queries += 1
        return self.inner.embed_query(text)

    async def aembed_query(self, text: str) -> List[float]:
        self.queries += 1
        return self.inner.embed_query(text)


class CountingEmbedding(BaseEmbedding):
    """The hash embedding as a LlamaIndex ``BaseEmbedding`` that counts text
    and query embeddings (``_texts``, ``_queries``)."""

    _inner: HashEmbedder = PrivateAttr(default_factory=HashEmbedder)
    _texts: int = PrivateAttr(default=0)
    _queries: int = PrivateAttr(default=0)

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    def _get_query_embedding(self, query: str) -> List[float]:
        self._queries += 1
        return self._inner.embed_query(query)

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> List[float]:
        self._texts += 1
        return self._inner.embed_documents([text])[0]
