"""Expiry: an entry may carry an ``expires`` time, after which it is inactive.

Some memories are true only for a while ("the staging freeze lasts until
Friday", "use the temporary token until the 3rd"). Keeping them forever lets a
stale instruction compete for the budget long after it stopped applying, and
deleting them by hand is the kind of chore nobody does. So an entry may say
when it stops applying:

    expires    str    ISO-8601 time (``2026-12-05T18:00:00Z``, an offset, or a
                      bare date meaning midnight UTC)

From that instant on (inclusive) the entry is expired. An entry without
``expires`` (missing or None) never expires.

Times are compared in UTC: an aware value (``Z`` or ``+02:00``) is converted
to UTC, a naive one is taken as UTC already (the entries' convention). A
malformed ``expires`` (not a string, or not ISO-8601) raises
[`EntryError`][] naming the entry and the
field: guessing would either keep a memory that was meant to go, or hide one
that was meant to stay, and neither would show in any report.

The selector's ``select`` takes an ``is_active`` predicate, so a host can
drop expired entries with the plain core:

```python
select(entries, pools, context, is_active=active_at(now))
```

[`active_at`][] composes with the core's ``default_is_active`` (status and
``superseded_by``), so nothing the default excludes comes back. The core itself
drops an entry expired at the call's ``now`` and reports it ``expired``
(``Reason.EXPIRED``) on every path (the index holds an ``expires`` column);
the stores and adapters also name those ids in ``selection.notes["expired"]``
(sorted). Stores delete expired entries with ``sweep_expired()``
(``poolsplit sweep``).

Example:
    >>> from poolsplit_adapters.memory.expiry import is_expired
    >>> freeze = {"id": "f1", "content": "Deploy freeze on staging", "expires": "2026-12-05T18:00:00Z"}
    >>> is_expired(freeze, "2026-12-05T17:59:59Z"), is_expired(freeze, "2026-12-05T18:00:00Z")
    (False, True)
"""

from __future__ import annotations

import datetime
from typing import Any, Callable, Collection, Mapping, Optional, Union

from ..poolsplit import Reason, Selection, as_utc, default_is_active, parse_time
from ..poolsplit import entry_time as core_entry_time

__all__ = [
    "EXPIRES",
    "Moment",
    "entry_time",
    "to_utc",
    "moment_of",
    "expires_at",
    "is_expired",
    "is_active",
    "active_at",
    "EXPIRED_NOTE",
    "note_expired",
]

#: The key of ``Selection.notes`` that lists the ids of the entries left out
#: because they expired (the core reports them ``inactive``).
EXPIRED_NOTE = "expired"

#: The entry key that holds the expiry time.
EXPIRES = "expires"

#: A point in time as the helpers accept it: a datetime (naive means UTC) or
#: an ISO-8601 string.
Moment = Union[datetime.datetime, str]

IsActive = Callable[[Mapping[str, Any]], bool]


#: ``moment`` as a naive UTC datetime (aware: converted; naive: as is): the core's rule.
to_utc = as_utc
_parse = parse_time


def moment_of(value: Optional[Moment], what: str = "now") -> datetime.datetime:
    """A caller's time argument as naive UTC (None: the current time).

    Raises:
        ValueError: a string that is not ISO-8601.
        TypeError: neither a datetime, a string nor None.
    """
    if value is None:
        return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    if isinstance(value, datetime.datetime):
        return to_utc(value)
    if isinstance(value, str):
        moment = _parse(value)
        if moment is None:
            raise ValueError("%s must be an ISO-8601 time, got %r" % (what, value))
        return moment
    raise TypeError("%s must be a datetime, an ISO-8601 string or None, got %s" % (what, type(value).__name__))


#: The one parser of every time field the lifecycle adds (``expires``,
#: ``valid_from``, ``valid_until``, ``seen[].at``): the core's, which raises
#: [`EntryError`][] for a value that is not
#: an ISO-8601 string, naming the entry and the field.
entry_time = core_entry_time


def expires_at(entry: Mapping[str, Any], index: Optional[int] = None) -> Optional[datetime.datetime]:
    """When ``entry`` expires (naive UTC), or None if it never does.

    Raises:
        EntryError: a malformed ``expires``.
    """
    return entry_time(entry, EXPIRES, index)


def is_expired(entry: Mapping[str, Any], now: Optional[Moment] = None, index: Optional[int] = None) -> bool:
    """Whether ``entry`` has expired at ``now`` (default: the current time).

    The expiry instant itself counts as expired: ``expires`` names the first
    moment the entry no longer applies.

    Raises:
        EntryError: a malformed ``expires``.
    """
    moment = expires_at(entry, index)
    return moment is not None and moment_of(now) >= moment


def is_active(
    entry: Mapping[str, Any],
    now: Optional[Moment] = None,
    *,
    base: IsActive = default_is_active,
) -> bool:
    """``base(entry)`` (the core's ``default_is_active`` by default) and not
    expired at ``now``."""
    return bool(base(entry)) and not is_expired(entry, now)


def active_at(now: Optional[Moment] = None, *, base: IsActive = default_is_active) -> IsActive:
    """An ``is_active`` predicate for ``select``: ``base`` and not expired at
    ``now``, fixed once (default: the time of this call), so every entry of a
    selection is judged against the same instant.

    Example:
        >>> from poolsplit_adapters import Pool, select
        >>> entries = [{"id": "a", "content": "old freeze", "expires": "2026-01-01"},
        ...            {"id": "b", "content": "standing note"}]
        >>> chosen = select(entries, [Pool("notes", 100, 5)], is_active=active_at("2026-06-01"))
        >>> [c["id"] for c in chosen.pools["notes"]]
        ['b']
    """
    moment = moment_of(now)

    def active(entry: Mapping[str, Any]) -> bool:
        return is_active(entry, moment, base=base)

    return active


def note_expired(selection: Selection, expired: Optional[Collection[str]] = None) -> Selection:
    """Record in ``selection.notes["expired"]`` the ids of the entries the
    selection reported `EXPIRED`
    (sorted; nothing when there are none). ``expired`` (ids) is only a hint
    that spares reading the rows when nothing can have expired."""
    if expired is not None and not expired:
        return selection
    if any(reason is Reason.EXPIRED for _pool, reason in selection.counts):
        ids = sorted(str(d.entry.get("id")) for d in selection.dropped if d.reason is Reason.EXPIRED)
        selection.notes[EXPIRED_NOTE] = ids
    return selection
