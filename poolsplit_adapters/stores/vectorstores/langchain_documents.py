"""A LangChain ``Document`` <-> an entry, as the vector-store engines read
and write it (the adapters convert with the same functions: `documents`
re-exports them)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

from langchain_core.documents import Document

from ...convert import entry_from, stored_parts
from ...errors import ArgumentError
from ...poolsplit import check_entry

__all__ = ["checked_document", "checked_list", "document_label", "document_to_entry", "entry_to_document"]


def document_label(document: Any, position: int) -> str:
    doc_id = getattr(document, "id", None)
    return "document %r" % doc_id if isinstance(doc_id, str) and doc_id else "document at position %d" % position


def checked_document(document: Any, position: int) -> Document:
    """The one rule for a document every LangChain adapter takes: a
    ``Document``, else an error naming its position and what was found (an
    `ArgumentError`, so a ``TypeError``)."""
    if not isinstance(document, Document):
        hint = " (build a Document(page_content, metadata=...))" if isinstance(document, Mapping) else ""
        raise ArgumentError(
            "documents[%d] must be a langchain_core Document, got %s%s" % (position, type(document).__name__, hint)
        )
    return document


def checked_list(documents: Any) -> Any:
    """``documents`` when it is a list (or another iterable) of what the
    adapters take, else an error naming ``documents``: one ``Document`` is a
    pydantic model, iterable as its fields (then reported as
    ``documents[0] ... got tuple``), and a string as its characters."""
    if isinstance(documents, (str, bytes, Mapping, Document)) or not isinstance(documents, Iterable):
        raise ArgumentError("documents must be a list of langchain_core Documents, got %s" % type(documents).__name__)
    return documents


def document_to_entry(document: Document, position: int = 0) -> dict[str, Any]:
    """The entry for a document: its metadata, ``content`` = page content,
    ``id`` = ``document.id`` (else ``metadata["id"]``).

    Raises:
        EntryError: malformed metadata, naming the document and the field.
        TypeError: ``document`` is not a ``Document``.
    """
    doc = checked_document(document, position)
    return entry_from(doc.page_content, doc.metadata, doc.id, kind="document", position=position)


def entry_to_document(entry: Mapping[str, Any], position: Optional[int] = None) -> Document:
    """The document for an entry: ``content`` as page content, ``id`` as the
    document id, every other field as metadata (the inverse of
    [`document_to_entry`][]).

    Raises:
        EntryError: a malformed entry (the core's `check_entry`, naming it,
            its ``position`` when given, and the field): unchecked, a
            content of None became the text "None", an int id the string
            "5", and a ``type`` of 3 a document no pool's filter recalls.
    """
    check_entry(entry, position)
    text, metadata = stored_parts(entry)  # page_content is what the store embeds
    entry_id = entry.get("id")
    return Document(page_content=text, metadata=metadata, id=None if entry_id is None else str(entry_id))
