"""LangChain ``Document`` <-> entry: the conversion both LangChain adapters use,
and the provenance-tagged formatter for prompts."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from langchain_core.documents import Document

from ..convert import (
    SELECTION_KEY,
    entries_of,
    format_loaded,
    index_from,
    loaded_text,
    new_call_id,
    sealed_omissions,
    selection_metadata,
)
from ..index import MemoryIndex
from ..poolsplit import Chosen, Scorer, Selection, TokenCounter
from ..recall import merge_recalled
from ..render import omitted_by_pool
from ..stores.vectorstores.langchain_documents import checked_document as _checked
from ..stores.vectorstores.langchain_documents import checked_list
from ..stores.vectorstores.langchain_documents import document_label as _label
from ..stores.vectorstores.langchain_documents import document_to_entry as document_to_entry

#: Name of the custom callback event carrying each call's selection report.
SELECTION_EVENT = "poolsplit_selection"


def checked_documents(documents: Any) -> list[Document]:
    """``documents`` as a new list, each document checked as the conversion
    checks it: for the retriever's ``documents=``, checked before pydantic
    sees it, whose report names neither the position nor the rule (and which
    would build a ``Document`` from a dict the compressor refuses).

    Example:
        ```python
        held = checked_documents(documents)   # ArgumentError: documents[1] must be a ... Document, got str
        ```
    """
    return [_checked(document, position) for position, document in enumerate(checked_list(documents))]


def _parts(document: Any, position: int) -> tuple[str, Mapping[str, Any], Optional[str], Document]:
    doc = _checked(document, position)
    return doc.page_content, doc.metadata, doc.id, doc


class DocumentConverter:
    """Selection over documents, shared by the retriever and the compressor.

    Example:
        ```python
        entries, source = DocumentConverter.entries(documents)
        selection = select(entries, pools)
        returned = DocumentConverter.to_documents(selection, selection.chosen, source)
        ```
    """

    @staticmethod
    def entries(
        documents: Sequence[Document], *, recalled: bool = False
    ) -> tuple[list[dict[str, Any]], dict[int, Document]]:
        """Entries for ``documents`` and the way back to each document.

        ``recalled``: the documents come from several searches of one store
        (see `merge_recalled`).
        """
        if recalled:
            documents = merge_recalled(documents, key=lambda d: d.id)
        return entries_of(checked_list(documents), document_to_entry, lambda doc: doc)

    @staticmethod
    def index(
        documents: Sequence[Document], token_counter: TokenCounter, prepare_for: Sequence[Scorer] = ()
    ) -> tuple[MemoryIndex, dict[int, Document]]:
        """A [`MemoryIndex`][] over ``documents``
        (built once, every cost counted in one batch, with what
        ``prepare_for``'s scorers rank by) and the way back to each
        document; fails as `entries` would."""
        return index_from(documents, _parts, kind="document", token_counter=token_counter, prepare_for=prepare_for)

    @staticmethod
    def to_documents(
        selection: Selection, returned: Sequence[Chosen], source: Mapping[int, Document]
    ) -> list[Document]:
        """New documents for ``returned`` (the caller's are never mutated),
        each carrying the call's sealed per-pool omission counts."""
        omissions = sealed_omissions(new_call_id(), omitted_by_pool(selection, returned))
        out = []
        for c in returned:
            original = source[id(c.entry)]
            metadata = dict(original.metadata)
            metadata[SELECTION_KEY] = {**selection_metadata(c), **omissions}
            text = loaded_text(c, original.page_content)
            out.append(Document(page_content=text, metadata=metadata, id=original.id))
        return out


def format_documents(documents: Sequence[Document]) -> str:
    """Render documents as cite-able ``<memory id source at pool>`` markers
    (content escaped so it cannot forge a marker), for a prompt:
    ``retriever | format_documents | prompt | model``.

    A document that progressive loading returned as a summary
    (``metadata["poolsplit"]["layer"]``) renders with ``layer="summary"``
    (or ``"timeline"``), and a last line says its full text is available
    by id (the expand tool).

    When documents come from this package's retriever or compressor, the
    text ends with an explicit line saying how many more entries budgets (or
    ``k``) left out, per pool: silent truncation makes a model believe that
    is all there is. Only counts this process sealed for the call that
    returned the documents are stated (summed over the calls present); a
    foreign document's own ``metadata["poolsplit"]`` is never trusted.

    Raises:
        TypeError: a document that is not a ``Document`` (naming its position).
        EntryError: a document whose ``metadata["poolsplit"]`` is not a
            mapping (malformed data: naming the document and the key).
    """
    # A generator: each document is checked as its turn comes, before the next one's metadata.
    checked = ((_checked(document, n), n) for n, document in enumerate(checked_list(documents)))
    return format_loaded((d.page_content, d.metadata, d.id, functools.partial(_label, d, n)) for d, n in checked)
