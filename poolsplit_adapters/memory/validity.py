"""Updates with validity: a changed fact closes the old version, never deletes it.

When "the staging DB is db-7" becomes "db-9", keeping both active lets the
stale value compete for the same budget (and sometimes win); deleting the old
one loses the answer to "what was it last week?" and the provenance of what
the agent was told. So an update *supersedes*: the old version is closed at
a time and points at its successor, the new one opens at that time and points
back. One semantics for every store, in pure functions over entry dicts (each
returns new dicts and never mutates its input):

    superseded_by  str   (old version) id of the version that replaced it;
                         the core's ``default_is_active`` already drops it
    valid_until    str   (old version) ISO-8601, when it stopped being valid
                         (exclusive)
    closed_source  str   (old version) provenance of the write that closed it
    supersedes     str   (new version) id of the version it replaced
    valid_from     str   (new version) ISO-8601, when it became valid
                         (inclusive; without it, ``created`` is used, read
                         as the core reads it)

The old version keeps every field it had, its own ``source`` and ``created``
included: history shows who said what, and when.

[`retire`][] closes an entry without a successor (``status: "retired"``,
``valid_until``, ``closed_source``). `is_valid_at` / [`as_of`][]
answer "what was valid at time t" and [`valid_at`][] gives the same rule as
an ``is_active`` predicate for the core's ``select``. [`history`][] returns
a version chain oldest to newest with sources and times.

Example:
    >>> from poolsplit_adapters.memory.validity import supersede, as_of, history
    >>> old = {"id": "f1", "content": "staging DB is db-7", "source": "thread:a", "created": "2026-01-01T00:00:00Z"}
    >>> new = {"id": "f2", "content": "staging DB is db-9", "source": "thread:b"}
    >>> old2, new2 = supersede(old, new, at="2026-03-01T00:00:00Z")
    >>> old2["superseded_by"], old2["valid_until"], new2["valid_from"]
    ('f2', '2026-03-01T00:00:00Z', '2026-03-01T00:00:00Z')
    >>> [e["id"] for e in as_of([old2, new2], "2026-02-01T00:00:00Z")]
    ['f1']
    >>> [(v.id, v.source) for v in history([new2, old2], "f2")]
    [('f1', 'thread:a'), ('f2', 'thread:b')]
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..poolsplit import entry_error, parse_created
from .expiry import Moment, entry_time, is_expired, moment_of
from .write_gate import utc_stamp

__all__ = [
    "SUPERSEDED_BY",
    "SUPERSEDES",
    "VALID_FROM",
    "VALID_UNTIL",
    "CLOSED_SOURCE",
    "RETIRED",
    "Version",
    "supersede",
    "retire",
    "valid_from",
    "is_valid_at",
    "valid_at",
    "as_of",
    "history",
    "precedes",
]

SUPERSEDED_BY = "superseded_by"
SUPERSEDES = "supersedes"
VALID_FROM = "valid_from"
VALID_UNTIL = "valid_until"
CLOSED_SOURCE = "closed_source"
#: The ``status`` of an entry closed without a successor.
RETIRED = "retired"


def _id_of(entry: Mapping[str, Any], what: str) -> str:
    entry_id = entry.get("id")
    if not isinstance(entry_id, str) or not entry_id:
        raise entry_error(entry, None, "id", "must be a non-empty string (the %s entry is referred to by id)" % what)
    return entry_id


def _closing_time(at: Optional[Moment], entry: Optional[Mapping[str, Any]]) -> str:
    """The ISO-8601 instant a version change happens: ``at``, else when
    ``entry`` (the new version) became valid, else now. A string is kept as
    written once it parses."""
    if at is None and entry is not None and valid_from(entry) is not None:
        start = entry.get(VALID_FROM) or entry.get("created")
        return str(start)
    moment = moment_of(at, "at")
    return at if isinstance(at, str) else utc_stamp(moment)


def check_one_predecessor(new: Mapping[str, Any], old_id: str, index: Optional[int] = None) -> None:
    """Raise [`EntryError`][] when ``new`` names another ``supersedes`` than
    ``old_id``: a version has one predecessor, two would make the history a
    tree (the write path linked it to one; a consolidator's update, or a
    caller's ``supersede(old_id, new)``, must not re-link it to another)."""
    earlier = new.get(SUPERSEDES)
    if earlier is not None and earlier != old_id:
        raise entry_error(
            new, index, SUPERSEDES, "is already %r: a version supersedes one other, not also %r" % (earlier, old_id)
        )


def supersede(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    at: Optional[Moment] = None,
    source: Optional[str] = None,
) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """``(closed old, opened new)``: new copies of both versions.

    ``at`` is the instant of the change (default: the new entry's ``valid_from``,
    else its ``created``, else now); ``source`` is the provenance of the
    change (default: the new entry's ``source``). A ``valid_from`` the new
    entry already has is kept.

    Raises:
        EntryError: either entry has no string id, both have the same id, the
            new one already supersedes another version, the old one is
            already superseded or retired (supersede the newest
            version instead: a fork would leave two "current" versions), or
            ``at`` would close the old version before it opened.
    """
    old_id, new_id = _id_of(old, "old"), _id_of(new, "new")
    if old_id == new_id:
        raise entry_error(new, None, "id", "must differ from the id it supersedes (%r)" % old_id)
    if old.get(SUPERSEDED_BY):
        raise entry_error(
            old, None, SUPERSEDED_BY, "is already set (%r): supersede the newest version" % old[SUPERSEDED_BY]
        )
    if old.get(VALID_UNTIL) is not None or old.get("status", "active") == RETIRED:
        raise entry_error(old, None, VALID_UNTIL, "is already set: the entry was closed (retired) before")
    check_one_predecessor(new, old_id)
    when = _closing_time(at, new)
    _check_order(old, when)
    closed = dict(old)
    closed[SUPERSEDED_BY] = new_id
    closed[VALID_UNTIL] = when
    change_source = source if source is not None else new.get("source")
    if change_source is not None:
        closed[CLOSED_SOURCE] = change_source
    opened = dict(new)
    opened[SUPERSEDES] = old_id
    opened.setdefault(VALID_FROM, when)
    return closed, opened


def retire(entry: Mapping[str, Any], *, at: Optional[Moment] = None, source: Optional[str] = None) -> Dict[str, Any]:
    """A closed copy of ``entry`` with no successor: ``status: "retired"``,
    ``valid_until`` (``at``, default now) and ``closed_source``.

    Raises:
        EntryError: it is already superseded or closed, or ``at`` is before it
            became valid.
    """
    if entry.get(SUPERSEDED_BY):
        raise entry_error(
            entry, None, SUPERSEDED_BY, "is already set (%r): retire the newest version" % entry[SUPERSEDED_BY]
        )
    if entry.get(VALID_UNTIL) is not None:
        raise entry_error(entry, None, VALID_UNTIL, "is already set: the entry was closed before")
    when = _closing_time(at, None)
    _check_order(entry, when)
    closed = dict(entry)
    closed["status"] = RETIRED
    closed[VALID_UNTIL] = when
    if source is not None:
        closed[CLOSED_SOURCE] = source
    return closed


def _check_order(entry: Mapping[str, Any], when: str) -> None:
    start = valid_from(entry)
    if start is not None and moment_of(when, "at") < start:
        raise entry_error(entry, None, VALID_UNTIL, "would be %s, before the entry became valid" % when)


def valid_from(entry: Mapping[str, Any], index: Optional[int] = None) -> Optional[datetime.datetime]:
    """When ``entry`` became valid (naive UTC): ``valid_from``, else
    ``created`` read exactly as the core reads it
    (`parse_created`: unparseable text is
    no time, never an error), else None (undated).

    Raises:
        EntryError: a malformed ``valid_from`` (a field of this module,
            checked strictly).
    """
    start = entry_time(entry, VALID_FROM, index)
    if start is not None:
        return start
    created = entry.get("created")
    return parse_created(created) if isinstance(created, str) else None


def is_valid_at(entry: Mapping[str, Any], when: Moment, index: Optional[int] = None) -> bool:
    """Whether ``entry`` was valid at ``when``: opened at or before it
    (``valid_from`` or ``created``), not closed by then (``valid_until`` is
    exclusive) and not expired (``expires``).

    The core's time-bound rule (``Visibility(since=..., until=...)``) holds
    here too: an undated contextual entry (no ``valid_from``, no parseable
    ``created``) matches no time, while an undated always-scope correction
    is a standing rule, valid at every time until it is closed. An entry made
    inactive without a closing time (a ``status`` other than active, a
    ``superseded_by`` with no ``valid_until``: written before validity times
    existed) is valid at no time: nothing says when it was.

    Raises:
        EntryError: a malformed ``valid_from``, ``valid_until`` or ``expires``.
    """
    moment = moment_of(when, "when")
    # Every field is read first, so a malformed one fails whatever the time.
    start, end = valid_from(entry, index), entry_time(entry, VALID_UNTIL, index)
    expired = is_expired(entry, moment, index)
    if start is None and entry.get("scope") != "always":
        return False
    if start is not None and moment < start:
        return False
    if end is None and (entry.get(SUPERSEDED_BY) or entry.get("status", "active") != "active"):
        return False
    if end is not None and moment >= end:
        return False
    return not expired


def valid_at(when: Moment) -> Callable[[Mapping[str, Any]], bool]:
    """`is_valid_at` as an ``is_active`` predicate for ``select``:
    select what was valid at ``when``.

    Example:
        ```python
        select(entries, pools, context, is_active=valid_at("2026-02-01T00:00:00Z"))
        ```
    """
    moment = moment_of(when, "when")

    def valid(entry: Mapping[str, Any]) -> bool:
        return is_valid_at(entry, moment)

    return valid


def as_of(entries: Sequence[Mapping[str, Any]], when: Moment) -> List[Mapping[str, Any]]:
    """The entries valid at ``when``, in input order (the same objects)."""
    moment = moment_of(when, "when")
    return [entry for index, entry in enumerate(entries) if is_valid_at(entry, moment, index)]


@dataclass(frozen=True)
class Version:
    """One version in a [`history`][] chain.

    Attributes:
        id: the version's entry id.
        content: its text.
        source: its provenance (who wrote it), or None.
        valid_from: when it became valid (ISO-8601 as stored: ``valid_from``,
            else ``created``), or None.
        valid_until: when it stopped being valid, or None (current, or closed
            without a time).
        closed_source: provenance of the write that closed it, or None.
        entry: the entry itself.

    Example:
        >>> v = history([{"id": "a", "content": "x", "source": "cli"}], "a")[0]
        >>> v.id, v.source, v.valid_until
        ('a', 'cli', None)
    """

    id: str
    content: str
    source: Optional[str]
    valid_from: Optional[str]
    valid_until: Optional[str]
    closed_source: Optional[str]
    entry: Mapping[str, Any]


def _version(entry: Mapping[str, Any]) -> Version:
    start = entry.get(VALID_FROM) or entry.get("created")
    return Version(
        id=str(entry["id"]),
        content=str(entry.get("content", "")),
        source=entry.get("source") if isinstance(entry.get("source"), str) else None,
        valid_from=start if isinstance(start, str) else None,
        valid_until=entry.get(VALID_UNTIL) if isinstance(entry.get(VALID_UNTIL), str) else None,
        closed_source=entry.get(CLOSED_SOURCE) if isinstance(entry.get(CLOSED_SOURCE), str) else None,
        entry=entry,
    )


def precedes(older: Mapping[str, Any], newer: Mapping[str, Any]) -> bool:
    """Whether ``older`` is the version before ``newer``: it names ``newer``
    as its successor, in ``newer``'s namespace. The one rule of every walk
    along a history (`history`, a store's ``delete`` and expiry sweep): a
    ``supersedes`` the older does not return was left by a forgotten
    version whose id an unrelated entry (perhaps another tenant's) got
    later; it is no link, and the history starts at the newer version."""
    return older.get(SUPERSEDED_BY) == newer.get("id") and older.get("namespace") == newer.get("namespace")


def history(entries: Sequence[Mapping[str, Any]], entry_id: str) -> List[Version]:
    """The version chain that ``entry_id`` belongs to, oldest to newest.

    Links are followed both ways: ``supersedes`` (or, for entries written
    before it existed, the entry whose ``superseded_by`` names this one)
    backwards, ``superseded_by`` forwards, each only where the older
    version names the newer in its namespace (`precedes`). A link to an id
    that is not in ``entries`` ends the chain there (a forgotten version
    leaves no trace).

    Raises:
        UnknownEntryError: no entry has ``entry_id``.
        EntryError: the links form a cycle.
    """
    from .expand import UnknownEntryError

    by_id: Dict[str, Mapping[str, Any]] = {}
    successor_of: Dict[str, str] = {}
    for entry in entries:
        key = entry.get("id")
        if isinstance(key, str) and key not in by_id:
            by_id[key] = entry
    for key, entry in by_id.items():
        nxt = entry.get(SUPERSEDED_BY)
        if isinstance(nxt, str) and nxt in by_id:
            successor_of.setdefault(nxt, key)
    if entry_id not in by_id:
        raise UnknownEntryError(entry_id, len(entries))

    def linked(older: str, newer: str) -> bool:
        back = by_id[newer].get(SUPERSEDES)
        # the newer names it back, or names no stored version (written before ``supersedes`` existed)
        return precedes(by_id[older], by_id[newer]) and (back == older or back not in by_id)

    def previous(key: str) -> Optional[str]:
        back = by_id[key].get(SUPERSEDES)
        if not (isinstance(back, str) and back in by_id):
            back = successor_of.get(key)
        return back if back is not None and linked(back, key) else None

    def following(key: str) -> Optional[str]:
        nxt = by_id[key].get(SUPERSEDED_BY)
        return nxt if isinstance(nxt, str) and nxt in by_id and linked(key, nxt) else None

    first, seen = entry_id, {entry_id}
    while (back := previous(first)) is not None:
        if back in seen:
            raise entry_error(by_id[back], None, SUPERSEDES, "links form a cycle through %r" % back)
        seen.add(back)
        first = back
    chain, seen = [first], {first}
    while (nxt := following(chain[-1])) is not None:
        if nxt in seen:
            raise entry_error(by_id[nxt], None, SUPERSEDED_BY, "links form a cycle through %r" % nxt)
        seen.add(nxt)
        chain.append(nxt)
    return [_version(by_id[key]) for key in chain]
