"""Repeats and returns: when a written entry is the same memory as a
stored one, and when a fact said again after its version closed is a new
version of its own.

The rules every write path of the store contract reads
(`StoreVerbs.write`, the Change a commit applies, the LangGraph store's
async derivation): one text compared one way ([`same_text`][]), one
sighting (source and time) recorded on the kept entry, and a closed
version's text said again by a new sighting given its own id
([`returned_id`][]).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Dict, List, Optional, Tuple

from ..memory.duplicates import Duplicate, DuplicateKind, bucket, normalise_text, record_repeat
from ..memory.expiry import is_expired
from ..memory.write_gate import hashed_id, utc_stamp
from ..poolsplit import default_is_active

__all__ = [
    "in_a_history",
    "live",
    "repeated",
    "returned_id",
    "returning",
    "same_id_repeats",
    "same_sighting",
    "same_text",
    "sighting",
]


def in_a_history(entry: Mapping[str, Any]) -> bool:
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
    check. A version of a history (`in_a_history`) is never folded
    into an entry of another id, nor is an entry already expired when it
    is written: a store holds an expired entry beside a live one with its
    text (an expired entry absorbs no repeat, `live`), and its export,
    imported in whatever order it lists them, must hold both again. For
    the same reason a version of a history absorbs no other entry of the
    same write (a store holds it beside an older entry with its text)."""
    by_id = {str(e["id"]): e for e in stored}
    out = list(hits)
    written = {id(e) for e in prepared}
    for position, (entry, hit) in enumerate(zip(prepared, hits)):
        if hit is not None and (in_a_history(entry) or is_expired(entry)) and hit.kept.get("id") != entry["id"]:
            out[position] = hit = None  # a version keeps its id (an export's line, re-imported)
        if hit is not None and id(hit.kept) in written and in_a_history(hit.kept):
            # A version of this very write absorbs no entry of it: a store's export lists a
            # version beside an older entry with its text (written first, so not folded), in
            # either order. Such an entry repeats an earlier plain one of the write, if any.
            out[position] = hit = next(
                (
                    Duplicate(kept, DuplicateKind.EXACT, 1.0)
                    for kept, found in zip(prepared[:position], out)
                    if found is None and not in_a_history(kept) and live(kept) and same_text(kept, entry)
                ),
                None,
            )
        found = by_id.get(str(entry["id"])) if hit is None else None
        if found is not None and same_text(found, entry) and (live(found) or same_sighting(found, entry)):
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
        if found is not None and same_text(found, entry) and not live(found) and not same_sighting(found, entry):
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


def live(entry: Mapping[str, Any], now: Optional[Any] = None) -> bool:
    """Whether ``entry`` can be repeated (and so absorb a duplicate): the
    core's ``default_is_active`` and not expired at ``now`` (default: now)."""
    return bool(default_is_active(entry)) and not is_expired(entry, now)


def same_text(stored: Mapping[str, Any], entry: Mapping[str, Any]) -> bool:
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


def same_sighting(kept: Mapping[str, Any], candidate: Mapping[str, Any]) -> bool:
    """Whether ``candidate`` is ``kept``'s own first sighting (a retried write,
    a re-import): the same source and time, and the same exchange (a user
    who says again, in the same second or under a fixed ``now``, what a
    later message changed, makes a new sighting, not a retry)."""
    return (
        kept.get("source") == candidate.get("source")
        and kept.get("created") == candidate.get("created")
        and kept.get("exchange") == candidate.get("exchange")
    )


def repeated(kept: Mapping[str, Any], candidate: Mapping[str, Any]) -> Dict[str, Any]:
    if same_sighting(kept, candidate):
        return dict(kept)
    source, at = sighting(candidate)
    return record_repeat(kept, source=source, at=at)
