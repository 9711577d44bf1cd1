"""The long-term store contract every durable memory backend meets.

The SQLite store (`sqlite`), the LangGraph store wrapper
(``BaseStoreMemory``), the vector-store memories and LlamaIndex's
``PoolSplitMemoryStore`` all satisfy [`MemoryStore`][], so a host can move
from the embedded file to a server without touching its agent code, and the
agent middleware takes any of them.

**One contract.** [`StoreVerbs`][] is the one store contract, written in
the LangGraph ``BaseStore`` style: a store implements a few primitives
(``read``, ``commit``, ``select``, ``version``; their async twins
``aread``, ``acommit``, ``aselect`` default to them: `primitives`) and
inherits every verb, sync and async, each a thin wrapper written once:
``add``/``aadd``, ``write``/``awrite`` (`write_path`), ``get``, ``entries``,
``existing``, ``supersede`` (here), ``delete``, ``history``, ``forget``,
``sweep_expired``, ``consolidate`` (`lifecycle_verbs`). Callers hold a
[`StoreVerbs`][] and call its verbs; nothing asks what kind of store it is.
[`MemoryStore`][] is the public protocol (the verbs alone): a host's own
store that meets it is taken through `ProtocolStore`, the one adapter
from the protocol to the contract. The rules of the verbs:

* **add** checks each entry (the core's ``check_entry``, the write rules of
  `check_write`, plain JSON),
  assigns ``id`` (a new random one) and ``created`` (now, UTC) when missing,
  never mutates what the caller passed, and refuses an id that is stored
  already or repeated in the batch: nothing is written then.
* **supersede** (the one semantics, [`supersede`][]):
  the old entry must exist and must not be superseded already (supersede
  the newer one instead); the new entry must have an id of its own, never a
  stored one ([`Change.versions`][], the one check of every new version;
  back to a closed version's text, by a new sighting, it gets its
  `returned_id`, as a write of that text does). In one
  write, the old entry gets ``superseded_by`` (the new id), ``valid_until``
  (when the new one became valid: its ``valid_from``, else its ``created``)
  and ``closed_source`` (the new one's ``source``), and stays for audit and
  [`history`][poolsplit_adapters.stores.StoreVerbs.history], never loading again under the default
  ``is_active``; the new one records ``supersedes`` (the old id) and
  ``valid_from``.
* An entry **added** with ``supersedes`` (a line of an imported history)
  closes the version it names as ``supersede`` would, by the same check.
* **write** is ``add`` with its report: an entry that repeats a stored
  active one (exact or near, within namespace, type and scope; see
  `duplicates`) is not stored again; the
  kept entry's ``seen`` records the repeat's ``source`` and ``created``,
  and nothing a scorer reads changes.
* **history** returns an entry's version chain with sources and times;
  **forget** (``namespace=``) deletes a subject's every entry and version;
  **sweep_expired** deletes what expired.
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

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Dict, List, Optional, Protocol, Set, runtime_checkable

from ..poolsplit import Pool, Selection
from .change import Change, WriteReport, listed, prepare_entries, settle_repeats, utc_created
from .checks import check_entry_id, check_namespace
from .lifecycle_verbs import LifecycleVerbs
from .repeats import live, returned_id, returning, same_id_repeats, sighting
from .store_errors import DuplicateEntry, EntryNotFound, IdHeldElsewhere
from .write_path import FINDERS, RELINKS

__all__ = [
    "FINDERS",
    "RELINKS",
    "Change",
    "DuplicateEntry",
    "EntryNotFound",
    "IdHeldElsewhere",
    "MemoryStore",
    "StoreVerbs",
    "WriteReport",
    "listed",
    "live",
    "prepare_entries",
    "returned_id",
    "returning",
    "same_id_repeats",
    "settle_repeats",
    "sighting",
    "utc_created",
]


@runtime_checkable
class MemoryStore(Protocol):
    """A durable store of memory entries that answers pool-split queries.

    Entries are plain dicts (the core's schema). The verbs' semantics are
    the module's (add, supersede, delete above); [`StoreVerbs`][] writes
    them once for every store. ``select`` answers with the core's semantics
    over the current content; ``version`` changes whenever that content
    changes (a cache key).

    Example:
        Any implementation:

        ```python
        ids = store.add([{"type": "fact", "content": "Refunds round half-even."}])
        store.select([Pool("facts", 200, 5, ("fact",))], {"message": "refund rounding"})
        assert isinstance(store, MemoryStore)
        ```
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


class StoreVerbs(LifecycleVerbs):
    """The one store contract: every [`MemoryStore`][] verb and its async
    twin, written once over a few primitives.

    A store subclasses this and implements ``read``, ``commit``, ``select``
    and ``version`` (and, with an async API, ``aread``, ``acommit``,
    ``aselect``); every verb is inherited: ``add``, ``write``, ``get``,
    ``entries``, ``existing``, ``supersede``, ``delete``, ``history``,
    ``forget``, ``sweep_expired``, ``consolidate``, and their async twins.
    So their rules are the same on every store.

    Example:
        ```python
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
            def select(self, pools, context=None, **options):
                return select(self.read(), pools, context, **options)
            @property
            def version(self):
                return len(self.rows)
        ```
    """

    @property
    def holder(self) -> StoreVerbs:
        """The store whose commits change the entries this one writes:
        itself, or the durable store a front writes through to (LlamaIndex's
        ``PoolSplitMemoryStore`` over SQLite); what a consolidation of
        stored entries reads and changes."""
        return self

    def add(self, entries: Iterable[Mapping[str, Any]]) -> List[str]:
        """Store entries in one write; return their ids (module rules).

        An entry that repeats a stored one (or an earlier one of the batch)
        is not stored again: its id in the answer is the kept entry's, and
        the kept entry's ``seen`` records the repeat ([`write`][poolsplit_adapters.stores.StoreVerbs.write] says
        which were repeats).

        Raises:
            EntryError: a malformed entry, or an ``id`` already in the store
                or repeated in the batch with other text (named by position,
                id and field); nothing is written then.
            TypeError: a single mapping instead of an iterable of them.
        """
        return self.write(entries).ids

    async def aadd(self, entries: Iterable[Mapping[str, Any]]) -> List[str]:
        """Async [`add`][]."""
        return (await self.awrite(entries)).ids

    def get(self, entry_id: str) -> Optional[Dict[str, Any]]:
        """A fresh copy of the entry with ``entry_id`` (superseded ones too), or None.

        Raises:
            ArgumentError: ``entry_id`` is no id a store can hold (`check_entry_id`).
        """
        found = self.read([check_entry_id(entry_id)])
        return found[0] if found else None

    async def aget(self, entry_id: str) -> Optional[Dict[str, Any]]:
        """Async [`get`][]."""
        found = await self.aread([check_entry_id(entry_id)])
        return found[0] if found else None

    def entries(self, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Fresh copies of every stored entry (of ``namespace`` when given),
        superseded ones included, in store order. A namespace no store can
        hold (NUL, a lone surrogate) is an `ArgumentError` (`check_namespace`)."""
        return self.read(None, check_namespace(namespace))

    async def aentries(self, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Async [`entries`][]."""
        return await self.aread(None, check_namespace(namespace))

    def existing(self, ids: Iterable[str]) -> Set[str]:
        """Which of ``ids`` are stored (one read, not one per id)."""
        return {str(e["id"]) for e in self.read(list(ids))}

    async def aexisting(self, ids: Iterable[str]) -> Set[str]:
        """Async [`existing`][]."""
        return {str(e["id"]) for e in await self.aread(list(ids))}

    def supersede(self, entry_id: str, new_entry: Mapping[str, Any]) -> str:
        """Replace ``entry_id`` by ``new_entry`` in one write; return the new id.

        Raises:
            EntryNotFound: no entry ``entry_id`` (a ``KeyError``).
            ValueError: it was already superseded (supersede the newer one).
            EntryError: ``new_entry`` is malformed, reuses ``entry_id`` or
                another stored id.
        """
        change = self.superseding(entry_id, new_entry)
        change = change.returned(self.read(change.touched))
        self._commit_tracked(change)
        return str(change.insert[0]["id"])

    async def asupersede(self, entry_id: str, new_entry: Mapping[str, Any]) -> str:
        """Async [`supersede`][]."""
        change = self.superseding(entry_id, new_entry)
        change = change.returned(await self.aread(change.touched))
        await self._acommit_tracked(change)
        return str(change.insert[0]["id"])
