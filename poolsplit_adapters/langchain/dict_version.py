"""An O(1) change mark of a Python dict, where the interpreter keeps one.

LangGraph's ``InMemoryStore`` keeps a namespace's items in a plain dict and
offers no change counter; a ``put`` replaces an item in place. The kept
index of the agent middleware must know, every turn, whether any item of
the namespace changed: comparing every item by identity costs a pass over
the namespace (about 1 ms at 100k items, 10 ms at 1M) on every model call.

CPython 3.9 to 3.13 already count each dict's changes: PEP 509's
``ma_version_tag``, a 64-bit field after the object header and the item
count, given a new value (from one counter of the interpreter, so never a
value another dict had) whenever an item is added, replaced by another
object, or removed. `dict_version` reads it. It is used only after
`_reliable` has seen, on a dict of its own, each of those changes
move it and a read leave it; anywhere else (another interpreter, another
version, a build whose layout differs) it returns None and the caller
compares the items themselves, as before.

Why not a hook into the caller's store: the store is the caller's object;
wrapping its methods would change it behind their back.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from typing import Any, Optional

__all__ = ["dict_version"]

#: The field's offset in ``PyDictObject``: the object header (reference
#: count, type) and ``ma_used``, three 8-byte words on a 64-bit build.
_OFFSET = 24


def _read(d: Any) -> int:
    import ctypes

    return int(ctypes.c_uint64.from_address(id(d) + _OFFSET).value)


@lru_cache(maxsize=1)
def _reliable() -> bool:
    """Whether this interpreter's dicts carry the tag where it is read:
    CPython 3.9-3.13, 64-bit, and on a probe dict every kind of change
    moves the value and a read does not."""
    if sys.implementation.name != "cpython" or not (3, 9) <= sys.version_info[:2] <= (3, 13):
        return False
    if sys.maxsize != 2**63 - 1:
        return False
    try:
        probe: dict[str, object] = {}
        seen = [_read(probe)]
        probe["a"] = object()
        seen.append(_read(probe))
        probe["a"] = object()  # replaced in place, as a put of an existing key
        seen.append(_read(probe))
        _ = probe["a"], len(probe), list(probe.values())
        unchanged = _read(probe) == seen[-1]
        del probe["a"]
        seen.append(_read(probe))
        other: dict[str, object] = {}
        # A fresh dict never carries a value another had.
        return unchanged and len(set(seen)) == len(seen) and _read(other) not in seen
    except Exception:  # noqa: BLE001 - no ctypes, or anything unexpected: not reliable
        return False


def dict_version(d: dict[Any, Any]) -> Optional[int]:
    """A value that changes whenever an item of ``d`` is added, replaced
    or removed, read in O(1); None where the interpreter offers none
    (then compare the items).

    Example:
        >>> d = {"a": 1}
        >>> before = dict_version(d)
        >>> d["a"] = 2
        >>> before is None or dict_version(d) != before
        True
    """
    if type(d) is not dict or not _reliable():
        return None
    return _read(d)
