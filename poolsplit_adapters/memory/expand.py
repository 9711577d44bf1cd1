"""Expand: an entry's full text by id, for a model that saw its summary.

Progressive loading shows many entries as summaries; the marker says so
(``layer="summary"``) and carries the id. [`expand`][] is the
framework-neutral lookup behind the agent tools in
`expand_tools`.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Sized, Union

__all__ = ["UnknownEntryError", "expand", "find_entry"]


class UnknownEntryError(LookupError):
    """No entry has the requested id.

    ``str()`` is a sentence a model or a person can act on (a tool returns it
    to the model as the call's error).
    """

    def __init__(self, entry_id: str, searched: Optional[int] = None) -> None:
        where = "" if searched is None else " (searched %d entries)" % searched
        # A model's id is echoed back to it: a long one abridged, not
        # returned whole into its context (an id of 100k characters was).
        long = isinstance(entry_id, str) and len(entry_id) > 120
        shown = repr(entry_id) if not long else "%r... (%d characters)" % (entry_id[:100], len(entry_id))
        super().__init__("no memory entry with id %s%s; use an id from a <memory id=...> marker" % (shown, where))
        self.entry_id = entry_id


Source = Union[Mapping[str, Mapping[str, Any]], Iterable[Mapping[str, Any]], Any]


def find_entry(source: Source, entry_id: str) -> Mapping[str, Any]:
    """The entry with ``id == entry_id`` in ``source``.

    ``source`` is a mapping of id -> entry, any object with a
    ``get(entry_id)`` method returning the entry or None (a store), or an
    iterable of entries (a list, a [`MemoryIndex`][poolsplit_adapters.index.MemoryIndex]).
    In an iterable the first entry with that id wins, as in input order.

    Raises:
        TypeError: ``entry_id`` is not a non-empty string.
        UnknownEntryError: no entry has that id.
    """
    if not isinstance(entry_id, str) or not entry_id:
        raise TypeError("entry_id must be a non-empty string, got %r" % (entry_id,))
    getter = getattr(source, "get", None)
    if callable(getter):
        found = getter(entry_id)
        if found is None:
            raise UnknownEntryError(entry_id, len(source) if isinstance(source, Sized) else None)
        return found  # type: ignore[no-any-return]
    searched = 0
    for entry in source:
        searched += 1
        if isinstance(entry, Mapping) and entry.get("id") == entry_id:
            return entry
    raise UnknownEntryError(entry_id, searched)


def expand(source: Source, entry_id: str) -> str:
    """The full text (``content``) of the entry with id ``entry_id``.

    Example:
        ```python
        expand(entries, "ep-007")   # the episode's whole text, not its summary
        ```

    Raises:
        UnknownEntryError: no entry has that id (the message says so).
        TypeError: a bad id, or the entry has no string ``content``.
    """
    entry = find_entry(source, entry_id)
    content = entry.get("content")
    if not isinstance(content, str):
        raise TypeError("entry %r: field 'content' must be a string, got %s" % (entry_id, type(content).__name__))
    return content
