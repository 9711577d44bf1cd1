"""Checks an entry must pass before it is written anywhere durable.

The core's :func:`~poolsplit_adapters.poolsplit.check_entry` decides whether
an entry can be *selected*; a store must also be able to write it and read it
back unchanged. So on top of the core's checks an entry must be plain JSON
(string keys, no NaN or infinity, nothing a JSON parser would refuse on the
way back), UTF-8 text (a lone surrogate such as ``"\\ud800"`` is a valid
Python string that no file, database or wire format can hold), and its
``base_priority`` must fit a float (``10**400`` passes a type check but
makes every scorer raise ``OverflowError``).
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Tuple

from ..poolsplit import entry_error

__all__ = ["check_storable", "entry_json", "stored_copy"]


def _encode(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def check_storable(entry: Mapping[str, Any], index: Optional[int] = None) -> None:
    """Raise :class:`EntryError` (naming the entry and field) unless a store
    can write ``entry`` and read it back unchanged: the one rule every write
    path applies after the core's ``check_entry``."""
    stored_copy(entry, index)


def _is_utf8(text: str) -> bool:
    """False when ``text`` holds a lone surrogate (no UTF-8 encoding)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def entry_json(entry: Mapping[str, Any], index: Optional[int] = None) -> str:
    """``entry`` as compact JSON that parses back to an equal dict, or
    :class:`EntryError` naming the field whose value JSON cannot carry (a
    set, a NaN, an object, a number or a depth the parser would refuse)."""
    return stored_copy(entry, index)[0]


def stored_copy(entry: Mapping[str, Any], index: Optional[int] = None) -> Tuple[str, Dict[str, Any]]:
    """(JSON text, the dict read back from it): what a store writes and what
    it hands to its index, sharing nothing with the caller's objects."""
    for key in entry:
        if not isinstance(key, str):
            raise entry_error(entry, index, None, "has a non-string key %r (JSON keys are strings)" % (key,))
    try:
        text = _encode(dict(entry))
        copy = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        pass  # find the field at fault below
    else:
        if _is_utf8(text):
            return text, copy
    for key, value in entry.items():
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
    raise entry_error(entry, index, None, "cannot be stored as JSON")  # pragma: no cover


def _surrogates(text: str) -> str:
    """The first lone surrogate in ``text``, as its escape (e.g. ``\\ud800``)."""
    for char in text:
        if 0xD800 <= ord(char) <= 0xDFFF:
            return "\\u%04x" % ord(char)
    return "?"  # pragma: no cover
