"""Deterministic pieces for LangChain tests: a word-hashing embedding (similar
texts get similar vectors, no model download), a token counter that counts
its calls, and a flooded memory."""

from __future__ import annotations

import math
import re
import zlib
from typing import List

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

DIMS = 256


class Counter:
    """A token counter (about 4 characters a token) that counts its calls,
    to show which reads reach the tokenizer."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, text: str) -> int:
        self.calls += 1
        return max(1, len(text) // 4)


class WordHashEmbedding(Embeddings):
    """Bag of words hashed into 256 dimensions, L2-normalised."""

    def _one(self, text: str) -> List[float]:
        vec = [0.0] * DIMS
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            vec[zlib.crc32(word.encode()) % DIMS] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> List[float]:
        return self._one(text)


CORRECTIONS = [
    "Never force-push to the main branch; open a pull request instead.",
    "Run the linter before proposing any diff.",
    "Quote money amounts in integer cents, never floats.",
]


def flooded_memory(notes: int = 300) -> List[Document]:
    """Three corrections, then a flood of fresh, high-priority notes that
    match the demo query far better than the corrections do."""
    docs = [
        Document(
            page_content=text,
            id="fix-%d" % n,
            metadata={
                "type": "correction",
                "scope": "always",
                "created": "2026-03-01T00:00:00Z",
                "source": "user-feedback",
                "base_priority": 1,
            },
        )
        for n, text in enumerate(CORRECTIONS)
    ]
    docs += [
        Document(
            page_content="Deploy log %d: deploy of checkout service to staging finished, deploy checks green." % n,
            id="note-%03d" % n,
            metadata={"type": "note", "created": "2026-07-06T00:00:00Z", "base_priority": 9, "source": "ci"},
        )
        for n in range(notes)
    ]
    docs += [
        Document(
            page_content="Skill: bisect a regression with git bisect run and the failing test.",
            id="skill-bisect",
            metadata={"type": "skill", "created": "2026-05-01T00:00:00Z", "base_priority": 2, "source": "notes"},
        ),
        Document(
            page_content="Growth: ask what done looks like before writing code.",
            id="grow-done",
            metadata={"type": "growth", "created": "2026-04-01T00:00:00Z", "base_priority": 1, "source": "retro"},
        ),
    ]
    return docs


class CountingEmbedding(WordHashEmbedding):
    """WordHashEmbedding that counts query embeddings, sync and async apart
    (``aembed_query`` is overridden, so one call is one count)."""

    def __init__(self) -> None:
        self.sync_queries = 0
        self.async_queries = 0

    def embed_query(self, text: str) -> List[float]:
        self.sync_queries += 1
        return self._one(text)

    async def aembed_query(self, text: str) -> List[float]:
        self.async_queries += 1
        return self._one(text)


def untyped_memory(typed_notes: int = 40) -> List[Document]:
    """Untyped documents (they count as notes) among many typed notes that
    match the query better, so a top-k over typed notes never returns them."""
    docs = [
        Document(page_content="Deploy checkout staging note %d." % n, id="typed-%02d" % n, metadata={"type": "note"})
        for n in range(typed_notes)
    ]
    docs += [
        Document(page_content="An untyped memo about lunch %d." % n, id="untyped-%d" % n, metadata={}) for n in range(2)
    ]
    return docs
