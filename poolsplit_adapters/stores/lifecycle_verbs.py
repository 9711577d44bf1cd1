"""The store contract's verbs of a memory's life after its write:
consolidation, deletion, history, forgetting a subject, expiry.

Each is written once over the primitives and the write path (the async
twins over ``aread`` and ``acommit``), so ``delete`` follows
``supersedes`` back on every store, ``forget`` takes every version of a
subject, and ``sweep_expired`` deletes the older versions with what expired.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

from ..memory.consolidate import Accepted, ConsolidationResult
from ..memory.consolidate import consolidate as consolidate_entries
from ..memory.expiry import Moment, is_expired, moment_of
from ..memory.validity import Version, history, precedes
from ..poolsplit import EntryError
from .change import Change, WriteReport
from .checks import check_entry_id, check_key_label, storable_text
from .repeats import same_text
from .store_errors import DuplicateEntry, EntryNotFound, Overtaken
from .write_path import FINDERS, REDERIVES, WritePath, at_once

__all__ = ["LifecycleVerbs"]


def _forgotten_space(namespace: Any) -> str:
    """``namespace`` as ``forget`` takes it: a non-empty string."""
    if not isinstance(namespace, str) or not namespace:
        raise ValueError("forget namespace must be a non-empty string, got %r" % (namespace,))
    return check_key_label(storable_text(namespace, "forget namespace"), "forget namespace")


class LifecycleVerbs(WritePath):
    """Consolidate, delete, history, forget, expiry (see the module docstring)."""

    def consolidate(
        self, entries: Iterable[Mapping[str, Any]], *, model: Any, at: Optional[Moment] = None, nearest: int = 5
    ) -> Tuple[WriteReport, ConsolidationResult]:
        """[`write`][poolsplit_adapters.stores.StoreVerbs.write] with the host's model as consolidator: the entries
        that repeat nothing (exact or near) are shown to ``model`` beside
        their ``nearest`` active neighbours
        ([`consolidate`][poolsplit_adapters.memory.consolidate.consolidate]: small
        integer handles, every operation validated), and the accepted
        operations are applied: ``add`` writes the entry, ``update``
        supersedes (validity times, history kept), ``retire`` closes an
        entry, ``noop`` records a repeat on the entry it names and stores
        the repeat closed (its text kept as history), or, naming none,
        writes the entry as ``add`` does
        (`op_writes`, the rule
        of the middleware's consolidation too). What no accepted operation
        disposed of is written as [`write`][poolsplit_adapters.stores.StoreVerbs.write] would; an operation the
        store refuses when it applies (the target changed meanwhile) leaves
        its entry to that ordinary write too, and is listed in the result's
        ``failed`` with why. Nothing is lost. An entry whose id is stored
        with other text fails the whole call before any operation applies.

        Example:
            ```python
            report, result = store.consolidate(candidates, model=chat_model)
            result.to_dict()    # {'accepted': {'update': 1}, 'refused': {}, 'unresolved': 0}
            ```
        """
        prepared = self.preparing(entries)
        # An id stored with other text fails the whole write: found before
        # any operation applies, so a failed consolidation changes nothing.
        # (A returning fact has its own id by now: an update of it is no loop.)
        stored = {str(e["id"]): e for e in self.stored_for(prepared)}
        clash = [n for n, e in enumerate(prepared) if e["id"] in stored and not same_text(stored[e["id"]], e)]
        if clash:
            raise DuplicateEntry(prepared[clash[0]], clash[0], [str(prepared[n]["id"]) for n in clash])
        with FINDERS:
            finder = self.neighbour_finder(prepared)
            hits = [finder.find(entry) for entry in prepared]
            shown: Dict[str, Mapping[str, Any]] = {}
            for entry, hit in zip(prepared, hits):
                if hit is None:
                    for neighbour, _ in finder.nearest(entry, nearest):
                        shown.setdefault(str(neighbour["id"]), neighbour)
        fresh = [entry for entry, hit in zip(prepared, hits) if hit is None]
        result = consolidate_entries(
            fresh, [dict(e) for e in shown.values() if e["id"] not in {c["id"] for c in fresh}], model=model, at=at
        )
        left = set(result.unresolved)
        failed: List[Tuple[Accepted, str]] = []
        for op in result.accepted:
            if op.as_given:  # an add, or a noop naming no memory: the ordinary write stores it
                left.add(op.candidate if op.candidate is not None else -1)
                continue
            target = None if op.target is None else op.target["id"]
            change = Change(
                insert=tuple(w for w in op.writes if w["id"] != target),
                replace=tuple(w for w in op.writes if w["id"] == target),
                # derived from the target as shown to the model: applied only
                # while it is stored so (another writer's repeat is never lost)
                unchanged=() if op.target is None else (dict(op.target),),
            )
            try:
                if change.insert or change.replace:
                    self._commit_tracked(change)
            except (EntryError, EntryNotFound, ValueError) as err:
                failed.append((op, "%s: %s" % (type(err).__name__, err)))  # reported, never silent
                if op.candidate is not None:
                    left.add(op.candidate)
        if failed:
            result = replace(result, failed=tuple(failed))
        rest = [fresh[i] for i in sorted(left) if 0 <= i < len(fresh)]
        # The repeats and the unresolved entries take the ordinary path (the
        # report is that write's: what was stored, what repeated).
        ordinary = [e for e, hit in zip(prepared, hits) if hit is not None] + rest
        return (self.write(ordinary) if ordinary else WriteReport([], [])), result

    def delete(self, entry_id: str, *, history: bool = True) -> bool:
        """Forget ``entry_id`` for good and, with ``history`` (the default),
        the older versions it superseded; False when there was none.
        An id no store can hold raises `ArgumentError` (`check_entry_id`)."""
        doomed: List[str] = []
        found = self.read([check_entry_id(entry_id)])
        while found and found[0]["id"] not in doomed:
            doomed.append(found[0]["id"])
            later, earlier = found[0], found[0].get("supersedes")
            found = self.read([earlier]) if history and isinstance(earlier, str) else []
            found = [e for e in found if precedes(e, later)]  # another entry under a forgotten version's id
        if not doomed:
            return False
        self._commit_tracked(Change(forget=tuple(doomed)))
        return True

    async def adelete(self, entry_id: str, *, history: bool = True) -> bool:
        """Async [`delete`][]."""
        doomed: List[str] = []
        found = await self.aread([check_entry_id(entry_id)])
        while found and found[0]["id"] not in doomed:
            doomed.append(found[0]["id"])
            later, earlier = found[0], found[0].get("supersedes")
            found = await self.aread([earlier]) if history and isinstance(earlier, str) else []
            found = [e for e in found if precedes(e, later)]
        if not doomed:
            return False
        await self._acommit_tracked(Change(forget=tuple(doomed)))
        return True

    # -- history, forgetting, expiry -------------------------------------------------

    def history(self, entry_id: str) -> List[Version]:
        """The version chain ``entry_id`` belongs to, oldest to newest, each
        with its source and validity times
        ([`history`][poolsplit_adapters.memory.history], the one
        semantics). Read by id along ``supersedes`` / ``superseded_by``, so it
        works on stores that cannot list their entries.

        Raises:
            UnknownEntryError: no entry ``entry_id`` in the store.
            ArgumentError: ``entry_id`` is no id a store can hold (`check_entry_id`).

        Example:
            ```python
            store.supersede(old_id, {"type": "fact", "content": "staging DB is db-9"})
            [(v.id, v.source, v.valid_until) for v in store.history(old_id)]
            ```
        """
        return at_once(self._history(check_entry_id(entry_id), self._now))

    async def ahistory(self, entry_id: str) -> List[Version]:
        """Async [`history`][]."""
        return await self._history(check_entry_id(entry_id), self._later)

    async def _history(self, entry_id: str, do: Callable[[str, Any], Awaitable[Any]]) -> List[Version]:
        """The version chain's walk, written once for ``history`` and
        ``ahistory`` (``do`` reads ids as the write loop's steps do)."""
        found: Dict[str, Dict[str, Any]] = {}
        todo = [entry_id]
        while todo:
            batch = [i for i in dict.fromkeys(todo) if i not in found]
            todo = []
            for entry in await do("read", batch) if batch else []:
                found[str(entry["id"])] = entry
                for link in (entry.get("supersedes"), entry.get("superseded_by")):
                    if isinstance(link, str) and link not in found:
                        todo.append(link)
        return history(list(found.values()), entry_id)

    def forget(self, *, namespace: str) -> int:
        """Delete every entry of ``namespace`` for good (every version: the
        history goes with them); return how many. What a person asks for
        when they say "forget me": afterwards no read of this store (search,
        recall, ``history``, ``entries``, export) returns any of it.

        Raises:
            ValueError: ``namespace`` is not a non-empty string.
        """
        return at_once(self._forget(_forgotten_space(namespace), self._now))

    async def aforget(self, *, namespace: str) -> int:
        """Async [`forget`][]."""
        return await self._forget(_forgotten_space(namespace), self._later)

    async def _forget(self, space: str, do: Callable[[str, Any], Awaitable[Any]]) -> int:
        """The forget loop, written once for ``forget`` and ``aforget``
        (``do`` as the write loop's). Checked against the version it read
        (``Overtaken``: read again), so an entry another writer adds
        meanwhile is taken too; the last attempt deletes what it read."""
        for attempt in range(1, REDERIVES + 1):
            at = self.version if self.commits_at_version and attempt < REDERIVES else None
            doomed = [str(e["id"]) for e in await do("space", space)]
            try:
                if doomed:
                    await do("commit", Change(forget=tuple(doomed), derived_at=at))
            except Overtaken:
                continue
            break
        return len(doomed)

    def expired(self, now: Optional[Moment] = None) -> List[Dict[str, Any]]:
        """The stored entries whose ``expires`` is at or before ``now``
        (default: now), in store order."""
        moment = moment_of(now)
        return [e for e in self.read() if is_expired(e, moment)]

    def sweep_expired(self, now: Optional[Moment] = None) -> List[str]:
        """Delete the entries expired at ``now`` (default: now) and the older
        versions they superseded, in one write; return their ids.

        Example:
            ```python
            store.sweep_expired()            # what expired is gone
            ```
        """
        doomed = _expired_chains(self.read(), now)
        if doomed:
            self._commit_tracked(Change(forget=tuple(doomed)))
        return doomed

    async def asweep_expired(self, now: Optional[Moment] = None) -> List[str]:
        """Async [`sweep_expired`][]."""
        doomed = _expired_chains(await self.aread(), now)
        if doomed:
            await self._acommit_tracked(Change(forget=tuple(doomed)))
        return doomed


def _expired_chains(entries: List[Dict[str, Any]], now: Optional[Moment]) -> List[str]:
    """The ids a sweep at ``now`` deletes: each expired entry and the older
    versions it superseded (the one rule of ``sweep_expired`` and its twin)."""
    stored = {str(e["id"]): e for e in entries}
    moment = moment_of(now)
    doomed: List[str] = []
    for entry_id, entry in stored.items():
        if not is_expired(entry, moment):
            continue
        key: Optional[str] = entry_id
        while key is not None and key in stored and key not in doomed:
            doomed.append(key)
            back = stored[key].get("supersedes")
            key = back if isinstance(back, str) and back in stored and precedes(stored[back], stored[key]) else None
    return doomed
