"""The recall plan's searches in LangChain vector-store filter dialects."""

from __future__ import annotations

from typing import Any, Callable, Dict, List

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from ...recall import UNTYPED_DEFAULT, Search

#: ``(search) -> filter`` for one vector store's ``filter=`` argument (None:
#: no filter).
FilterBuilder = Callable[[Search], Any]


def type_filter(store: VectorStore) -> FilterBuilder:
    """The default filter builder for ``store``.

    ``InMemoryVectorStore`` takes a callable, which says everything a
    `Search` asks, including "no ``type``
    metadata" (such documents count as ``"note"``). Other stores get the dict
    form most of them accept (``{"type": {"$in": [...]}}``,
    ``{"scope": "always"}``, ``{"namespace": {"$in": [...]}}``), which has
    no common way to say "missing": there the untyped search of a pool that
    admits ``"note"`` runs without a type condition, so untyped documents
    are found only among that search's ``fetch_k`` nearest of any type. Give
    documents an explicit ``type``, or pass your own ``filter_builder`` for
    a dialect that can say "missing".
    """
    if isinstance(store, InMemoryVectorStore):
        return callable_filter
    return dict_filter


def callable_filter(search: Search) -> Callable[[Document], bool]:
    """A predicate over documents (``InMemoryVectorStore``'s dialect)."""

    def accept(doc: Document) -> bool:
        metadata = doc.metadata
        if search.always and metadata.get("scope") != "always":
            return False
        if search.namespaces and metadata.get("namespace") not in search.namespaces:
            return False
        if search.untyped:
            return "type" not in metadata
        return search.types is None or metadata.get("type", UNTYPED_DEFAULT) in search.types

    return accept


def dict_filter(search: Search) -> Any:
    """The ``{"key": {"$in": [...]}}`` dialect (None when nothing filters)."""
    clauses: List[Dict[str, Any]] = []
    if search.types is not None:
        clauses.append({"type": {"$in": list(search.types)}})
    if search.always:
        clauses.append({"scope": "always"})
    if search.namespaces:
        clauses.append({"namespace": {"$in": list(search.namespaces)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
