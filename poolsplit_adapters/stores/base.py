"""The long-term store contract every durable memory backend meets.

The SQLite store (:mod:`.sqlite`), the LangGraph store wrapper
(``BaseStoreMemory``), the vector-store memories and LlamaIndex's
``PoolSplitMemoryStore`` all satisfy :class:`MemoryStore`, so a host can move
from the embedded file to a server without touching its agent code, and the
agent middleware takes any of them.

The contract is written in the LangGraph ``BaseStore`` style: a store
implements few primitives (:meth:`StoreVerbs.read` and
:meth:`StoreVerbs.commit`, plus its own ``select`` and ``version``) and
inherits every verb (``add``, ``get``, ``supersede``, ``delete``,
``entries``) from :class:`StoreVerbs`, where each rule is written once:

* **add** checks each entry (the core's ``check_entry``, the write rules of
  :func:`~poolsplit_adapters.memory.write_gate.check_write`, plain JSON),
  assigns ``id`` (a new random one) and ``created`` (now, UTC) when missing,
  never mutates what the caller passed, and refuses an id that is stored
  already (:class:`DuplicateEntry`, naming every such id, so a writer that
  raced another with the same content can count it instead of failing) or
  repeated in the batch: nothing is written then.
* **supersede** (the one semantics): the old entry must exist and must not
  be superseded already (supersede the newer one instead); the new entry
  must have an id of its own. In one write, the old entry gets
  ``superseded_by`` (the new id) and stays for audit, never loading again
  under the default ``is_active``; the new one records ``supersedes`` (the
  old id).
* **delete** forgets an entry for good and, by default, the older versions
  it superseded (they hold earlier wordings of the same memory): it follows
  ``supersedes`` back. False when there was no such entry.

The promise behind every write: **a write that returns is durable (for the
backend's meaning of durable), and a write that fails raises and leaves
nothing half-written** where the backend has transactions. Callers rely on it
to evict from a working set only after ``add`` returned ("recallable
forgetting", not amnesia).
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Protocol, Tuple, runtime_checkable

from ..memory.write_gate import check_write, utc_stamp
from ..poolsplit import EntryError, Pool, Selection, check_entry, entry_error
from .checks import storable_text, stored_copy

__all__ = ["Change", "DuplicateEntry", "EntryNotFound", "MemoryStore", "StoreVerbs", "prepare_entries"]


class EntryNotFound(KeyError):
    """No entry with that id in the store."""

    def __str__(self) -> str:
        return "no entry with id %r in the store" % (self.args[0],)


class DuplicateEntry(EntryError):
    """An ``add`` whose ids are stored already: nothing of the batch was written.

    A typed outcome, not only an error: two writers that check, then add,
    the same content (two threads of one user demoting the same turn) race,
    and the loser's write is a duplicate to count, not a failure. Raised by
    the one check of :meth:`Change.verify` and, where the store can make
    the check atomic with the write, by the store's own unique constraint
    (the SQLite store's ``INSERT``). It is an
    :class:`~poolsplit_adapters.EntryError` naming the first such entry.

    Attributes:
        ids: every id of the batch that was already stored.

    Example::

        try:
            store.add(entries)
        except DuplicateEntry as err:
            store.add([e for e in entries if e["id"] not in err.ids])
    """

    def __init__(self, entry: Mapping[str, Any], index: int, ids: Sequence[str]) -> None:
        named = entry_error(entry, index, "id", "is already in the store (use supersede to replace it)")
        more = [i for i in ids if i != entry.get("id")]
        message = str(named) + ("; so are %s" % ", ".join(map(repr, more)) if more else "")
        super().__init__(message, index=index, entry_id=named.entry_id, field="id", problem=named.problem)
        self.ids: Tuple[str, ...] = tuple(ids)


@runtime_checkable
class MemoryStore(Protocol):
    """A durable store of memory entries that answers pool-split queries.

    Entries are plain dicts (the core's schema). The verbs' semantics are
    the module's (add, supersede, delete above); :class:`StoreVerbs` writes
    them once for every store. ``select`` answers with the core's semantics
    over the current content; ``version`` changes whenever that content
    changes (a cache key).

    Example (any implementation)::

        ids = store.add([{"type": "fact", "content": "Refunds round half-even."}])
        store.select([Pool("facts", 200, 5, ("fact",))], {"message": "refund rounding"})
        assert isinstance(store, MemoryStore)
    """

    def add(self, entries: Iterable[Mapping[str, Any]]) -> List[str]:
        """Store entries in one write; return their ids in order."""
        ...

    def get(self, entry_id: str) -> Optional[Dict[str, Any]]:
        """A copy of the entry with this id (superseded ones too), or None."""
        ...

    def supersede(self, entry_id: str, new_entry: Mapping[str, Any]) -> str:
        """Replace an entry by a new one in one write; return the new id."""
        ...

    def delete(self, entry_id: str) -> bool:
        """Forget an entry (and its older versions) for good; False when there was none."""
        ...

    def entries(self, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Copies of every stored entry (of one namespace when given),
        superseded ones included."""
        ...

    def select(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any) -> Selection:
        """The core's ``select`` over the current content."""
        ...

    @property
    def version(self) -> Any:
        """Changes whenever the content changes (equal values: same content)."""
        ...


@dataclass(frozen=True)
class Change:
    """One atomic write, as every store receives it.

    Attributes:
        insert: new entries, checked and stamped (:func:`prepare_entries`);
            their ids must not be stored yet.
        retire: ``(old id, new id)`` pairs: the old entry must be stored and
            not superseded; it gets ``superseded_by = new id``.
        forget: ids to delete for good.

    A store's :meth:`StoreVerbs.commit` reads the stored versions of
    :attr:`touched` (inside its transaction, where it has one), calls
    :meth:`verify`, then writes :meth:`rows` and deletes :attr:`forget`.

    Example::

        change = Change(insert=(new,), retire=(("old-id", new["id"]),))
        rows = change.rows(change.verify(store.read(change.touched)))
    """

    insert: Tuple[Dict[str, Any], ...] = ()
    retire: Tuple[Tuple[str, str], ...] = ()
    forget: Tuple[str, ...] = ()

    @property
    def touched(self) -> List[str]:
        """The ids whose stored versions :meth:`verify` needs."""
        return [e["id"] for e in self.insert] + [old for old, _ in self.retire]

    def verify(self, stored: Iterable[Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
        """The stored versions by id, once the change is known to apply;
        else the error (nothing written)."""
        current = {str(e["id"]): dict(e) for e in stored}
        self.refuse_stored([n for n, entry in enumerate(self.insert) if entry["id"] in current])
        for old_id, _ in self.retire:
            old = current.get(old_id)
            if old is None:
                raise EntryNotFound(old_id)
            if old.get("superseded_by"):
                raise ValueError(
                    "entry %r is already superseded by %r; supersede that one" % (old_id, old["superseded_by"])
                )
        return current

    def refuse_stored(self, positions: Sequence[int]) -> None:
        """:class:`DuplicateEntry` for the inserted entries at ``positions``
        (found stored already), when there are any."""
        if positions:
            first = positions[0]
            raise DuplicateEntry(self.insert[first], first, [str(self.insert[n]["id"]) for n in positions])

    def rows(self, current: Mapping[str, Mapping[str, Any]]) -> List[Dict[str, Any]]:
        """Every entry to write, as stored: the retired old versions (with
        ``superseded_by``), then the inserted ones."""
        retired = []
        for old_id, new_id in self.retire:
            old = dict(current[old_id])
            old["superseded_by"] = new_id
            retired.append(stored_copy(old)[1])
        return retired + [dict(e) for e in self.insert]


def prepare_entries(
    entries: Iterable[Mapping[str, Any]], stamp: str, extra: Optional[Mapping[str, Any]] = None
) -> List[Dict[str, Any]]:
    """The entries as a store writes them: each checked (the core's
    ``check_entry``, :func:`check_write`, plain JSON), with ``id`` and
    ``created`` assigned when missing and ``extra`` fields set; fresh dicts,
    the caller's untouched. Raises :class:`EntryError` naming the entry
    (position, id) and field; ``TypeError`` for a single mapping."""
    if isinstance(entries, Mapping):
        raise TypeError("add() takes an iterable of entries; wrap a single entry in a list")
    prepared: List[Dict[str, Any]] = []
    seen: set[str] = set()
    for position, entry in enumerate(entries):
        check_entry(entry, position)
        check_write(entry, position)
        copy = dict(entry)
        if copy.get("id") is None:
            copy["id"] = uuid.uuid4().hex
        elif not copy["id"]:
            raise entry_error(entry, position, "id", "must be a non-empty string or missing, got ''")
        if copy.get("created") is None:
            copy["created"] = stamp
        copy.update(extra or {})
        copy = stored_copy(copy, position)[1]
        if copy["id"] in seen:
            raise entry_error(copy, position, "id", "repeats an earlier entry of the same batch")
        seen.add(copy["id"])
        prepared.append(copy)
    return prepared


class StoreVerbs(ABC):
    """Every :class:`MemoryStore` verb, written once over two primitives.

    A store subclasses this and implements :meth:`read` and :meth:`commit`
    (and its own ``select`` and ``version``); ``add``, ``get``,
    ``supersede``, ``delete`` and ``entries`` are thin wrappers here, so
    their rules are the same on every store.

    Example::

        class DictStore(StoreVerbs):
            def __init__(self):
                self.rows = {}
            def read(self, ids=None, namespace=None):
                found = self.rows.values() if ids is None else [self.rows[i] for i in ids if i in self.rows]
                return [dict(e) for e in found if namespace is None or e.get("namespace") == namespace]
            def commit(self, change):
                self.rows.update({e["id"]: e for e in change.rows(change.verify(self.read(change.touched)))})
                for gone in change.forget:
                    self.rows.pop(gone, None)
    """

    # -- the primitives --------------------------------------------------------------

    @abstractmethod
    def read(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Fresh copies of the stored entries with these ids (those found),
        or of every entry (of ``namespace`` when given), in store order."""

    @abstractmethod
    def commit(self, change: Change) -> None:
        """Apply ``change`` in one write: :meth:`Change.verify` against the
        stored versions of its touched ids, then write :meth:`Change.rows`
        and delete :attr:`Change.forget`."""

    def stamp(self) -> str:
        """The ``created`` given to an entry without one (now, UTC)."""
        return utc_stamp()

    # -- the verbs ---------------------------------------------------------------------

    def add(self, entries: Iterable[Mapping[str, Any]]) -> List[str]:
        """Store entries in one write; return their ids (module rules).

        Raises:
            DuplicateEntry: an ``id`` already in the store (an
                ``EntryError`` naming it; ``ids`` holds every such id);
                nothing is written then.
            EntryError: a malformed entry, or an ``id`` repeated in the
                batch (named by position, id and field); nothing is written.
            TypeError: a single mapping instead of an iterable of them.
        """
        change = self.adding(entries)
        if change.insert:
            self.commit(change)
        return [e["id"] for e in change.insert]

    def adding(self, entries: Iterable[Mapping[str, Any]]) -> Change:
        """The :class:`Change` that :meth:`add` commits (async twins reuse it)."""
        return Change(insert=tuple(prepare_entries(entries, self.stamp())))

    def superseding(self, entry_id: str, new_entry: Mapping[str, Any]) -> Change:
        """The :class:`Change` that :meth:`supersede` commits."""
        if isinstance(entry_id, str):
            storable_text(entry_id, "entry id")  # named as the argument, not as the new entry's supersedes
        [copy] = prepare_entries([new_entry], self.stamp(), {"supersedes": entry_id})
        if copy["id"] == entry_id:
            raise entry_error(copy, 0, "id", "must differ from the id it supersedes (give the new entry a new id)")
        return Change(insert=(copy,), retire=((entry_id, copy["id"]),))

    def get(self, entry_id: str) -> Optional[Dict[str, Any]]:
        """A fresh copy of the entry with ``entry_id`` (superseded ones too), or None."""
        found = self.read([entry_id])
        return found[0] if found else None

    def entries(self, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Fresh copies of every stored entry (of ``namespace`` when given),
        superseded ones included, in store order."""
        return self.read(None, namespace)

    def supersede(self, entry_id: str, new_entry: Mapping[str, Any]) -> str:
        """Replace ``entry_id`` by ``new_entry`` in one write; return the new id.

        Raises:
            EntryNotFound: no entry ``entry_id`` (a ``KeyError``).
            ValueError: it was already superseded (supersede the newer one).
            EntryError: ``new_entry`` is malformed, reuses ``entry_id`` or
                another stored id.
        """
        change = self.superseding(entry_id, new_entry)
        self.commit(change)
        return str(change.insert[0]["id"])

    def delete(self, entry_id: str, *, history: bool = True) -> bool:
        """Forget ``entry_id`` for good and, with ``history`` (the default),
        the older versions it superseded; False when there was none."""
        doomed: List[str] = []
        found = self.read([entry_id])
        while found and found[0]["id"] not in doomed:
            doomed.append(found[0]["id"])
            earlier = found[0].get("supersedes")
            found = self.read([earlier]) if history and isinstance(earlier, str) else []
        if not doomed:
            return False
        self.commit(Change(forget=tuple(doomed)))
        return True
