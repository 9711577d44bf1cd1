"""Checks an entry must pass before it is written anywhere durable.

The core's :func:`~poolsplit_adapters.poolsplit.check_entry` decides whether
an entry can be *selected*; a store must also be able to write it and read it
back unchanged. So on top of the core's checks an entry must be plain JSON
(string keys, no NaN or infinity, nothing a JSON parser would refuse on the
way back), UTF-8 encodable (a lone surrogate such as ``"\ud800"`` is valid in
a Python string but in no file or database) and its ``base_priority`` must
fit a float (``10**400`` passes a
type check but makes every scorer raise ``OverflowError``).
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Tuple

from ..poolsplit import entry_error

__all__ = ["entry_json", "stored_copy"]


def _encode(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


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
        text.encode("utf-8")
    except (TypeError, ValueError, RecursionError):
        pass  # find the field at fault below
    else:
        return text, copy
    for key, value in entry.items():
        try:
            json.loads(_encode(value))
            _encode(value).encode("utf-8")
        except UnicodeEncodeError:
            raise entry_error(
                entry, index, key, "holds a lone surrogate (not valid UTF-8 text; it cannot be stored)"
            ) from None
        except (TypeError, ValueError, RecursionError) as exc:
            problem = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(";")[0]
            raise entry_error(entry, index, key, "cannot be stored as JSON (%s)" % problem[:80]) from None
    raise entry_error(entry, index, None, "cannot be stored as JSON")  # pragma: no cover
