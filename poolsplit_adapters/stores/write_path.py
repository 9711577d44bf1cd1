"""The write path of the store contract: one write gate for every store.

[`WritePath.write`][] (and its async twin) checks and stamps a batch,
compares it with the stored entries a repeat could be (the store's
duplicate finder), links a statement that changes a stored one as its next
version, and commits one [`Change`][]; a race with another writer that
closed the changed version first is derived again (`RELINKS`), and an
insert another writer stored first with the same text is reported as a
repeat of it. Nothing a caller gave is lost: what is not stored is a
repeat, named in the [`WriteReport`][].
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Awaitable, Callable, Coroutine, Dict, List, Optional, Tuple, TypeVar

from ..memory.changes import CHANGING_TYPES, changing, updates
from ..memory.duplicates import Duplicate, DuplicateFinder, DuplicateKind
from ..memory.validity import check_one_predecessor
from ..poolsplit import EntryError, check_entry, entry_error
from .change import Change, WriteReport, listed, prepare_entries, settle_repeats
from .checks import check_entry_id
from .primitives import StorePrimitives
from .repeats import live, returning, same_id_repeats
from .store_errors import DuplicateEntry, EntryNotFound, Overtaken

__all__ = ["RELINKS", "REDERIVES", "WritePath", "FINDERS"]

#: How many times a write that changes a statement is derived again when
#: another writer closed that statement's version first (then it is linked
#: to the newer version; after the last, it is written unlinked): two
#: processes writing one user's updates left both values active.
RELINKS = 3
#: How many times a write is derived in all, when another writer committed
#: between its derivation and its commit (``Overtaken``); the last is
#: committed as derived, unchecked (nothing lost).
REDERIVES = 12
#: Finders are kept per store and changed by every write: one lock for all
#: (held for index lookups only, never across a store's I/O).
FINDERS = threading.RLock()

#: ``Change.derived_at`` of a derivation that found a statement it changes
#: not stored yet: no version matches it, so it is derived again.
UNSETTLED = object()
#: One derivation of a write: the prepared entries, the change, its report.
Derived = Tuple[List[Dict[str, Any]], Change, WriteReport]


def with_raced(report: WriteReport, change: Change, kept: Sequence[Mapping[str, Any]]) -> WriteReport:
    """``report`` with the inserts another writer had stored first counted as
    repeats of what it stored (exact: the same id and text); ``kept``: the
    stored entries of ``change.raced`` (one read for the batch)."""
    repeated = {position for position, _ in report.duplicates}
    by_id = {str(e["id"]): e for e in kept}
    extra = [
        (position, Duplicate(by_id[entry_id], DuplicateKind.EXACT, 1.0))
        for position, entry_id in enumerate(report.ids)
        if position not in repeated and entry_id in by_id
    ]
    return WriteReport(report.ids, sorted(report.duplicates + extra, key=lambda pair: pair[0]))


_T = TypeVar("_T")


def at_once(run: Coroutine[Any, Any, _T]) -> _T:
    """What ``run`` returns, run without an event loop: the sync ``write``
    (and ``forget``) is the one loop over steps that never suspend."""
    try:
        run.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    run.close()
    raise RuntimeError("a step of a sync write suspended")  # pragma: no cover - its steps are sync


def _named(err: DuplicateEntry, prepared: Sequence[Dict[str, Any]]) -> DuplicateEntry:
    """``err`` naming the entry by its position in what the caller gave."""
    at = next((n for n, e in enumerate(prepared) if e["id"] == err.entry_id), None)
    return err if at is None else type(err)(prepared[at], at, err.ids)


class WritePath(StorePrimitives):
    """The contract's write gate over the primitives (see the module docstring)."""

    #: Whether ``commit`` refuses a change derived at another ``version``
    #: (``Change.derived_at``, raising ``Overtaken``): then a write that
    #: another writer overtook is derived again, up to `REDERIVES` times.
    commits_at_version = False

    def write(self, entries: Iterable[Mapping[str, Any]]) -> WriteReport:
        """[`add`][poolsplit_adapters.stores.StoreVerbs.add], answering what happened to each entry: the one write
        gate of every store. Each entry is checked and stamped
        (`prepare_entries`), then compared with the stored active
        entries of its namespace, type and scope
        ([`DuplicateFinder`][]:
        exact after normalising, near by word overlap at the measured
        threshold); a repeat adds its ``source`` and ``created`` to the kept
        entry's ``seen`` and changes nothing a scorer reads.

        Example:
            ```python
            report = store.write([{"type": "note", "content": "User prefers dark mode."},
                                  {"type": "note", "content": "Note: the user prefers dark mode"}])
            report.to_dict()      # {'written': 1, 'refused': {'duplicate': 1}}
            ```
        """
        with self._one_writer():  # threads sharing this object write one at a time
            return at_once(self._write(listed(entries), self._now))

    def _one_writer(self) -> Any:
        """This object's writer lock: threads sharing one store derive and
        commit one write at a time, so each derivation reads what the one
        before committed (other objects and processes: ``Change.derived_at``)."""
        with FINDERS:
            lock = self.__dict__.get("_writer_lock")
            if lock is None:
                lock = self.__dict__["_writer_lock"] = threading.RLock()
        return lock

    async def awrite(self, entries: Iterable[Mapping[str, Any]]) -> WriteReport:
        """Async [`write`][poolsplit_adapters.stores.StoreVerbs.write]: the same loop over
        [`aderive`][poolsplit_adapters.stores.StoreVerbs.aderive], ``acommit`` and ``aread``."""
        return await self._write(listed(entries), self._later)

    async def _write(self, given: Sequence[Mapping[str, Any]], do: Callable[[str, Any], Awaitable[Any]]) -> WriteReport:
        """The write loop, written once for [`write`][poolsplit_adapters.stores.StoreVerbs.write]
        and ``awrite``: ``do(step, argument)`` runs each step (``"derive"``
        the batch, ``"commit"`` a change, ``"read"`` ids), sync or awaited."""
        relinks = 0
        for attempt in range(1, REDERIVES + 1):
            derived: Derived = await do("derive", given)
            prepared, change, report = derived
            if not (change.insert or change.repeat):
                break
            if attempt == REDERIVES:  # overtaken every time: committed as derived last (nothing lost)
                change = replace(change, derived_at=None)
            try:
                try:
                    await do("commit", change)
                except Overtaken:
                    continue  # another writer committed since this write read the store: derive again
                except (EntryNotFound, ValueError) as raced:
                    if not change.retire or isinstance(raced, EntryError):
                        raise
                    relinks += 1
                    if relinks < RELINKS and attempt < REDERIVES:
                        continue  # another writer closed the version this one changes: link to its newest
                    # still racing: the new statement is written all the same, unlinked (nothing lost)
                    change = replace(change, retire=(), raced=[], derived_at=None)
                    await do("commit", change)
            except DuplicateEntry as err:  # named by its position in what the caller gave
                raise _named(err, prepared) from None
            break
        if not change.raced:
            return report
        return with_raced(report, change, await do("read", list(dict.fromkeys(change.raced))))

    async def _now(self, step: str, argument: Any) -> Any:
        """A step of ``write`` (or ``forget``), through the sync primitives
        (it never suspends): ``"space"`` reads a namespace's entries."""
        if step == "derive":
            return self.derive(argument)
        if step == "commit":
            return self._commit_tracked(argument)
        if step == "space":
            return self.read(None, argument)
        return self.read(argument)

    async def _later(self, step: str, argument: Any) -> Any:
        """A step of ``awrite`` (or ``aforget``), through the async twins."""
        if step == "derive":
            return await self.aderive(argument)
        if step == "commit":
            return await self._acommit_tracked(argument)
        if step == "space":
            return await self.aread(None, argument)
        return await self.aread(argument)

    def derive(self, given: Sequence[Mapping[str, Any]]) -> Derived:
        """One derivation of a write: the entries prepared
        ([`preparing`][]), compared with what they could repeat
        ([`duplicate_finder`][], and an id stored with the same text), the
        statements they change found ([`changed`][]); the change to commit
        and its report."""
        at = self.version if self.commits_at_version else None  # read first: a later commit changes it
        prepared = self.preparing(given)
        stored = self.stored_for(prepared)
        with FINDERS:
            hits = self.duplicate_finder(prepared).admit(prepared)
        hits = same_id_repeats(prepared, hits, stored)
        targets, unsettled = self.changed(prepared, hits)
        change, report = settle_repeats(prepared, hits, targets)
        if at is not None:  # a statement it changes not stored yet: derived before another writer's commit
            change = replace(change, derived_at=UNSETTLED if unsettled else at)
        return prepared, change, report

    async def aderive(self, given: Sequence[Mapping[str, Any]]) -> Derived:
        """Async [`derive`][] (default: the sync one; a store with an async
        API reads through it)."""
        return self.derive(given)

    def changed(
        self, prepared: Sequence[Mapping[str, Any]], hits: Sequence[Optional[Duplicate]]
    ) -> Tuple[List[Optional[str]], bool]:
        """For each prepared entry, the stored statement it changes (its id)
        or None (`updates`, over
        [`change_finder`][]); only statements of a changing type that
        repeat nothing are compared, and only when there are some. And
        whether one it found is not stored and active now (another writer's
        batch, admitted to the kept finder and not committed yet, or closed
        since): a commit at the store's version derives such a write again."""
        repeats = {n for n, hit in enumerate(hits) if hit is not None}
        if not any(changing(e) for n, e in enumerate(prepared) if n not in repeats):
            return [None] * len(prepared), False
        with FINDERS:
            found = updates(self.change_finder(prepared), prepared, repeats)
        # A kept finder also holds what another writer's batch admitted and has
        # not committed yet: only a version stored and active now is changed.
        targets = [t for t in found if t is not None]
        alive = {str(e["id"]) for e in self.read(targets) if live(e)} if targets else set()
        return [t if t in alive else None for t in found], any(t is not None and t not in alive for t in found)

    def change_finder(self, candidates: Sequence[Mapping[str, Any]]) -> DuplicateFinder:
        """The finder whose kept entries a changing statement is compared
        with: [`duplicate_finder`][]'s (every stored active entry); a
        store whose duplicate check holds only what a repeat could be
        overrides it.

        A store that cannot list all its entries (``PGVector``,
        ``PGVectorStore``) reads the namespaces of the changing statements
        exactly instead (``read(namespace=...)``), so the older version of a
        statement is found there too; a changing statement without a
        namespace is compared with the ids it names only."""
        finder = self.duplicate_finder(candidates)
        kept = self._finder
        if kept is not None and kept[1] is finder:
            return finder  # built from every stored entry
        spaces = sorted({str(c["namespace"]) for c in candidates if changing(c) and c.get("namespace") is not None})
        try:
            stored = [e for space in spaces for e in self.read(None, space) if e.get("type") in CHANGING_TYPES]
        except TypeError:  # cannot read a namespace either
            return finder
        for entry in stored:  # this finder is the call's own (not kept): read once more, kept once
            finder.discard(str(entry["id"]))
        finder.extend(stored)
        return finder

    def stored_for(self, prepared: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """What is stored under the ids of ``prepared`` (one read), after
        `returning` gave a returning fact its own id (then its new id
        is read too)."""
        stored = self.read([str(e["id"]) for e in prepared])
        moved = returning(prepared, stored)
        return stored + self.read(moved) if moved else stored

    def preparing(self, entries: Iterable[Mapping[str, Any]]) -> List[Dict[str, Any]]:
        """The entries as [`write`][poolsplit_adapters.stores.StoreVerbs.write] compares them: checked and stamped,
        ids not yet checked for repeats (async twins reuse it)."""
        return prepare_entries(entries, self.stamp(), unique=False)

    def duplicate_finder(self, candidates: Sequence[Mapping[str, Any]]) -> DuplicateFinder:
        """A [`DuplicateFinder`][]
        over the stored active entries ``candidates`` could repeat (called
        under a lock; the finder may be kept and is changed by ``admit``).

        The default keeps one finder per store, built from [`read`][poolsplit_adapters.stores.StoreVerbs.read] once
        and kept in step with this object's own writes; it is rebuilt only
        when [`version`][poolsplit_adapters.stores.StoreVerbs.version] shows a change made elsewhere. So a write costs
        a word-index lookup, not a read of the store. A store that cannot
        list its entries (a vector store without a listing API) is compared
        by id only: an exact repeat with a content-derived id (the write
        gate's) is still found.
        """
        version = self.version
        cached = self._finder
        if cached is not None and cached[0] == version:
            return cached[1]
        try:
            stored = self.read()
        except TypeError:  # cannot list: compare with what the candidates' ids name
            stored = self.read([str(c["id"]) for c in candidates])
            return DuplicateFinder(stored, is_active=live)
        finder = DuplicateFinder(stored, is_active=live)
        self._finder = (version, finder)
        return finder

    def neighbour_finder(self, candidates: Sequence[Mapping[str, Any]]) -> DuplicateFinder:
        """The finder a consolidation reads: [`duplicate_finder`][]'s
        verdicts, and every stored entry [`DuplicateFinder.nearest`][]
         may
        show the model (a store whose duplicate check holds only the entries
        a repeat could be overrides it)."""
        return self.duplicate_finder(candidates)

    def _commit_tracked(self, change: Change) -> None:
        """[`commit`][], then the kept finder brought along when nothing
        else changed the store meanwhile (else it is dropped, and rebuilt
        on the next write)."""
        with FINDERS:
            cached, failed = self._finder, self._failed_commits
        if cached is None:
            self._commit_counted(change)
            return
        before = self.version
        try:
            self._commit_counted(change)
        finally:
            with FINDERS:
                self._finder = None  # until brought along below
        with FINDERS:
            # Another write may have admitted its entries into this finder and
            # failed since it was captured: then it holds entries never stored.
            if cached[0] != before or self._failed_commits != failed:
                return
            finder = cached[1]
            for old_id, _ in change.retire:
                finder.discard(old_id)
            for gone in change.forget:
                finder.discard(gone)
            written = self.read(
                [str(e["id"]) for e in change.insert]
                + [old for old, _ in change.links]  # a predecessor an added version closed
                + [kept for kept, _ in change.repeat]
                + [str(e["id"]) for e in change.replace]  # a closed one is only discarded
            )
            for entry in written:
                finder.replace(entry)
            self._finder = (self.version, finder)

    def adding(self, entries: Iterable[Mapping[str, Any]]) -> Change:
        """The [`Change`][] that [`add`][poolsplit_adapters.stores.StoreVerbs.add] commits (async twins reuse it)."""
        return Change(insert=tuple(prepare_entries(entries, self.stamp())))

    def superseding(self, entry_id: str, new_entry: Mapping[str, Any]) -> Change:
        """The [`Change`][] that [`supersede`][poolsplit_adapters.stores.StoreVerbs.supersede] commits."""
        check_entry_id(entry_id)  # named as the argument, not as the new entry's supersedes
        check_entry(new_entry, 0)  # a mapping, before anything reads a field of it
        check_one_predecessor(new_entry, entry_id, 0)  # its own link is never overwritten without a word
        [copy] = prepare_entries([new_entry], self.stamp(), {"supersedes": entry_id})
        if copy["id"] == entry_id:
            raise entry_error(copy, 0, "id", "must differ from the id it supersedes (give the new entry a new id)")
        # The new version is the one that loads: given closed, the fact would
        # have no active version left (and a ``superseded_by`` naming nothing).
        for key in ("superseded_by", "valid_until"):
            if copy.get(key) is not None:
                raise entry_error(copy, 0, key, "is set: a new version is open (the old one is closed by this call)")
        if copy.get("status", "active") != "active":
            raise entry_error(copy, 0, "status", "is %r: a new version is active" % (copy["status"],))
        return Change(insert=(copy,), retire=((entry_id, copy["id"]),))

    def _commit_counted(self, change: Change) -> None:
        """[`commit`][], a failure counted (see ``_commit_tracked``)."""
        try:
            self.commit(change)
        except BaseException:
            self._commit_failed()
            raise

    def _commit_failed(self) -> None:
        """A commit raised: the kept finder may hold what its write
        admitted; dropped, and the failure counted for writers that
        captured it before."""
        with FINDERS:
            self._failed_commits += 1
            self._finder = None

    async def _acommit_tracked(self, change: Change) -> None:
        """``acommit``; a kept finder is dropped (rebuilt on the next write)."""
        with FINDERS:
            self._finder = None
        try:
            await self.acommit(change)
        except BaseException:
            self._commit_failed()
            raise
