"""What both framework adapters share: metadata -> entry conversion with
strict checks, and the metadata keys the adapters write.

Adapters only translate; every selection rule lives in the core. This module
is the translation's one rule book, so a LangChain document and a LlamaIndex
node with the same metadata become the same entry and fail the same way.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from .poolsplit import (
    Chosen,
    EntryError,
    Pool,
    Reason,
    Selection,
    check_entry,
    given_token_count,
    select,
)
from .poolsplit import (
    check_pools as _core_check_pools,
)

#: Metadata key under which returned documents/nodes carry what the selector
#: decided: ``{"pool": name, "score": float | None, "always": bool}``. One
#: namespaced key, so none of the caller's own keys is overwritten.
SELECTION_KEY = "poolsplit"


def entry_from(
    content: str,
    metadata: Optional[Mapping[str, Any]],
    object_id: Optional[str],
    *,
    kind: str,
    position: int,
) -> Dict[str, Any]:
    """An entry from a framework object: its metadata, plus ``content`` (the
    text) and ``id`` (the object's id, else ``metadata["id"]``).

    Stricter than the core: metadata written by hand or by a loader is where
    a string ``tags`` or a negative ``token_count`` comes from, and both would
    be silently reinterpreted by the spec's lenient rules, so they are
    refused here with the object's id and the field.
    """
    entry: Dict[str, Any] = dict(metadata or {})
    entry.pop(SELECTION_KEY, None)  # what an earlier selection wrote is not input
    entry["content"] = content
    if object_id:
        entry["id"] = object_id
    label = (
        "%s %r" % (kind, entry["id"])
        if isinstance(entry.get("id"), str) and entry["id"]
        else ("%s at position %d" % (kind, position))
    )
    try:
        check_entry(entry, position)
    except EntryError as err:
        where = "metadata field %r " % err.field if err.field and err.field != "content" else ""
        raise EntryError(
            "%s: %s%s" % (label, where, err.problem), index=position, entry_id=err.entry_id, field=err.field
        ) from None
    if "token_count" in entry and entry["token_count"] is not None and given_token_count(entry) is None:
        raise EntryError(
            "%s: metadata field 'token_count' must be a positive integer, got %r" % (label, entry["token_count"]),
            index=position,
            entry_id=entry.get("id"),
            field="token_count",
        )
    return entry


def selection_metadata(chosen: Chosen, omitted: Optional[Mapping[str, int]] = None) -> Dict[str, Any]:
    """What a returned document/node carries under :data:`SELECTION_KEY`.

    ``omitted`` (pool -> count of entries its budget, or ``k``, left out of
    this call) travels with every document of the call, so that a formatter
    downstream can say explicitly that more memory exists.
    """
    data: Dict[str, Any] = {"pool": chosen.pool, "score": chosen.score, "always": chosen.always}
    if omitted:
        data["omitted"] = dict(omitted)
    return data


def omitted_by_pool(selection: Selection, returned: Sequence[Chosen]) -> Dict[str, int]:
    """Per pool (pool order), how many entries were left out by a budget or
    by ``k``: what an explicit omission line must mention."""
    counts: Dict[str, int] = {}
    for item in selection.dropped:
        if item.reason in (Reason.TOKEN_BUDGET, Reason.ENTRY_CAP) and item.pool is not None:
            counts[item.pool] = counts.get(item.pool, 0) + 1
    kept = {id(c) for c in returned}
    for c in selection.chosen:
        if id(c) not in kept:
            counts[c.pool] = counts.get(c.pool, 0) + 1
    return {name: counts[name] for name in selection.stats if name in counts}


def cap_round_robin(selection: Selection, k: Optional[int]) -> List[Chosen]:
    """The selection's render order, with at most ``k`` contextual entries.

    Always-scope entries are never cut (they are on top of ``k``). The ``k``
    contextual slots are dealt round-robin across pools in pool order, by
    rank within each pool, so a small ``k`` still reaches every pool instead
    of being eaten by the first one (which would bring type starvation back).
    """
    if k is None:
        return list(selection.chosen)
    if k < 0:
        raise ValueError("k must be >= 0, got %r" % (k,))
    always = [c for c in selection.chosen if c.always]
    per_pool: Dict[str, List[Chosen]] = {}
    for c in selection.chosen:
        if not c.always:
            per_pool.setdefault(c.pool, []).append(c)
    keep: Dict[str, int] = {name: 0 for name in per_pool}
    left = k
    while left > 0 and any(keep[n] < len(v) for n, v in per_pool.items()):
        for name, ranked in per_pool.items():
            if left > 0 and keep[name] < len(ranked):
                keep[name] += 1
                left -= 1
    return always + [c for name, ranked in per_pool.items() for c in ranked[: keep[name]]]


def select_with(owner: Any, entries: Sequence[Mapping[str, Any]], context: Mapping[str, Any]) -> Selection:
    """``select`` with an adapter's own settings (its ``pools``, ``scorer``,
    ``token_counter``, ``now`` and ``scope``)."""
    return select(
        entries,
        owner.pools,
        context,
        scorer=owner.scorer,
        token_counter=owner.token_counter,
        now=owner.now,
        visibility=owner.visibility,
    )


def check_pools(pools: Sequence[Pool]) -> List[Pool]:
    """Pools as a list, rejecting anything that is not a :class:`Pool`."""
    return _core_check_pools(pools)


def selection_digest(selection: Selection) -> Dict[str, Any]:
    """A JSON-friendly digest of a selection, for callback events (LangChain)
    and instrumentation events (LlamaIndex)."""
    return {
        "chosen": [
            {"id": c.entry.get("id"), "pool": c.pool, "always": c.always, "score": c.score, "tokens": c.cost}
            for c in selection.chosen
        ],
        "dropped": [{"id": d.entry.get("id"), "reason": d.reason, "pool": d.pool} for d in selection.dropped],
        "stats": {
            name: {
                "tokens_used": s.tokens_used,
                "max_tokens": s.max_tokens,
                "entries_used": s.entries_used,
                "max_entries": s.max_entries,
                "always_count": s.always_count,
                "always_tokens": s.always_tokens,
            }
            for name, s in selection.stats.items()
        },
    }
