"""The long-term store contract every durable memory backend meets.

The SQLite store (`sqlite`), the LangGraph store wrapper
(``BaseStoreMemory``), the vector-store memories and LlamaIndex's
``PoolSplitMemoryStore`` all satisfy [`MemoryStore`][], so a host can move
from the embedded file to a server without touching its agent code, and the
agent middleware takes any of them.

The contract is written in the LangGraph ``BaseStore`` style: a store
implements few primitives ([`StoreVerbs.read`][] and
[`StoreVerbs.commit`][], plus its own ``select`` and ``version``) and
inherits every verb (``add``, ``get``, ``supersede``, ``delete``,
``entries``) from [`StoreVerbs`][], where each rule is written once:

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

import datetime
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Protocol, Tuple, runtime_checkable

from ..memory.changes import CHANGING_TYPES, batch_updates, changing, updates
from ..memory.consolidate import Accepted, ConsolidationResult
from ..memory.consolidate import consolidate as consolidate_entries
from ..memory.duplicates import Duplicate, DuplicateFinder, DuplicateKind, bucket, normalise_text, record_repeat
from ..memory.expiry import Moment, is_expired, moment_of
from ..memory.validity import Version, history, supersede, valid_from
from ..memory.write_gate import check_write, hashed_id, utc_stamp
from ..poolsplit import EntryError, Pool, Selection, as_utc, check_entry, default_is_active, entry_error
from .checks import storable_text, stored_copy

__all__ = [
    "Change",
    "DuplicateEntry",
    "EntryNotFound",
    "IdHeldElsewhere",
    "MemoryStore",
    "StoreVerbs",
    "WriteReport",
    "live",
    "prepare_entries",
    "settle_repeats",
    "sighting",
]


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


@dataclass(frozen=True)
class Change:
    """One atomic write, as every store receives it.

    Attributes:
        insert: new entries, checked and stamped (`prepare_entries`);
            their ids must not be stored yet, except by an entry with the
            same text (an exact duplicate written concurrently: it becomes
            a repeat, so two processes demoting the same turn keep one entry).
        retire: ``(old id, new id)`` pairs: the old entry must be stored and
            not superseded; it gets ``superseded_by = new id``.
        forget: ids to delete for good.
        replace: new versions of stored, active entries (a consolidator's
            retirement or recorded repeat), written as given.
        repeat: ``(kept id, candidate)`` pairs: the candidate repeats the kept
            entry, whose ``seen`` gets the candidate's provenance
            ([`record_repeat`][]); if
            the kept entry is gone or no longer active when the change
            applies, the candidate is inserted instead (nothing is lost).
        unchanged: the stored versions the change was derived from (a
            consolidator's plan is read before its model call); each must
            still be stored exactly so, else the change is refused: two
            writers deriving from one version cannot both apply.

    A store's [`StoreVerbs.commit`][] reads the stored versions of
    [`touched`][] (inside its transaction, where it has one), calls
    [`verify`][], then writes [`rows`][] and deletes `forget`.

    Example:
        ```python
        change = Change(insert=(new,), retire=(("old-id", new["id"]),))
        rows = change.rows(change.verify(store.read(change.touched)))
        ```
    """

    insert: Tuple[Dict[str, Any], ...] = ()
    retire: Tuple[Tuple[str, str], ...] = ()
    forget: Tuple[str, ...] = ()
    repeat: Tuple[Tuple[str, Dict[str, Any]], ...] = ()
    replace: Tuple[Dict[str, Any], ...] = ()
    unchanged: Tuple[Dict[str, Any], ...] = ()
    #: Filled by [`rows`][]: inserted ids found stored with the same text
    #: when the change applied (another writer of the same content got there
    #: first): they became repeats, and [`StoreVerbs.write`][] reports them so.
    raced: List[str] = field(default_factory=list, compare=False)

    @property
    def touched(self) -> List[str]:
        """The ids whose stored versions [`verify`][] needs."""
        return (
            [e["id"] for e in self.insert]
            + [old for old, _ in self.retire]
            + [kept for kept, _ in self.repeat if kept not in {e["id"] for e in self.insert}]
            + [e["id"] for e in self.replace]
            + [e["id"] for e in self.unchanged if e["id"] not in {r["id"] for r in self.replace}]
            + [old for old, _ in self.links if old not in {o for o, _ in self.retire}]
        )

    @property
    def links(self) -> List[Tuple[str, str]]:
        """``(predecessor id, new id)`` of every inserted entry that names the
        version it supersedes (``supersedes``): a supersede's new version, a
        line of an imported history. [`verify`][] checks each
        ([`versions`][])."""
        return [(str(e["supersedes"]), str(e["id"])) for e in self.insert if isinstance(e.get("supersedes"), str)]

    def verify(self, stored: Iterable[Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
        """The stored versions by id, once the change is known to apply;
        else the error (nothing written)."""
        current = {str(e["id"]): dict(e) for e in stored}
        self.refuse_stored(
            [
                n
                for n, entry in enumerate(self.insert)
                if entry["id"] in current and not _same_text(current[entry["id"]], entry)
            ]
        )
        for entry in self.replace:
            found = current.get(entry["id"])
            if found is None:
                raise EntryNotFound(entry["id"])
            if not live(found):
                raise ValueError("entry %r is no longer active; it cannot be changed" % entry["id"])
        for entry in self.unchanged:
            if current.get(entry["id"]) is None:
                raise EntryNotFound(entry["id"])
            if current[entry["id"]] != entry:
                raise ValueError("entry %r changed since it was read; it was not changed again" % entry["id"])
        for old_id, _ in self.retire:
            old = current.get(old_id)
            if old is None:
                raise EntryNotFound(old_id)
            if old.get("superseded_by"):
                raise ValueError(
                    "entry %r is already superseded by %r; supersede that one" % (old_id, old["superseded_by"])
                )
        self.versions(current)
        return current

    def versions(self, current: Mapping[str, Mapping[str, Any]]) -> List[Tuple[str, str]]:
        """The one check of every new version (an inserted entry naming the
        version it supersedes: ``supersede``'s, or a line of an imported
        history added with ``supersedes``) against the stored versions and
        the rest of the write, raising [`EntryError`][] naming the new
        entry and the field; returns ``(old, new)``: the predecessors this
        change closes besides `retire` (as ``supersede`` closes them).

        * A supersede's new version is not stored already (its id would
          close a version into another entry, or into its own history: a
          cycle, and nothing of the fact would load). A closed version's
          text said again by a new sighting has its `returned_id` by
          then, as [`StoreVerbs.write`][] gives it one. An *added* entry
          stored already is a repeat of it and closes nothing.
        * Following ``supersedes`` back from it never reaches it (no cycle).
        * Its predecessor, stored or in the same write, is in its namespace
          (one naming none takes the predecessor's); and is closed by it
          alone: active (then closed now) or already superseded by it (a
          history imported whole); one superseded by another version, or
          named by two new versions of the write, is refused.
        * A predecessor found nowhere (a forgotten version) leaves the link
          as given: the history starts at the new version.
        """
        news = {str(e["id"]): e for e in self.insert}
        retired = dict(self.retire)
        stated = {str(e["id"]) for e in self.replace}  # closed as given (a consolidator's update)
        claimed = dict(retired)
        closes: List[Tuple[str, str]] = []
        for old, new in self.links:
            entry = news[new]
            if new in current:
                if retired.get(old) == new:
                    raise entry_error(
                        entry,
                        None,
                        "id",
                        "is already in the store (%s): a new version needs an id of its own"
                        % ("an active entry" if live(current[new]) else "a closed version"),
                    )
                continue  # an added entry stored already: a repeat, it closes nothing
            walk: Any = old
            walked: set[str] = set()
            while isinstance(walk, str) and walk not in walked:
                if walk == new:
                    raise entry_error(
                        entry,
                        None,
                        "supersedes",
                        "names %r, %s: the versions would form a cycle"
                        % (old, "the entry itself" if old == new else "which follows this entry in its history"),
                    )
                walked.add(walk)
                found = current.get(walk, news.get(walk))
                walk = None if found is None else found.get("supersedes")
            before = current.get(old, news.get(old))
            if before is None:
                continue  # a forgotten version: the history starts here
            _in_its_namespace(before, entry)
            if retired.get(old) == new or old in stated:
                continue
            if claimed.get(old, new) != new:
                raise entry_error(
                    entry, None, "supersedes", "names %r, which %r supersedes in the same write" % (old, claimed[old])
                )
            closer = before.get("superseded_by")
            if closer == new:
                continue  # closed by it already (a history imported whole)
            if closer:
                raise entry_error(
                    entry,
                    None,
                    "supersedes",
                    "names %r, which is already superseded by %r: a new version supersedes the newest" % (old, closer),
                )
            claimed[old] = new
            closes.append((old, new))
        return closes

    def returned(self, stored: Iterable[Mapping[str, Any]]) -> Change:
        """This change with each new entry whose id is a closed version with
        the same text, said again by a new sighting, under its
        `returned_id` (`returning`, the rule of every write), its
        `retire` pairs renamed with it: ``supersede`` back to a closed
        version's text opens a version of its own, as a write of that text
        and a consolidator's update do. ``stored``: the stored versions of
        [`touched`][] (each new entry is compared in the namespace it
        takes from the version it supersedes)."""
        stored = list(stored)
        by_id = {str(e["id"]): e for e in stored}
        news = {str(e["id"]): e for e in self.insert}
        for old, new in self.retire:
            if old in by_id and new in news:
                news[new].update(_in_its_namespace(by_id[old], news[new]))
        given = [str(e["id"]) for e in self.insert]
        if not returning(self.insert, stored):
            return self
        renamed = {old: str(e["id"]) for old, e in zip(given, self.insert)}
        return replace(self, retire=tuple((old, renamed.get(new, new)) for old, new in self.retire))

    def refuse_stored(self, positions: Sequence[int]) -> None:
        """[`DuplicateEntry`][] for the inserted entries at ``positions``
        (found stored already), when there are any."""
        if positions:
            first = positions[0]
            raise DuplicateEntry(self.insert[first], None, [str(self.insert[n]["id"]) for n in positions])

    def rows(self, current: Mapping[str, Mapping[str, Any]]) -> List[Dict[str, Any]]:
        """Every entry to write, as stored: the retired old versions (with
        ``superseded_by``), the kept entries with their repeats recorded,
        then the inserted ones."""
        retired = []
        opened: Dict[str, Dict[str, Any]] = {}
        news = {e["id"]: e for e in self.insert}
        for old_id, new_id in self.retire + tuple(self.versions(current)):
            if new_id in news:
                # The one supersede semantics (validity.supersede): the old
                # version closes when the new one opens, and says who closed it.
                # (An added version's predecessor may be new in this write too.)
                before = current[old_id] if old_id in current else opened.get(old_id, news[old_id])
                new = _in_its_namespace(before, opened.get(new_id, news[new_id]))
                closed, opened[new_id] = _superseded(before, new)
                if old_id not in current:
                    opened[old_id] = closed
                    continue
            else:
                closed = dict(current[old_id])
                closed["superseded_by"] = new_id
            retired.append(stored_copy(closed)[1])
        inserted: Dict[str, Dict[str, Any]] = {}
        kept: Dict[str, Dict[str, Any]] = {}
        for entry in self.insert:
            if entry["id"] in current:  # the same text, already stored: a repeat of it
                self.raced.append(str(entry["id"]))
                kept[entry["id"]] = _repeated(kept.get(entry["id"]) or dict(current[entry["id"]]), entry)
            else:
                inserted[entry["id"]] = stored_copy(opened.get(entry["id"], entry))[1]
        for kept_id, candidate in self.repeat:
            if kept_id in inserted:  # repeats an earlier entry of the same write
                inserted[kept_id] = _repeated(inserted[kept_id], candidate)
                continue
            target = kept.get(kept_id) or current.get(kept_id)
            if target is None or (not live(target) and kept_id != candidate["id"]):
                if candidate["id"] not in current:
                    inserted.setdefault(candidate["id"], dict(candidate))
                continue
            kept[kept_id] = _repeated(dict(target), candidate)
        replaced = [stored_copy(e)[1] for e in self.replace]
        return retired + replaced + [stored_copy(e)[1] for e in kept.values()] + list(inserted.values())


def _with_raced(report: WriteReport, change: Change, store: StoreVerbs) -> WriteReport:
    """``report`` with the inserts another writer had stored first counted as
    repeats of what it stored (exact: the same id and text)."""
    repeated = {position for position, _ in report.duplicates}
    kept = {str(e["id"]): e for e in store.read(list(dict.fromkeys(change.raced)))}  # one read for the batch
    extra = [
        (position, Duplicate(kept[entry_id], DuplicateKind.EXACT, 1.0))
        for position, entry_id in enumerate(report.ids)
        if position not in repeated and entry_id in kept
    ]
    return WriteReport(report.ids, sorted(report.duplicates + extra, key=lambda pair: pair[0]))


def _in_a_history(entry: Mapping[str, Any]) -> bool:
    """Whether ``entry`` is a version of a history (it names the version it
    supersedes or the one that superseded it, e.g. a line of an export).
    Such an entry keeps its own id: folded into another entry with the same
    text, the links to and from its id would point at nothing, and an
    ``import`` of an export would not restore it."""
    return bool(entry.get("supersedes") or entry.get("superseded_by"))


def same_id_repeats(
    prepared: Sequence[Dict[str, Any]], hits: Sequence[Optional[Duplicate]], stored: Iterable[Mapping[str, Any]]
) -> List[Optional[Duplicate]]:
    """``hits``, with an entry whose id is stored already with the same text
    counted as an exact repeat of it: a retried write, a re-import (also of
    an inactive version, which the finder does not match).

    A closed version's text said again by a *new* sighting (another source
    or time) is no repeat: the fact returned after it was superseded or
    retired, and folding it into the closed version would keep it from ever
    loading again; `returning` gave it its own id before the duplicate
    check. A version of a history (`_in_a_history`) is never folded
    into an entry of another id."""
    by_id = {str(e["id"]): e for e in stored}
    out = list(hits)
    for position, (entry, hit) in enumerate(zip(prepared, hits)):
        if hit is not None and _in_a_history(entry) and hit.kept.get("id") != entry["id"]:
            out[position] = hit = None  # a version keeps its id (an export's line, re-imported)
        found = by_id.get(str(entry["id"])) if hit is None else None
        if found is not None and _same_text(found, entry) and (live(found) or _same_sighting(found, entry)):
            out[position] = Duplicate(found, DuplicateKind.EXACT, 1.0)
    return out


def returning(prepared: Sequence[Dict[str, Any]], stored: Iterable[Mapping[str, Any]]) -> List[str]:
    """Give each entry whose id is a closed version with the same text,
    said again by a new sighting, its `returned_id` (in ``prepared``,
    whose dicts are never the caller's), before any duplicate check sees
    it: a finder that kept the entry under the closed id would hold a row
    whose id changed under it. Returns the new ids (for the caller to read:
    a retried return is stored under one)."""
    by_id = {str(e["id"]): e for e in stored}
    moved: List[str] = []
    for entry in prepared:
        found = by_id.get(str(entry["id"]))
        if found is not None and _same_text(found, entry) and not live(found) and not _same_sighting(found, entry):
            entry["id"] = returned_id(found, entry)
            moved.append(entry["id"])
    return moved


def returned_id(closed: Mapping[str, Any], entry: Mapping[str, Any]) -> str:
    """The id of a fact that returned after its version ``closed`` (same
    id, same text) was superseded or retired: derived from that id and the
    new sighting, so a retried write of the return lands on it again."""
    exchange = entry.get("exchange")
    said = (str(exchange),) if exchange is not None else ()  # one second, two exchanges: two returns
    return hashed_id(str(entry.get("type", "note")), (str(closed["id"]), *sighting(entry), *said))


def settle_repeats(
    prepared: Sequence[Dict[str, Any]],
    hits: Sequence[Optional[Duplicate]],
    changed: Optional[Sequence[Optional[str]]] = None,
) -> Tuple[Change, WriteReport]:
    """The change and the report of a write, given each prepared entry's
    match (``DuplicateFinder.admit``): matched entries become repeats of the
    kept ones, the rest are inserted (an id given twice among those is an
    [`EntryError`][]); an inserted entry that changes a stored statement
    (``changed``, `updates`)
    supersedes it."""
    fresh: List[Dict[str, Any]] = []
    repeats: List[Tuple[str, Dict[str, Any]]] = []
    seen: set[str] = set()
    skip = {n for n, hit in enumerate(hits) if hit is not None}
    earlier = batch_updates(prepared, skip, changed) if changed is not None else [None] * len(prepared)
    for position, (entry, hit) in enumerate(zip(prepared, hits)):
        before = earlier[position]
        if before is not None:
            # it changes a statement of this very write: linked as its next version (`Change.versions`)
            entry["supersedes"] = str(prepared[before]["id"])
        if hit is None:
            if entry["id"] in seen:
                raise entry_error(entry, position, "id", "repeats an earlier entry of the same batch")
            seen.add(entry["id"])
            fresh.append(entry)
        else:
            repeats.append((str(hit.kept["id"]), entry))
    report = WriteReport(
        ids=[str(entry["id"] if hit is None else hit.kept["id"]) for entry, hit in zip(prepared, hits)],
        duplicates=[(position, hit) for position, hit in enumerate(hits) if hit is not None],
    )
    retire = tuple(
        (old, str(entry["id"]))
        for entry, hit, old in zip(prepared, hits, changed or [None] * len(prepared))
        if hit is None and old is not None
    )
    return Change(insert=tuple(fresh), repeat=tuple(repeats), retire=retire), report


def _in_its_namespace(old: Mapping[str, Any], new: Mapping[str, Any]) -> Mapping[str, Any]:
    """``new`` as the next version of ``old``: in ``old``'s namespace (taken
    when ``new`` names none). Another namespace is refused: one tenant's
    write would close another tenant's entry, and a ``forget`` of the
    writer's namespace would leave that entry closed by a version that no
    longer exists."""
    place, given = old.get("namespace"), new.get("namespace")
    if given == place:
        return new
    if given is None:
        return dict(new, namespace=place)
    raise entry_error(
        new,
        None,
        "namespace",
        "is %r but the entry it supersedes, %r, is in %r: a version stays in its namespace"
        % (given, old.get("id"), place),
    )


def _superseded(old: Mapping[str, Any], new: Mapping[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """[`supersede`][] at the moment
    the new version became valid, or, when that is before the old one
    opened (a new entry written with a back-dated ``created``), at the old
    one's start: a version is never closed before it opened."""
    starts = [t for t in (valid_from(old), valid_from(new)) if t is not None]
    # Both read as the core reads ``created`` (an offset dropped), so the
    # closing time is compared with the old start by one rule.
    return supersede(old, new, at=utc_stamp(max(starts)) if starts else None)


def live(entry: Mapping[str, Any], now: Optional[Any] = None) -> bool:
    """Whether ``entry`` can be repeated (and so absorb a duplicate): the
    core's ``default_is_active`` and not expired at ``now`` (default: now)."""
    return bool(default_is_active(entry)) and not is_expired(entry, now)


def _same_text(stored: Mapping[str, Any], entry: Mapping[str, Any]) -> bool:
    return (
        bucket(stored) == bucket(entry)
        and isinstance(stored.get("content"), str)
        and normalise_text(str(stored["content"])) == normalise_text(str(entry["content"]))
    )


def sighting(candidate: Mapping[str, Any]) -> Tuple[str, str]:
    """``(source, at)`` of a repeat: the candidate's ``source`` (``"unknown"``
    when it has none) and its ``created`` (stamped on every prepared entry)."""
    source = candidate.get("source")
    at = candidate.get("created")
    return (source if isinstance(source, str) and source else "unknown", str(at) if at else utc_stamp())


def _same_sighting(kept: Mapping[str, Any], candidate: Mapping[str, Any]) -> bool:
    """Whether ``candidate`` is ``kept``'s own first sighting (a retried write,
    a re-import): the same source and time, and the same exchange (a user
    who says again, in the same second or under a fixed ``now``, what a
    later message changed, makes a new sighting, not a retry)."""
    return (
        kept.get("source") == candidate.get("source")
        and kept.get("created") == candidate.get("created")
        and kept.get("exchange") == candidate.get("exchange")
    )


def _repeated(kept: Mapping[str, Any], candidate: Mapping[str, Any]) -> Dict[str, Any]:
    if _same_sighting(kept, candidate):
        return dict(kept)
    source, at = sighting(candidate)
    return record_repeat(kept, source=source, at=at)


def utc_created(created: Any) -> Any:
    """``created`` as stores hold it: UTC. A time with an offset
    (``...T10:00:00-05:00``) is converted (``...T15:00:00Z``): the core
    reads ``created`` with the offset dropped (as UTC), while ``as_of``,
    ``valid_from`` and ``expires`` convert it, so kept as given it loaded
    a version hours before it existed. Anything else is returned as it is.

    Example:
        >>> utc_created("2026-03-01T10:00:00-05:00"), utc_created("2026-03-01T10:00:00Z")
        ('2026-03-01T15:00:00Z', '2026-03-01T10:00:00Z')
    """
    if not isinstance(created, str) or created.endswith(("Z", "z")):
        return created
    try:
        moment = datetime.datetime.fromisoformat(created)
        return created if moment.tzinfo is None else as_utc(moment).isoformat() + "Z"
    except (ValueError, OverflowError):  # not a time, or past year 1..9999 once in UTC: kept as given
        return created


def listed(entries: Iterable[Mapping[str, Any]]) -> List[Mapping[str, Any]]:
    """``entries`` as a list, refusing one entry given alone (a mapping
    would iterate as its keys): the one check of every write path."""
    if isinstance(entries, Mapping):
        raise TypeError("add() takes an iterable of entries; wrap a single entry in a list")
    return list(entries)


def prepare_entries(
    entries: Iterable[Mapping[str, Any]],
    stamp: str,
    extra: Optional[Mapping[str, Any]] = None,
    *,
    unique: bool = True,
) -> List[Dict[str, Any]]:
    """The entries as a store writes them: each checked (the core's
    ``check_entry``, `check_write`, plain JSON), with ``id`` and
    ``created`` assigned when missing and ``extra`` fields set; fresh dicts,
    the caller's untouched. Raises [`EntryError`][] naming the entry
    (position, id) and field; ``TypeError`` for a single mapping.
    ``unique=False`` leaves the check that no id repeats in the batch to the
    caller ([`StoreVerbs.write`][] first folds repeated texts, whose
    content-derived ids are equal, into one entry)."""
    entries = listed(entries)
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
        else:
            copy["created"] = utc_created(copy["created"])
        copy.update(extra or {})
        copy = stored_copy(copy, position)[1]
        if unique and copy["id"] in seen:
            raise entry_error(copy, position, "id", "repeats an earlier entry of the same batch")
        seen.add(copy["id"])
        prepared.append(copy)
    return prepared


#: How many times a write that changes a statement is derived again when
#: another writer closed that statement's version first (then it is linked
#: to the newer version; after the last, it is written unlinked): two
#: processes writing one user's updates left both values active.
RELINKS = 3
#: Finders are kept per store and changed by every write: one lock for all
#: (held for index lookups only, never across a store's I/O).
_FINDERS = threading.RLock()


@dataclass(frozen=True)
class WriteReport:
    """What one [`StoreVerbs.write`][] did.

    Attributes:
        ids: for each entry given, in order, the id it is stored under (the
            kept entry's, for a repeat).
        duplicates: ``(position, match)`` of every entry that repeated a
            kept one (stored or earlier in the batch) and was not stored.

    Example:
        ```python
        report = store.write([{"content": "Hi"}, {"content": "hi "}])
        report.ids[0] == report.ids[1], report.to_dict()   # (True, {'written': 1, 'refused': {'duplicate': 1}})
        ```
    """

    ids: List[str]
    duplicates: List[Tuple[int, Duplicate]]

    @property
    def kept(self) -> List[Optional[str]]:
        """For each entry given, the id of the entry it repeats, or None
        when it was stored (what [`WriteGate.repeated`][poolsplit_adapters.memory.WriteGate.repeated]
         takes)."""
        repeats = {position: str(hit.kept["id"]) for position, hit in self.duplicates}
        return [repeats.get(position) for position in range(len(self.ids))]

    @property
    def written(self) -> List[str]:
        """The ids of the entries stored by this write."""
        repeated = {position for position, _ in self.duplicates}
        return [i for position, i in enumerate(self.ids) if position not in repeated]

    def to_dict(self) -> Dict[str, Any]:
        """The write gate's counts (as [`GateReport`][poolsplit_adapters.memory.GateReport])."""
        refused = {"duplicate": len(self.duplicates)} if self.duplicates else {}
        return {"written": len(self.written), "refused": refused}


class StoreVerbs(ABC):
    """Every [`MemoryStore`][] verb, written once over two primitives.

    A store subclasses this and implements [`read`][] and [`commit`][]
    (and its own ``select`` and ``version``); ``add``, ``get``,
    ``supersede``, ``delete`` and ``entries`` are thin wrappers here, so
    their rules are the same on every store.

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
        ```
    """

    #: (version, finder) of [`duplicate_finder`][], kept between writes.
    _finder: Optional[Tuple[Any, DuplicateFinder]] = None

    # -- the primitives --------------------------------------------------------------

    @abstractmethod
    def read(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Fresh copies of the stored entries with these ids (those found),
        or of every entry (of ``namespace`` when given), in store order."""

    @abstractmethod
    def commit(self, change: Change) -> None:
        """Apply ``change`` in one write: [`Change.verify`][] against the
        stored versions of its touched ids, then write [`Change.rows`][]
        and delete `Change.forget`."""

    @property
    @abstractmethod
    def version(self) -> Any:
        """Changes whenever the content changes (equal values: same content)."""

    def stamp(self) -> str:
        """The ``created`` given to an entry without one (now, UTC)."""
        return utc_stamp()

    @property
    def holder(self) -> StoreVerbs:
        """The store whose commits change the entries this one writes:
        itself, or the durable store a front writes through to (LlamaIndex's
        ``PoolSplitMemoryStore`` over SQLite); what a consolidation of
        stored entries reads and changes."""
        return self

    # -- the verbs ---------------------------------------------------------------------

    def add(self, entries: Iterable[Mapping[str, Any]]) -> List[str]:
        """Store entries in one write; return their ids (module rules).

        An entry that repeats a stored one (or an earlier one of the batch)
        is not stored again: its id in the answer is the kept entry's, and
        the kept entry's ``seen`` records the repeat ([`write`][] says
        which were repeats).

        Raises:
            EntryError: a malformed entry, or an ``id`` already in the store
                or repeated in the batch with other text (named by position,
                id and field); nothing is written then.
            TypeError: a single mapping instead of an iterable of them.
        """
        return self.write(entries).ids

    def write(self, entries: Iterable[Mapping[str, Any]]) -> WriteReport:
        """[`add`][], answering what happened to each entry: the one write
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
        given = listed(entries)
        for attempt in range(1, RELINKS + 1):
            prepared = self.preparing(given)
            stored = self.stored_for(prepared)
            with _FINDERS:
                hits = self.duplicate_finder(prepared).admit(prepared)
            hits = same_id_repeats(prepared, hits, stored)
            change, report = settle_repeats(prepared, hits, self.changed(prepared, hits))
            if change.insert or change.repeat:
                try:
                    try:
                        self._commit_tracked(change)
                    except (EntryNotFound, ValueError) as raced:
                        if not change.retire or isinstance(raced, EntryError):
                            raise
                        if attempt < RELINKS:
                            continue  # another writer closed the version this one changes: link to its newest
                        # still racing: the new statement is written all the same, unlinked (nothing lost)
                        change = replace(change, retire=(), raced=[])
                        self._commit_tracked(change)
                except DuplicateEntry as err:  # named by its position in what the caller gave
                    at = next(n for n, e in enumerate(prepared) if e["id"] == err.entry_id)
                    raise type(err)(prepared[at], at, err.ids) from None
            break
        return _with_raced(report, change, self) if change.raced else report

    def changed(
        self, prepared: Sequence[Mapping[str, Any]], hits: Sequence[Optional[Duplicate]]
    ) -> List[Optional[str]]:
        """For each prepared entry, the stored statement it changes (its id)
        or None (`updates`, over
        [`change_finder`][]); only statements of a changing type that
        repeat nothing are compared, and only when there are some."""
        repeats = {n for n, hit in enumerate(hits) if hit is not None}
        if not any(changing(e) for n, e in enumerate(prepared) if n not in repeats):
            return [None] * len(prepared)
        with _FINDERS:
            found = updates(self.change_finder(prepared), prepared, repeats)
        # A kept finder also holds what another writer's batch admitted and has
        # not committed yet: only a version stored and active now is changed.
        targets = [t for t in found if t is not None]
        alive = {str(e["id"]) for e in self.read(targets) if live(e)} if targets else set()
        return [t if t in alive else None for t in found]

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
        """The entries as [`write`][] compares them: checked and stamped,
        ids not yet checked for repeats (async twins reuse it)."""
        return prepare_entries(entries, self.stamp(), unique=False)

    def consolidate(
        self, entries: Iterable[Mapping[str, Any]], *, model: Any, at: Optional[Moment] = None, nearest: int = 5
    ) -> Tuple[WriteReport, ConsolidationResult]:
        """[`write`][] with the host's model as consolidator: the entries
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
        disposed of is written as [`write`][] would; an operation the
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
        clash = [n for n, e in enumerate(prepared) if e["id"] in stored and not _same_text(stored[e["id"]], e)]
        if clash:
            raise DuplicateEntry(prepared[clash[0]], clash[0], [str(prepared[n]["id"]) for n in clash])
        with _FINDERS:
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

    # -- the duplicates index ------------------------------------------------------------

    def duplicate_finder(self, candidates: Sequence[Mapping[str, Any]]) -> DuplicateFinder:
        """A [`DuplicateFinder`][]
        over the stored active entries ``candidates`` could repeat (called
        under a lock; the finder may be kept and is changed by ``admit``).

        The default keeps one finder per store, built from [`read`][] once
        and kept in step with this object's own writes; it is rebuilt only
        when [`version`][] shows a change made elsewhere. So a write costs
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
        with _FINDERS:
            cached = self._finder
        if cached is None:
            self.commit(change)
            return
        before = self.version
        try:
            self.commit(change)
        finally:
            with _FINDERS:
                self._finder = None  # until brought along below
        with _FINDERS:
            if cached[0] != before:
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
        """The [`Change`][] that [`add`][] commits (async twins reuse it)."""
        return Change(insert=tuple(prepare_entries(entries, self.stamp())))

    def superseding(self, entry_id: str, new_entry: Mapping[str, Any]) -> Change:
        """The [`Change`][] that [`supersede`][] commits."""
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
        change = change.returned(self.read(change.touched))
        self._commit_tracked(change)
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
        self._commit_tracked(Change(forget=tuple(doomed)))
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

        Example:
            ```python
            store.supersede(old_id, {"type": "fact", "content": "staging DB is db-9"})
            [(v.id, v.source, v.valid_until) for v in store.history(old_id)]
            ```
        """
        found: Dict[str, Dict[str, Any]] = {}
        todo = [entry_id]
        while todo:
            batch = [i for i in dict.fromkeys(todo) if i not in found]
            todo = []
            for entry in self.read(batch) if batch else []:
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
        if not isinstance(namespace, str) or not namespace:
            raise ValueError("forget namespace must be a non-empty string, got %r" % (namespace,))
        doomed = [str(e["id"]) for e in self.read(None, namespace)]
        if doomed:
            self._commit_tracked(Change(forget=tuple(doomed)))
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
        stored = {str(e["id"]): e for e in self.read()}
        moment = moment_of(now)
        doomed: List[str] = []
        for entry_id, entry in stored.items():
            if not is_expired(entry, moment):
                continue
            key: Optional[str] = entry_id
            while key is not None and key in stored and key not in doomed:
                doomed.append(key)
                back = stored[key].get("supersedes")
                key = back if isinstance(back, str) else None
        if doomed:
            self._commit_tracked(Change(forget=tuple(doomed)))
        return doomed
