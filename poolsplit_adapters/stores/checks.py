"""Checks an entry must pass before it is written anywhere durable.

The core's [`check_entry`][] decides whether
an entry can be *selected*; a store must also be able to write it and read it
back unchanged. So on top of the core's checks an entry must be plain JSON
(string keys, no NaN or infinity, nothing a JSON parser would refuse on the
way back), UTF-8 text (a lone surrogate such as ``"\\ud800"`` is a valid
Python string that no file, database or wire format can hold) without NUL
(``"\\x00"``: Postgres text and JSONB cannot hold it, so it is refused on
every store alike, and an entry written to a SQLite file can move to
Postgres unchanged), and its
``base_priority`` must fit a float (``10**400`` passes a type check but
makes every scorer raise ``OverflowError``).
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Mapping, Optional, Tuple

from ..errors import ArgumentError
from ..poolsplit import entry_error
from ..storable import REPLACEMENT, storable_form

__all__ = [
    "KEY_FIELDS",
    "MOST_KEY_BYTES",
    "MOST_SCOPE_BYTES",
    "REPLACEMENT",
    "check_entry_id",
    "check_namespace",
    "check_key_label",
    "check_key_text",
    "check_storable",
    "entry_json",
    "fresh_copy",
    "storable_form",
    "storable_text",
    "stored_copy",
]


def _encode(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def check_storable(entry: Mapping[str, Any], index: Optional[int] = None) -> None:
    """Raise [`EntryError`][] (naming the entry and field) unless a store
    can write ``entry`` and read it back unchanged: the one rule every write
    path applies after the core's ``check_entry``."""
    stored_copy(entry, index)


def storable_text(value: str, name: str) -> str:
    """``value`` when every store can hold it as text, else
    `ArgumentError` naming ``name`` (an
    argument such as a namespace label, an id or a type): NUL, or a lone
    surrogate (not UTF-8). Checked before any query runs, so the caller
    reads this instead of a driver's traceback that names neither."""
    if "\x00" in value:
        raise ArgumentError("%s %r contains NUL (\\x00), which Postgres text cannot hold" % (name, value))
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ArgumentError(
            "%s %r contains a lone surrogate at position %d (not UTF-8), which Postgres text cannot hold"
            % (name, value, exc.start)
        ) from None
    return value


def check_entry_id(value: Any, name: str = "entry id") -> str:
    """``value`` when it is an id every store can hold (a string,
    `storable_text`), else `ArgumentError` naming ``name``: the one rule
    of every verb that takes an id (``get``, ``delete``, ``history``,
    ``supersede``, and their async twins), so a hostile id is refused the
    same on every store, before any query runs (SQLite raised its codec's
    error for a lone surrogate, the in-process store answered "not found",
    a LangGraph store refused it)."""
    if not isinstance(value, str):
        raise ArgumentError("%s must be a string, got %s %r" % (name, type(value).__name__, value))
    return storable_text(value, name)


def check_namespace(value: Any, name: str = "namespace") -> Optional[str]:
    """``value`` when it is None or a namespace label every store can hold
    (a string, `storable_text`), else `ArgumentError` naming ``name``: the
    rule of the verbs that take one (``entries``, ``forget``), as
    `check_entry_id` is for ids (SQLite raised its codec's error for a
    lone surrogate, naming neither; the in-process store answered "none")."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ArgumentError("%s must be a string or None, got %s %r" % (name, type(value).__name__, value))
    return storable_text(value, name)


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, (list, tuple)):
        return any(_has_nul(v) for v in value)
    if isinstance(value, Mapping):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    return False


#: The integers every store reads back unchanged: signed 64 bits. LangGraph's
#: SqliteStore serializes with orjson, which raises deep inside the store
#: past 2**64 - 1 ("Integer exceeds 64-bit range"), and its PostgresStore
#: reads with orjson, which turns a longer integer into a float (10**40 came
#: back as 1e+40): refused on every store alike, so an entry moves unchanged.
MOST_INTEGER, LEAST_INTEGER = 2**63 - 1, -(2**63)
#: A run of digits that long in an entry's JSON may be such an integer (the
#: fields are then looked at one by one, `_wide_integer`).
_LONG_DIGITS = re.compile(r"\d{19}")


def _wide_integer(value: Any) -> Optional[int]:
    """The first integer in ``value`` (at any depth) beyond signed 64 bits
    (`MOST_INTEGER`), or None. Walked with a stack, as `_odd_key`."""
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, int) and not LEAST_INTEGER <= current <= MOST_INTEGER:
            return current
        if isinstance(current, Mapping):
            stack.extend(reversed(list(current.values())))
        elif isinstance(current, (list, tuple)):
            stack.extend(reversed(current))
    return None


def _odd_key(value: Any) -> Optional[Any]:
    """The first key below the top level that is not a string (JSON writes
    ``{1: 2}`` as ``{"1": 2}``: read back, the entry would differ), or None.
    Walked with a stack, not recursion: a value nested deeper than Python's
    recursion limit is refused by the JSON check by name, not here."""
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, Mapping):
            inners = []
            for key, inner in current.items():
                if not isinstance(key, str):
                    return key
                inners.append(inner)
            stack.extend(reversed(inners))
        elif isinstance(current, (list, tuple)):
            stack.extend(reversed(current))
    return None


def _is_utf8(text: str) -> bool:
    """False when ``text`` holds a lone surrogate (no UTF-8 encoding)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def entry_json(entry: Mapping[str, Any], index: Optional[int] = None) -> str:
    """``entry`` as compact JSON that parses back to an equal dict, or
    [`EntryError`][] naming the field whose value JSON cannot carry (a
    set, a NaN, an object, a number or a depth the parser would refuse)."""
    return stored_copy(entry, index)[0]


#: The longest id, type or namespace (UTF-8 bytes) an entry may have, on
#: every store alike: the Postgres stores index them (LangGraph's primary
#: key, PGVector's id, the filter indexes), and a btree key holds ~2,700
#: bytes; past that a write failed deep in the driver. Well under it, so
#: an entry a SQLite file holds moves to Postgres unchanged.
MOST_KEY_BYTES = 1000
#: The fields `MOST_KEY_BYTES` bounds.
KEY_FIELDS = ("id", "type", "namespace")
#: The longest ``scope`` (UTF-8 bytes), on every store alike: LlamaIndex's
#: filter index holds ``namespace``, ``type`` and ``scope`` in one btree row
#: (2,704 bytes at most), and a 5,000-character scope failed deep in the
#: driver ("index row size 5024 exceeds btree version 4 maximum 2704").
#: Two fields at `MOST_KEY_BYTES` and a scope at this fit.
MOST_SCOPE_BYTES = 500
#: Each bounded field, its bound and what the refusal calls it.
_BOUNDED = tuple((key, MOST_KEY_BYTES, "an id, type or namespace") for key in KEY_FIELDS) + (
    ("scope", MOST_SCOPE_BYTES, "a scope"),
)


def key_overflow(value: str, most: int = MOST_KEY_BYTES) -> Optional[int]:
    """``value``'s UTF-8 length when it is longer than ``most``
    (`MOST_KEY_BYTES`), else None: the one rule of `check_key_text` and
    of an entry's `KEY_FIELDS` and ``scope`` (`MOST_SCOPE_BYTES`)."""
    size = len(value.encode("utf-8", "surrogatepass"))
    return size if size > most else None


def check_key_text(value: str, name: str) -> str:
    """``value`` when it is at most `MOST_KEY_BYTES` long (UTF-8),
    else `ArgumentError` naming ``name``."""
    size = key_overflow(value)
    if size is not None:
        raise ArgumentError("%s is %d bytes long; it takes at most %d (UTF-8)" % (name, size, MOST_KEY_BYTES))
    return value


def check_key_label(value: str, argument: str) -> str:
    """`check_key_text` of a label given as ``argument`` (a namespace), the
    error naming it by its start: the rule of every verb that takes one."""
    return check_key_text(value, "%s %r" % (argument, value if len(value) <= 40 else value[:40] + "..."))


def stored_copy(entry: Mapping[str, Any], index: Optional[int] = None) -> Tuple[str, Dict[str, Any]]:
    """(JSON text, the dict read back from it): what a store writes and what
    it hands to its index, sharing nothing with the caller's objects."""
    for key in entry:
        if not isinstance(key, str):
            raise entry_error(entry, index, None, "has a non-string key %r (JSON keys are strings)" % (key,))
    for key, most, what in _BOUNDED:
        value = entry.get(key)
        size = key_overflow(value, most) if isinstance(value, str) else None
        if size is not None:
            raise entry_error(entry, index, key, "is %d bytes long; %s takes at most %d (UTF-8)" % (size, what, most))
    whole: Optional[Tuple[str, Dict[str, Any]]] = None
    try:
        given = dict(entry)
        text = _encode(given)
        whole = text, json.loads(text)
    except (TypeError, ValueError, RecursionError):
        pass  # find the field at fault below
    else:
        # JSON writes NUL as the escape \u0000: without that text, no value holds one.
        # Read back equal: no nested key turned into a string (a tuple read back
        # as a list also differs: the fields are then looked at one by one).
        if _is_utf8(text) and "\\u0000" not in text and whole[1] == given and not _LONG_DIGITS.search(text):
            return whole
    for key, value in entry.items():
        odd = _odd_key(value)
        if odd is not None:
            raise entry_error(
                entry,
                index,
                key,
                "holds a non-string key %r (JSON keys are strings: it would read back changed)" % (odd,),
            )
        try:
            text = _encode(value)
            json.loads(text)
        except (TypeError, ValueError, RecursionError) as exc:
            problem = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(";")[0]
            raise entry_error(entry, index, key, "cannot be stored as JSON (%s)" % problem[:80]) from None
        if not _is_utf8(key):
            raise entry_error(entry, index, None, "has a key with a lone surrogate %r (not UTF-8 text)" % (key,))
        if not _is_utf8(text):
            raise entry_error(
                entry, index, key, "contains a lone surrogate (%s), which is not UTF-8 text" % _surrogates(text)
            )
        if "\x00" in key:
            raise entry_error(entry, index, None, "has a key with NUL %r, which Postgres text cannot hold" % (key,))
        if _has_nul(value):
            raise entry_error(entry, index, key, "contains NUL (\\x00), which Postgres text cannot hold")
        wide = _wide_integer(value)
        if wide is not None:
            raise entry_error(
                entry,
                index,
                key,
                "holds the integer %s, beyond 64 bits (LangGraph's stores read it back changed, or refuse it)"
                % (str(wide) if len(str(wide)) <= 40 else str(wide)[:40] + "..."),
            )
    if whole is not None:
        return whole  # the text held a backslash before "u0000", not a NUL; or a tuple, read back a list
    raise entry_error(entry, index, None, "cannot be stored as JSON")  # pragma: no cover


def fresh_copy(entry: Mapping[str, Any]) -> Dict[str, Any]:
    """A stored entry as a read hands it out: a new dict whose lists and
    dicts, at any depth, are new too (a stored entry is plain JSON,
    `stored_copy`, so nothing else in it can be edited in place).

    Why: the in-memory stores kept each entry as one dict and handed out
    ``dict(entry)``, whose ``tags``, ``seen`` and nested metadata were the
    stored ones. A caller that read an entry, added a tag and superseded it
    (read, edit, write: the ordinary way) had already rewritten the stored
    version in place, so the history showed the old version with the new
    tag, and the store's ``version`` never changed (a kept selection went
    on showing the edit's effect, or not, at random).

    Example:
        >>> stored = {"id": "a", "content": "x", "tags": ["billing"]}
        >>> fresh_copy(stored)["tags"] is stored["tags"]
        False
    """
    return {key: _fresh(value) for key, value in entry.items()}


def _fresh(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _fresh(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_fresh(item) for item in value]
    return value


def _surrogates(text: str) -> str:
    """The first lone surrogate in ``text``, as its escape (e.g. ``\\ud800``)."""
    for char in text:
        if 0xD800 <= ord(char) <= 0xDFFF:
            return "\\u%04x" % ord(char)
    return "?"  # pragma: no cover
