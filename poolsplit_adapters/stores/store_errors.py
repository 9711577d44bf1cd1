"""The errors of the store contract's writes: an id not found, an id
stored already, an id another collection of the database holds.

Each names the entry (and for an id, its position in what the caller gave),
so a host can say which of its entries was refused and why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional, Tuple

from ..poolsplit import EntryError, entry_error

__all__ = ["DuplicateEntry", "EntryNotFound", "IdHeldElsewhere"]


class Overtaken(Exception):
    """A write derived at one version of a store (repeats found, the statements
    it changes) that another writer changed before it committed: nothing was
    written, and the write is derived again (``Change.derived_at``)."""


class EntryNotFound(KeyError):
    """No entry with that id in the store."""

    def __str__(self) -> str:
        return "no entry with id %r in the store" % (self.args[0],)


class DuplicateEntry(EntryError):
    """An ``add`` whose ids are stored already: nothing of the batch was written.

    An id stored with the same text is not this error but a repeat (kept
    once, reported ``duplicate``): two writers of the same content (two
    threads of one user demoting the same turn) race, and the loser's write
    is checked inside its store's write transaction, where it finds the
    winner's row. The same id with other text is a conflict only
    ``supersede`` resolves; this error names the first such entry.

    Attributes:
        ids: every id of the batch that was already stored.

    Example:
        ```python
        try:
            store.add(entries)
        except DuplicateEntry as err:
            store.add([e for e in entries if e["id"] not in err.ids])
        ```
    """

    #: What is wrong with the first such entry's id (a subclass says where it is held).
    PROBLEM = "is already in the store (use supersede to replace it)"

    def __init__(self, entry: Mapping[str, Any], index: Optional[int], ids: Sequence[str]) -> None:
        named = entry_error(entry, index, "id", self.PROBLEM)
        more = [i for i in ids if i != entry.get("id")]
        message = str(named) + ("; so are %s" % ", ".join(map(repr, more)) if more else "")
        super().__init__(message, index=index, entry_id=named.entry_id, field="id", problem=named.problem)
        self.ids: Tuple[str, ...] = tuple(ids)


class IdHeldElsewhere(DuplicateEntry):
    """A write whose ids another collection of the same database holds:
    nothing of the batch was written, and that collection's rows are as
    they were.

    LangChain's ``PGVector`` keeps every collection in one table whose
    primary key is the document id, and its upsert by id overwrites the
    text of a row of *another* collection (the row stays there): one
    tenant's write would silently replace another's memory. So a write
    through [`VectorStoreMemory`][poolsplit_adapters.langchain.vector_memory.VectorStoreMemory] that
    would take such an id is refused instead, and so is one that would take
    the id of another namespace's entry in the same collection (one
    collection serving several tenants: the row would move to the writer's
    namespace, and the other tenant's entry, a correction say, be gone). The message names the id
    only: the other collection's name and content are not this caller's.
    A [`DuplicateEntry`][], so code that handles a stored id handles
    this one too; unlike an id of one's own, ``supersede`` cannot resolve
    it, only an id of the entry's own (or a namespace per collection, for
    the write gate's content-derived ids).
    """

    PROBLEM = (
        "is held by another collection of this database, or another namespace of this one (PGVector "
        "ids are unique per database, not per collection or namespace): give the entry an id of its own"
    )
