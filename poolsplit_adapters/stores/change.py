"""One atomic write as every store receives it ([`Change`][]), and how a
batch of entries becomes one: checked and stamped ([`prepare_entries`][]),
its repeats settled ([`settle_repeats`][]), reported ([`WriteReport`][]).

A store's ``commit`` reads the stored versions of [`Change.touched`][],
calls [`Change.verify`][] and writes [`Change.rows`][]: the supersede
semantics (a version closes when the next opens, within its namespace,
never in a cycle) are written here once, for every store.
"""

from __future__ import annotations

import datetime
import reprlib
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Tuple

from ..memory.changes import batch_updates
from ..memory.duplicates import Duplicate
from ..memory.validity import supersede, valid_from
from ..memory.write_gate import check_write, utc_stamp
from ..poolsplit import as_utc, check_entry, entry_error
from .checks import stored_copy
from .repeats import live, repeated, returned_id, returning, same_text
from .store_errors import DuplicateEntry, EntryNotFound

__all__ = [
    "Change",
    "WriteReport",
    "in_its_namespace",
    "listed",
    "prepare_entries",
    "settle_repeats",
    "superseded",
    "utc_created",
]


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
            ([`record_repeat`][poolsplit_adapters.memory.record_repeat]); if
            the kept entry is gone or no longer active when the change
            applies, the candidate is inserted instead (nothing is lost).
        unchanged: the stored versions the change was derived from (a
            consolidator's plan is read before its model call); each must
            still be stored exactly so, else the change is refused: two
            writers deriving from one version cannot both apply.
        derived_at: the store's ``version`` the change was derived at, or
            None. A store whose commit can tell (``WritePath.commits_at_version``)
            raises ``Overtaken`` when another writer committed since: a write
            reads the store (its repeats, the statements it changes) outside
            the transaction that writes it, so writers at once each stored
            the same note and each left their value of one fact active.

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
    derived_at: Any = field(default=None, compare=False)
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
                if entry["id"] in current and not same_text(current[entry["id"]], entry)
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
          as given: the history starts at the new version. So does one
          that only another entry of the write holds, when that entry does
          not name the new version back (`precedes`) and is not its
          predecessor by time (`_reused`): a forgotten
          version's id an unrelated entry got later, as a store's export
          lists it (a closed version there always names its successor).
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
                stored = current.get(walk)
                found = stored if stored is not None else news.get(walk)
                walk = None if found is None else found.get("supersedes")
                if stored is not None and walk not in current:
                    walk = None  # a stored version's link to a forgotten id: the id reused here is no version of it
            before = current.get(old, news.get(old))
            if before is None:
                continue  # a forgotten version: the history starts here
            if old not in current and before.get("superseded_by") != new and _reused(before, entry):
                continue  # a forgotten version's id, given to an unrelated entry of the write: no link
            in_its_namespace(before, entry)
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
                news[new].update(in_its_namespace(by_id[old], news[new]))
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
                new = in_its_namespace(before, opened.get(new_id, news[new_id]))
                closed, opened[new_id] = superseded(before, new)
                if old_id not in current:
                    opened[old_id] = closed
                    continue
            else:
                closed = dict(current[old_id])
                closed["superseded_by"] = new_id
            retired.append(stored_copy(closed)[1])
        inserted: Dict[str, Dict[str, Any]] = {}
        kept: Dict[str, Dict[str, Any]] = {}
        # A version whose predecessor is found nowhere (forgotten) opens when it is written.
        starts = {new for old, new in self.links if old not in current and old not in news}
        for entry in self.insert:
            if entry["id"] in current:  # the same text, already stored: a repeat of it
                self.raced.append(str(entry["id"]))
                kept[entry["id"]] = repeated(kept.get(entry["id"]) or dict(current[entry["id"]]), entry)
            else:
                row = opened.get(entry["id"], entry)
                inserted[entry["id"]] = stored_copy(opened_now(row) if entry["id"] in starts else row)[1]
        for kept_id, candidate in self.repeat:
            if kept_id in inserted:  # repeats an earlier entry of the same write
                inserted[kept_id] = repeated(inserted[kept_id], candidate)
                continue
            target = kept.get(kept_id) or current.get(kept_id)
            if target is None or (not live(target) and kept_id != candidate["id"]):
                if candidate["id"] not in current:
                    inserted.setdefault(candidate["id"], dict(candidate))
                continue
            kept[kept_id] = repeated(dict(target), candidate)
        replaced = [stored_copy(e)[1] for e in self.replace]
        return retired + replaced + [stored_copy(e)[1] for e in kept.values()] + list(inserted.values())


def restated(
    prepared: Sequence[Dict[str, Any]],
    hits: Sequence[Optional[Duplicate]],
    changed: Optional[Sequence[Optional[str]]] = None,
) -> List[Optional[Duplicate]]:
    """``hits`` without the repeats of a version this very write closes
    before them: "db-7", then "db-9", then "db-7" again in one flush is a
    fact that changed and changed back; folded into the first, whose next
    version the second is, the third left "db-9" current. Such an entry is
    written as a version of its own (the one after the statement it
    changes, `batch_updates`), under `returned_id` when it carried the
    closed one's id (a content-derived id). ``prepared``'s dicts are the
    write's own copies: an id is changed in place."""
    if changed is None or all(hit is None for hit in hits):
        return list(hits)
    earlier = batch_updates(prepared, {n for n, hit in enumerate(hits) if hit is not None}, changed)
    closes: Dict[str, int] = {}  # id -> position of the first entry of the write that closes it
    for position, (old, hit) in enumerate(zip(changed, hits)):
        if old is not None and hit is None:
            closes.setdefault(str(old), position)
    for position, before in enumerate(earlier):
        if before is not None:
            closes.setdefault(str(prepared[before]["id"]), position)
    out = list(hits)
    for position, hit in enumerate(hits):
        if hit is not None and closes.get(str(hit.kept["id"]), position) < position:
            out[position] = None
            if str(prepared[position]["id"]) == str(hit.kept["id"]):
                prepared[position]["id"] = returned_id(hit.kept, prepared[position])
    return out


def opened_now(entry: Dict[str, Any]) -> Dict[str, Any]:
    """``entry``, a version whose predecessor is found nowhere (a forgotten
    version), with its ``valid_from`` (its ``created``, when that is a time):
    a store's version always carries one, and an import of the store's
    export tells by it an unrelated entry written later under the forgotten
    id (`_reused`), which it closed into this version before."""
    if entry.get("valid_from") is not None or valid_from(entry) is None:
        return entry
    return dict(entry, valid_from=entry["created"])


def _reused(named: Mapping[str, Any], entry: Mapping[str, Any]) -> bool:
    """Whether ``named``, an entry of the same write that ``entry``'s
    ``supersedes`` names and that does not name ``entry`` back, holds a
    forgotten version's id rather than ``entry``'s predecessor. Only for an
    ``entry`` that carries its ``valid_from`` (a store's version always
    does, so the write is a store's export): there a closed version names
    the successor that closed it, so ``named`` is no predecessor of
    ``entry`` when it names another one, or when it was written no earlier
    than ``entry`` (a predecessor is older than the version that closed it;
    a reused id written in the same second as ``entry``, as a store's clock
    reads a write right after a delete, is no predecessor either). Not by
    position: a hand-written file may list a version before its
    predecessor, and the link holds then; a hand-written file that gives a
    closed version a second successor is refused (a fork)."""
    if entry.get("valid_from") is None:
        return False
    if named.get("superseded_by"):
        return True
    written, opened = valid_from(dict(named, valid_from=None)), valid_from(entry)
    return written is not None and opened is not None and written >= opened


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
    hits = restated(prepared, hits, changed)
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


def in_its_namespace(old: Mapping[str, Any], new: Mapping[str, Any]) -> Mapping[str, Any]:
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


def superseded(old: Mapping[str, Any], new: Mapping[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """[`supersede`][] at the moment
    the new version became valid, or, when that is before the old one
    opened (a new entry written with a back-dated ``created``), at the old
    one's start: a version is never closed before it opened."""
    starts = [t for t in (valid_from(old), valid_from(new)) if t is not None]
    # Both read as the core reads ``created`` (an offset dropped), so the
    # closing time is compared with the old start by one rule.
    return supersede(old, new, at=utc_stamp(max(starts)) if starts else None)


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
    if isinstance(entries, (str, bytes)):  # would iterate as its characters
        raise TypeError(
            "add() takes an iterable of entries (mappings such as {'content': ...}), got %s %s"
            % (type(entries).__name__, reprlib.repr(entries))
        )
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
    link_back(prepared)
    return prepared


def link_back(prepared: Sequence[Dict[str, Any]]) -> None:
    """Name a version's predecessor (``supersedes``) where only that one, of
    the same write and namespace, names it (``superseded_by``: the core
    spec's one link). ``history`` and ``delete`` walk back along
    ``supersedes``: without it, a history written the spec's way read
    ``[new]`` from its newer version, and ``delete(new)`` left the older
    version's text stored."""
    by_id = {str(e["id"]): e for e in prepared}
    named: Dict[str, List[str]] = {}
    for entry in prepared:
        link = entry.get("superseded_by")
        newer = by_id.get(link) if isinstance(link, str) else None
        if newer is not None and newer is not entry and newer.get("namespace") == entry.get("namespace"):
            named.setdefault(str(newer["id"]), []).append(str(entry["id"]))
    for newer_id, older in named.items():
        if len(older) == 1 and by_id[newer_id].get("supersedes") is None:
            by_id[newer_id]["supersedes"] = older[0]


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
