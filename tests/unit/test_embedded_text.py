"""What a vector store embeds of an entry: its text only
(:func:`~poolsplit_adapters.convert.stored_parts`). A repeat adds to the
kept entry's ``seen`` and must not move its vector: with the metadata
embedded, each repeat changed the kept entry's score."""

from __future__ import annotations

import datetime
from typing import Any, Callable, Dict, List, Tuple

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import MetadataMode
from pydantic import PrivateAttr

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain.vector_memory import VectorStoreMemory
from poolsplit_adapters.llama_index.nodes import nodes_from
from poolsplit_adapters.llama_index.vector_memory import VectorIndexMemory
from poolsplit_adapters.memory.hash_embedding import HashEmbedder

NOW = datetime.datetime(2026, 7, 7, tzinfo=datetime.timezone.utc)
POOLS = [Pool("facts", 200, 5, ("fact",))]
FACT = {"id": "f1", "type": "fact", "content": "Refunds round half-even.", "source": "chat-1"}
REPEAT = {"type": "fact", "content": "Refunds round half-even.", "source": "chat-2"}
QUERY = "how do refunds round"


class RecordedEmbeddings(Embeddings):
    """The hash embedding as LangChain's, noting every text it embeds."""

    def __init__(self) -> None:
        self.inner, self.texts = HashEmbedder(), []  # type: ignore[var-annotated]

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        self.texts.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> List[float]:
        return self.inner.embed_query(text)


class RecordedEmbedding(BaseEmbedding):
    """The hash embedding as LlamaIndex's, noting every text it embeds."""

    _inner: HashEmbedder = PrivateAttr(default_factory=HashEmbedder)
    _texts: List[str] = PrivateAttr(default_factory=list)

    def _get_query_embedding(self, query: str) -> List[float]:
        return self._inner.embed_query(query)

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> List[float]:
        self._texts.append(text)
        return self._inner.embed_documents([text])[0]


def _langchain() -> Tuple[Any, Callable[[], List[str]]]:
    embeddings = RecordedEmbeddings()
    return VectorStoreMemory(InMemoryVectorStore(embeddings)), lambda: embeddings.texts


def _llama_index() -> Tuple[Any, Callable[[], List[str]]]:
    embedding = RecordedEmbedding()
    return VectorIndexMemory(VectorStoreIndex([], embed_model=embedding)), lambda: embedding._texts


MEMORIES: Dict[str, Callable[[], Tuple[Any, Callable[[], List[str]]]]] = {
    "langchain-vectorstore": _langchain,
    "llama-vector-index": _llama_index,
}


def _score(memory: Any) -> float:
    [chosen] = memory.select(POOLS, {"message": QUERY}, now=NOW).chosen
    return float(chosen.score)


@pytest.mark.parametrize("name", list(MEMORIES))
def test_only_the_text_is_embedded_before_and_after_a_repeat(name: str) -> None:
    memory, embedded = MEMORIES[name]()
    assert memory.add([FACT]) == ["f1"]
    assert embedded() == ["Refunds round half-even."]
    before = _score(memory)
    assert memory.write([REPEAT]).to_dict() == {"written": 0, "refused": {"duplicate": 1}}
    assert [s["source"] for s in memory.get("f1")["seen"]] == ["chat-2"]  # recorded on the kept entry
    assert embedded() == ["Refunds round half-even."] * 2  # the kept entry written again: its text only
    assert _score(memory) == before


def test_a_node_made_from_an_entry_embeds_its_text_only() -> None:
    [node] = nodes_from([{**FACT, "seen": [{"source": "chat-2", "at": "2026-07-01T00:00:00+00:00"}]}])
    assert node.get_content(metadata_mode=MetadataMode.EMBED) == "Refunds round half-even."
    assert sorted(node.excluded_embed_metadata_keys) == ["seen", "source", "type"]
    assert node.get_content(metadata_mode=MetadataMode.LLM).startswith("type: fact\nsource: chat-1\nseen: ")
