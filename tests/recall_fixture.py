"""One fixed query set for every store searcher of the recall protocol
(``poolsplit_adapters.stores.recall_protocol.RecallSearcher``): a small
memory, an embedding whose cosines can be worked out by hand, the plan's
kinds of searches (a pool's types, the untyped side search, any type), and
each search's exact ranking with its cosine.

The embedding counts six words, so every score below is a cosine of two
small integer vectors; the texts are chosen so that no two hits of one
search tie, and no hit ties with the first one a search leaves out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from poolsplit_adapters.recall import Search

VOCAB = ("deploy", "staging", "refund", "cents", "invoice", "retry")
#: The counts, then zeros (no cosine changes): the width of the other
#: Postgres tests' vectors, since ``PGVector`` makes its table class once a
#: process, as wide as the first store it saw.
DIMS = 256
#: The namespace searched: LangGraph's tuple, and its label on an entry.
NAMESPACE = ("memories", "u1")
LABEL = "memories.u1"

#: (id, text, type or None, namespace label). ``o1`` is another user's:
#: the nearest of all to the first query, and never a hit.
MEMORY: List[Tuple[str, str, Optional[str], str]] = [
    ("f1", "deploy staging deploy", "fact", LABEL),
    ("f2", "deploy refund", "fact", LABEL),
    ("f3", "refund cents invoice", "fact", LABEL),
    ("s1", "retry deploy staging staging", "skill", LABEL),
    ("s2", "invoice retry cents", "skill", LABEL),
    ("n1", "staging retry refund retry", None, LABEL),
    ("n2", "cents", None, LABEL),
    ("o1", "deploy staging", "fact", "memories.u2"),
]

#: The plan's kinds of searches, one of each, all of one namespace.
SEARCHES = [
    Search("pool:facts", 3, types=("fact",), namespaces=(LABEL,), pool="facts"),
    Search("pool:skills", 2, types=("skill",), namespaces=(LABEL,), pool="skills"),
    Search("pool:notes:untyped", 2, untyped=True, namespaces=(LABEL,), pool="notes"),
    Search("pool:all", 4, namespaces=(LABEL,), pool="all"),
]

#: query -> each search's hits, best first, as (id, cosine); by hand:
#: "deploy staging" is (1,1,0,0,0,0), f1 (2,1,0,0,0,0): 3/sqrt(10), ...
EXPECTED: Dict[str, List[List[Tuple[str, float]]]] = {
    "deploy staging": [
        [("f1", 3 / math.sqrt(10)), ("f2", 1 / 2), ("f3", 0.0)],
        [("s1", 3 / math.sqrt(12)), ("s2", 0.0)],
        [("n1", 1 / math.sqrt(12)), ("n2", 0.0)],
        [("f1", 3 / math.sqrt(10)), ("s1", 3 / math.sqrt(12)), ("f2", 1 / 2), ("n1", 1 / math.sqrt(12))],
    ],
    "refund cents": [
        [("f3", 2 / math.sqrt(6)), ("f2", 1 / 2), ("f1", 0.0)],
        [("s2", 1 / math.sqrt(6)), ("s1", 0.0)],
        [("n2", 1 / math.sqrt(2)), ("n1", 1 / math.sqrt(12))],
        [("f3", 2 / math.sqrt(6)), ("n2", 1 / math.sqrt(2)), ("f2", 1 / 2), ("s2", 1 / math.sqrt(6))],
    ],
}


def counted(text: str) -> List[float]:
    """How often each word of `VOCAB` occurs in ``text`` (padded to `DIMS`)."""
    words = text.lower().split()
    return [float(words.count(word)) for word in VOCAB] + [0.0] * (DIMS - len(VOCAB))


def metadata(kind: Optional[str], namespace: str) -> Dict[str, Any]:
    """A document's or a node's metadata: its namespace, and its type when it has one."""
    return {"namespace": namespace} if kind is None else {"type": kind, "namespace": namespace}


def langchain_embeddings() -> Any:
    """`counted` as LangChain ``Embeddings`` (the class made on first use)."""
    from langchain_core.embeddings import Embeddings

    class CountedWords(Embeddings):
        def embed_documents(self, texts: List[str]) -> List[List[float]]:
            return [counted(t) for t in texts]

        def embed_query(self, text: str) -> List[float]:
            return counted(text)

    return CountedWords()


def llama_index_embedding() -> Any:
    """`counted` as a LlamaIndex ``BaseEmbedding``."""
    from llama_index.core.base.embeddings.base import BaseEmbedding

    class CountedWordsEmbedding(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> List[float]:
            return counted(query)

        async def _aget_query_embedding(self, query: str) -> List[float]:
            return counted(query)

        def _get_text_embedding(self, text: str) -> List[float]:
            return counted(text)

    return CountedWordsEmbedding(model_name="counted-words")


def documents() -> List[Any]:
    """`MEMORY` as LangChain documents."""
    from langchain_core.documents import Document

    return [Document(id=i, page_content=text, metadata=metadata(kind, ns)) for i, text, kind, ns in MEMORY]


def nodes() -> List[Any]:
    """`MEMORY` as LlamaIndex nodes, each embedded from its text alone
    (LlamaIndex would embed its metadata too)."""
    from llama_index.core.schema import TextNode

    return [
        TextNode(id_=i, text=text, metadata=metadata(kind, ns), embedding=counted(text)) for i, text, kind, ns in MEMORY
    ]


def store_items() -> List[Tuple[Tuple[str, ...], str, Dict[str, Any]]]:
    """`MEMORY` as LangGraph store items: (namespace, key, value)."""
    found = []
    for key, text, kind, label in MEMORY:
        value: Dict[str, Any] = {"content": text} if kind is None else {"content": text, "type": kind}
        found.append((tuple(label.split(".")), key, value))
    return found


@dataclass
class Served:
    """A searcher and how a test speaks to it: the query of a text (for the
    sync and the async twins), a hit as (id, score), and the types its store
    says it holds."""

    searcher: Any
    query: Callable[[str], Any]
    aquery: Callable[[str], Any]
    hit: Callable[[Any], Tuple[str, Optional[float]]]
    types: Optional[frozenset] = None


def ranked(served: Served, found: List[List[Any]], digits: int) -> List[List[Tuple[str, float]]]:
    """Each search's hits as (id, score rounded to ``digits``); every hit
    must carry the store's score."""
    hits = [[served.hit(hit) for hit in one] for one in found]
    assert all(score is not None for one in hits for _, score in one), hits
    return [[(key, round(float(score or 0.0), digits)) for key, score in one] for one in hits]


def expected(text: str, digits: int) -> List[List[Tuple[str, float]]]:
    """`EXPECTED` for ``text``, each cosine rounded to ``digits``."""
    return [[(key, round(score, digits)) for key, score in one] for one in EXPECTED[text]]
