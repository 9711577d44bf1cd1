"""Splitting a long text into parts that fit, on the boundaries a reader sees.

A turn that leaves the working set must land in long-term memory whole: a
write gate that refused it as too long would lose it, since the working set
has already let it go. And a memory is recalled into a small budget, so one
entry of several thousand characters would either never fit or crowd out
everything else. So a long text is cut into **parts**, each at most
``limit`` characters, each a verbatim slice of the text (stripped of the
spaces around it), in order, and together holding every non-space character
of it.

Cuts are made at the strongest boundary that leaves the part within the
limit, in this order: a blank line (a paragraph), a line break, the end of a
sentence (``.``, ``!``, ``?``, ``;`` followed by a space, and ``。！？；``), a
space, and, only for a run with no boundary at all (a long URL, a hash), at
the limit itself. Parts are packed greedily: each takes as many whole pieces
as fit.

Example:
    >>> split_text("One. Two. Three.", 10)
    ['One. Two.', 'Three.']
    >>> split_text("short", 100)
    ['short']
"""

from __future__ import annotations

import re
from typing import List, Pattern, Sequence, Tuple

__all__ = ["split_text", "BOUNDARIES"]

#: The boundaries tried in order, strongest first: a part ends *after* a
#: match (the match's end is the cut).
BOUNDARIES: Sequence[Pattern[str]] = (
    re.compile(r"\n[ \t]*\n\s*"),
    re.compile(r"\n\s*"),
    re.compile(r"(?<=[.!?;])[\"')\]]*\s+|(?<=[。！？；])\s*"),
    re.compile(r"\s+"),
)


def _spans(text: str, start: int, end: int, level: int) -> List[Tuple[int, int]]:
    """``text[start:end]`` cut into pieces at the boundaries of ``level``."""
    if level >= len(BOUNDARIES):
        return [(start, end)]
    pieces, at = [], start
    for match in BOUNDARIES[level].finditer(text, start, end):
        if match.end() > at and match.end() < end:
            pieces.append((at, match.end()))
            at = match.end()
    pieces.append((at, end))
    return pieces


def _pack(text: str, start: int, end: int, limit: int, level: int) -> List[Tuple[int, int]]:
    """Spans of ``text[start:end]`` whose stripped length is at most ``limit``."""
    if len(text[start:end].strip()) <= limit:
        return [(start, end)]
    if level >= len(BOUNDARIES):  # no boundary left: cut at the limit
        return [(i, min(i + limit, end)) for i in range(start, end, limit)]
    out: List[Tuple[int, int]] = []
    current = None
    for piece in _spans(text, start, end, level):
        if current is not None and len(text[current[0] : piece[1]].strip()) <= limit:
            current = (current[0], piece[1])
            continue
        if current is not None:
            out.append(current)
        if len(text[piece[0] : piece[1]].strip()) <= limit:
            current = piece
        else:
            out.extend(_pack(text, piece[0], piece[1], limit, level + 1))
            current = None
    if current is not None:
        out.append(current)
    return out


def split_text(text: str, limit: int) -> List[str]:
    """``text`` as parts of at most ``limit`` characters (see the module):
    verbatim slices, stripped, in order, none empty. A text that fits is
    one part; a blank text is no part.

    Raises:
        ValueError: ``limit`` is not an int >= 1.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError("split_text limit must be an int >= 1, got %r" % (limit,))
    parts = [text[a:b].strip() for a, b in _pack(text, 0, len(text), limit, 0)]
    return [p for p in parts if p]
