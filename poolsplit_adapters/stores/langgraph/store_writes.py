"""How [`BaseStoreMemory`][poolsplit_adapters.stores.langgraph.store.BaseStoreMemory]
writes a LangGraph store under the store contract: a change as one
``batch`` of puts (verified against the items read just before: a LangGraph
store has no transaction), LangGraph's own ``put`` (overwrite by key), the
duplicate check with the store's own search (the nearest items of a type on
a vector-indexed store, else every item of the type, or the middleware's
kept index), the async derivation of a write, and ``forget``.
"""

import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Dict, List, Optional, Tuple, Union

from langgraph.store.base import GetOp, Item, PutOp, SearchOp

from ...memory.changes import changing, updates
from ...memory.duplicates import DuplicateFinder
from ...poolsplit import (
    entry_error,
)
from ...threads import off_loop
from ..base import (
    Change,
    StoreVerbs,
    WriteReport,
    live,
    prepare_entries,
    returning,
    same_id_repeats,
    settle_repeats,
)
from ..postgres import plain_async_postgres_store
from ..write_path import Derived
from .namespaces import Namespace, check_one, namespace_label
from .store_reads import READ_ALL, StoreReads, items_of
from .write_lock import awriting, writing

__all__ = ["NEAR_K", "StoreWrites"]


#: Value keys that are the item's location, not its content.
_LOCATION_KEYS = ("id", "namespace")

#: On a vector-indexed store, how many nearest items of its type a written
#: entry is compared with for near duplicates.
NEAR_K = 10


class StoreWrites(StoreReads, StoreVerbs):
    """The write half of ``BaseStoreMemory`` (see the module docstring)."""

    _repeats: Optional[Callable[[], Any]] = None  # a weak reference to a kept index (keep_repeats_in)

    def preparing(self, entries: Iterable[Mapping[str, Any]]) -> List[Dict[str, Any]]:
        """[`StoreVerbs.preparing`][], each entry placed in the own namespace
        (an entry without one is written there, and read back with its
        label): so a repeat is compared with stored entries as they read."""
        prepared = super().preparing(entries)
        own = namespace_label(self.namespace)
        return [entry if entry.get("namespace") is not None else dict(entry, namespace=own) for entry in prepared]

    def _item_value(self, entry: Mapping[str, Any], position: int) -> Dict[str, Any]:
        own = namespace_label(self.namespace)
        where = entry.get("namespace")
        if where is not None and where != own:
            raise entry_error(entry, position, "namespace", "is %r but this memory writes to %r" % (where, own))
        return {k: v for k, v in entry.items() if k not in _LOCATION_KEYS}

    def _change_ops(self, change: Change, stored: List[Dict[str, Any]]) -> List[PutOp]:
        for position, entry in enumerate(change.insert):
            self._item_value(entry, position)  # refuse another namespace before anything is checked
        rows = change.rows(change.verify(stored))
        ops = [PutOp(self.namespace, str(e["id"]), self._item_value(e, n)) for n, e in enumerate(rows)]
        gone = {e["id"] for e in stored}
        return ops + [PutOp(self.namespace, i, None) for i in change.forget if i in gone]

    def commit(self, change: Change) -> None:
        """Apply ``change`` in one ``batch`` (verified against the items as
        read just before: a LangGraph store has no transaction to check in),
        the read and the batch one at a time with the namespace's other
        writers (`writing`: else threads superseding one fact at once each
        closed it, every new value active)."""
        with writing(self.store, self.namespace):
            stored = self.read(change.touched + list(change.forget))
            ops = self._change_ops(change, stored)
            if ops:
                self.store.batch(ops)

    async def acommit(self, change: Change) -> None:
        """Async [`commit`][] (`awriting`)."""
        async with awriting(self.store, self.namespace):
            stored = await self.aread(change.touched + list(change.forget))
            ops = self._change_ops(change, stored)
            if ops:
                await self.store.abatch(ops)

    # -- writing ----------------------------------------------------------------------

    def write(self, entries: Iterable[Mapping[str, Any]]) -> WriteReport:
        """[`StoreVerbs.write`][poolsplit_adapters.stores.StoreVerbs.write],
        one at a time with this process's other writers of the own namespace
        (`writing`: the store has no transaction, and two writers
        changing one fact at once left both values active)."""
        with writing(self.store, self.namespace):
            return super().write(entries)

    async def awrite(self, entries: Iterable[Mapping[str, Any]]) -> WriteReport:
        """Async [`write`][], one at a time with the running loop's other
        writers of the own namespace (`awriting`)."""
        async with awriting(self.store, self.namespace):
            return await super().awrite(entries)

    def _put_ops(self, entries: Sequence[Mapping[str, Any]]) -> Tuple[List[PutOp], List[str]]:
        prepared = prepare_entries(entries, self.stamp())
        ops = [PutOp(self.namespace, str(e["id"]), self._item_value(e, n)) for n, e in enumerate(prepared)]
        return ops, [str(e["id"]) for e in prepared]

    def put_many(self, entries: Sequence[Mapping[str, Any]]) -> List[str]:
        """Write ``entries`` to the own namespace in one batch, overwriting
        items with the same key (LangGraph's ``put``); returns their ids
        (``id``, else a new one). Checked first as every write is
        (`prepare_entries`): a malformed
        entry raises [`EntryError`][] and nothing is
        written. The caller's dicts are not changed."""
        ops, ids = self._put_ops(entries)
        if ops:
            self.store.batch(ops)
        return ids

    async def aput_many(self, entries: Sequence[Mapping[str, Any]]) -> List[str]:
        """Async [`put_many`][]."""
        ops, ids = self._put_ops(entries)
        if ops:
            await self.store.abatch(ops)
        return ids

    def put(self, entry: Mapping[str, Any]) -> str:
        """Write one entry (host-curated: always-scope allowed); returns its id."""
        return self.put_many([entry])[0]

    async def aput(self, entry: Mapping[str, Any]) -> str:
        """Async [`put`][]."""
        return (await self.aput_many([entry]))[0]

    # -- duplicates: the one gate, with the store's own search -----------------------

    def _near_ops(self, prepared: Sequence[Mapping[str, Any]]) -> List[Union[GetOp, SearchOp]]:
        """What a write's candidates could repeat, in the own namespace: each
        candidate's id (the write gate's content key finds an exact repeat),
        and its type's items: the ``NEAR_K`` nearest to its text on a
        vector-indexed store, else all of them (one read per type)."""
        ops: List[Union[GetOp, SearchOp]] = [GetOp(self.namespace, str(e["id"])) for e in prepared]
        kinds: List[Optional[str]] = []
        for entry in prepared:
            kind = entry.get("type")
            wanted = [kind] if kind not in (None, "note") else ["note", None]
            if self.indexed:
                for w in wanted:
                    ops.append(SearchOp(self.namespace, filter={"type": w}, query=str(entry["content"]), limit=NEAR_K))
            else:
                kinds += [w for w in wanted if w not in kinds]
        ops += [SearchOp(self.namespace, filter={"type": w}, limit=READ_ALL) for w in kinds]
        return ops

    def _neighbours(self, results: Sequence[Any]) -> DuplicateFinder:
        items: Dict[str, Item] = {}
        for result in results:
            for item in [result] if isinstance(result, Item) else items_of(result):
                if tuple(item.namespace) == self.namespace:
                    items.setdefault(item.key, item)
        ordered = sorted(items.values(), key=lambda item: (item.created_at, item.key))
        return DuplicateFinder([self._entry(item, counted=False) for item in ordered], is_active=live)

    def keep_repeats_in(self, kept: Any) -> None:
        """Answer the duplicate check from ``kept`` (an object whose
        ``repeatable(candidates)`` returns the own namespace's items the
        candidates could repeat, or None to read the store: the agent
        middleware's prepared recall) instead of reading every item of the
        written types. Held weakly: when the kept index is dropped, writes
        read the store again. A vector-indexed store keeps its search."""
        self._repeats = weakref.ref(kept)

    def _kept_repeats(self, candidates: Sequence[Mapping[str, Any]]) -> Optional[List[Item]]:
        kept = None if self._repeats is None or self.indexed else self._repeats()
        return None if kept is None else kept.repeatable(candidates)  # type: ignore[no-any-return]

    def duplicate_finder(self, candidates: Sequence[Mapping[str, Any]]) -> DuplicateFinder:
        """The stored entries ``candidates`` could repeat: from the kept
        index ([`keep_repeats_in`][]) when there is one, else read with
        the store's own search (`_near_ops`)."""
        items = self._kept_repeats(candidates)
        if items is not None:
            return self._neighbours([items])
        ops = self._near_ops(candidates)
        return self._neighbours(self._batch(ops) if ops else [])

    def change_finder(self, candidates: Sequence[Mapping[str, Any]]) -> DuplicateFinder:
        """What a changing statement is compared with: read with the store's
        own search (`_near_ops`, for the changing statements only),
        never the kept index, which holds only what a repeat could be (the
        same values), never a statement's older value."""
        ops = self._near_ops([c for c in candidates if changing(c)])
        return self._neighbours(self._batch(ops) if ops else [])

    def neighbour_finder(self, candidates: Sequence[Mapping[str, Any]]) -> DuplicateFinder:
        """A consolidation's finder: always read with the store's own search
        (the kept index names only what a repeat could be, and the model is
        shown the nearest entries of the type, repeats or not)."""
        ops = self._near_ops(candidates)
        return self._neighbours(self._batch(ops) if ops else [])

    async def aderive(self, entries: Sequence[Mapping[str, Any]]) -> Derived:
        """One derivation of an async write, as
        [`StoreVerbs.derive`][poolsplit_adapters.stores.StoreVerbs.derive] derives it, through
        the store's async API (its kept index, when one is kept, from a
        worker thread for an ``AsyncPostgresStore``)."""
        prepared = self.preparing(entries)
        stored = await self.aread([str(e["id"]) for e in prepared])
        moved = returning(prepared, stored)  # before any finder files them (see stored_for)
        if moved:
            stored += await self.aread(moved)
        if plain_async_postgres_store(self.store) and self._repeats is not None:
            # the kept index's refresh waits on the store's loop: from a worker thread
            items = await off_loop(self._kept_repeats, prepared)
        else:
            items = self._kept_repeats(prepared)
        if items is not None:
            finder = self._neighbours([items])
        else:
            ops = self._near_ops(prepared)
            finder = self._neighbours(await self._abatch(ops) if ops else [])
        hits = finder.admit(prepared)
        hits = same_id_repeats(prepared, hits, stored)
        repeats = {n for n, hit in enumerate(hits) if hit is not None}
        changed = None
        statements = [e for n, e in enumerate(prepared) if n not in repeats and changing(e)]
        if statements:
            ops = self._near_ops(statements)
            changed = updates(self._neighbours(await self._abatch(ops)), prepared, repeats)
        return (prepared, *settle_repeats(prepared, hits, changed))

    def _forget_ops(self, namespace: str) -> Tuple[Namespace, SearchOp]:
        if not isinstance(namespace, str) or not namespace:
            raise ValueError("forget namespace must be a non-empty string, got %r" % (namespace,))
        target = check_one(tuple(namespace.split(".")), "forget namespace")
        return target, SearchOp(target, limit=READ_ALL)

    def forget(self, *, namespace: str) -> int:
        """Delete every item of the namespace labelled ``namespace`` (e.g.
        ``"memories.u1"``: any namespace of the store, exactly, never its
        children) in one batch, their vectors with them; return how many.
        Every version goes (superseded ones are items of the same namespace).
        It holds the namespace's write lock (`writing`), so a write of it
        by another thread or server lands before the read or after the
        delete, never between them (where it survived "forget me").
        """
        target, op = self._forget_ops(namespace)
        with writing(self.store, target):  # a write between the read and the delete would survive it
            [found] = self.store.batch([op])
            keys = [item.key for item in items_of(found) if tuple(item.namespace) == target]
            if keys:
                self.store.batch([PutOp(target, key, None) for key in keys])
        return len(keys)

    async def aforget(self, *, namespace: str) -> int:
        """Async [`forget`][]."""
        target, op = self._forget_ops(namespace)
        async with awriting(self.store, target):
            [found] = await self.store.abatch([op])
            keys = [item.key for item in items_of(found) if tuple(item.namespace) == target]
            if keys:
                await self.store.abatch([PutOp(target, key, None) for key in keys])
        return len(keys)
