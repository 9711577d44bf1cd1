"""LangChain ``Document`` <-> entry: the conversion both LangChain adapters use,
and the provenance-tagged formatter for prompts."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from langchain_core.documents import Document

from .._frameworks import (
    SELECTION_KEY,
    cap_round_robin,
    entry_from,
    omitted_by_pool,
    selection_metadata,
)
from ..poolsplit import Selection
from ..render import marker, omission_line

#: Name of the custom callback event carrying each call's selection report.
SELECTION_EVENT = "poolsplit_selection"


def document_to_entry(document: Document, position: int = 0) -> Dict[str, Any]:
    """The entry for a document: its metadata, ``content`` = page content,
    ``id`` = ``document.id`` (else ``metadata["id"]``).

    Raises:
        EntryError: malformed metadata, naming the document and the field.
    """
    return entry_from(document.page_content, document.metadata, document.id, kind="document", position=position)


class DocumentConverter:
    """Selection over documents, shared by the retriever and the compressor."""

    @staticmethod
    def entries(
        documents: Sequence[Document], *, recalled: bool = False
    ) -> Tuple[List[Dict[str, Any]], Dict[int, Document]]:
        """Entries for ``documents`` and the way back to each document.

        ``recalled``: the documents come from several recalls of one store,
        so the same id seen twice is the same document and is kept once, and
        they are put in id order first (see below).
        """
        entries, source = [], {}
        seen: Set[str] = set()
        if recalled:
            # Recall order is similarity order, which changes with every
            # query; id order keeps corrections (and complete ties) stable.
            documents = sorted(documents, key=lambda d: (d.id is None, d.id or ""))
        for position, doc in enumerate(documents):
            entry = document_to_entry(doc, position)
            key = entry.get("id")
            if recalled and key is not None:
                if key in seen:
                    continue
                seen.add(key)
            entries.append(entry)
            source[id(entry)] = doc
        return entries, source

    @staticmethod
    def to_documents(selection: Selection, k: Optional[int], source: Mapping[int, Document]) -> List[Document]:
        chosen = cap_round_robin(selection, k)
        omitted = omitted_by_pool(selection, chosen)
        out = []
        for c in chosen:
            original = source[id(c.entry)]
            metadata = dict(original.metadata)
            metadata[SELECTION_KEY] = selection_metadata(c, omitted)
            out.append(Document(page_content=original.page_content, metadata=metadata, id=original.id))
        return out


def format_documents(documents: Sequence[Document]) -> str:
    """Render returned documents as cite-able ``<memory id source at pool>``
    markers (content escaped so it cannot forge a marker), for a prompt:
    ``retriever | format_documents | prompt | model``.

    When the documents come from this package's retriever or compressor,
    the text ends with an explicit line saying how many more entries budgets
    (or ``k``) left out, per pool: silent truncation makes a model believe
    that is all there is."""
    blocks = []
    omitted: Mapping[str, int] = {}
    for doc in documents:
        entry = dict(doc.metadata)
        entry["content"] = doc.page_content
        if doc.id:
            entry["id"] = doc.id
        chosen = doc.metadata.get(SELECTION_KEY) or {}
        omitted = chosen.get("omitted") or omitted
        blocks.append(marker(entry, chosen.get("pool")))
    line = omission_line(omitted, "by budget or k")
    return "\n".join(blocks + ([line] if line else []))
