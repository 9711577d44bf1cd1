"""Consolidating what is already stored: the consolidator after the write.

[`StoreVerbs.consolidate`][]
consolidates entries *before* they are written (LlamaIndex's flush: the
lines are in hand until the flush returns). An agent cannot wait for a
model there: a turn leaves the working set only once its durable write
returned ("recallable forgetting"), and the turn must not block on a second
model call. So the agent middleware writes first, through the ordinary
gate, and consolidates the entries it wrote afterwards, in the background
(`poolsplit_adapters.background`). This module is that second
half, over any `StoreVerbs`:

1. **View** (`consolidation_view`): the stored entries by id that are
   still active (a later run, another process or the host may have closed
   them: those are *skipped*, never shown), beside their nearest active
   neighbours of the same namespace and type (corrections among them are
   shown ``locked``).
2. **Decide**: [`consolidate`][]
   (the host's model, small integer handles, every operation validated and
   refused with a reason).
3. **Apply** (`apply_consolidation`): each accepted operation is one
   [`Change`][] of already stored
   entries (``replace``), verified against the store when it commits:

   ======  ===============================================================
   add     nothing to do: the entry is stored
   update  the neighbour is closed (``superseded_by`` the entry, its
           ``valid_until``); the entry gets ``supersedes`` and ``valid_from``
   retire  the neighbour is closed with no successor
   noop    with a neighbour: the entry repeats it; the repeat is recorded in
           the neighbour's ``seen`` (when the entry has a ``source``) and the
           entry is *closed* (retired), never deleted; without one: nothing
           (a stored memory is never dropped because a model found it dull)
   ======  ===============================================================

   These are the versions
   `op_writes` derives, the one
   rule LlamaIndex's flush applies before the write too.

Nothing is deleted, so nothing is lost: a wrong or hostile plan can close a
version, and the closed version stays in the store, in ``history(id)`` and
in ``Visibility(as_of=...)``. An operation whose target changed between the
view and the commit (another run, another process) is not applied and is
listed in `StoredConsolidation.failed` with the store's reason: each
change carries the versions it was derived from (``Change.unchanged``) and
applies only while they are stored exactly so. That check runs inside the
commit's transaction on SQLite; a LangGraph store has none, so there it is
a read just before the write, and two processes racing within that gap can
still interleave (in one process, the middleware's background runs on one
store never overlap: `poolsplit_adapters.background`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..memory.consolidate import Accepted, ConsolidationResult, Model, consolidate, op_writes
from ..memory.expiry import Moment, moment_of
from ..memory.write_gate import utc_stamp
from ..poolsplit import EntryError
from .base import FINDERS, Change, EntryNotFound, live

if TYPE_CHECKING:
    from .base import StoreVerbs

__all__ = ["StoredConsolidation", "apply_consolidation", "consolidate_stored", "consolidation_view"]


@dataclass(frozen=True)
class StoredConsolidation:
    """What consolidating stored entries did.

    Attributes:
        result: the model's plan as validated (accepted and refused
            operations, each refusal with its reason).
        applied: the accepted operations committed to the store.
        failed: ``(operation, reason)`` of accepted operations the store
            refused when they applied (the target changed meanwhile):
            nothing of them was written.
        skipped: the ids asked for that were not consolidated: gone, or no
            longer active when the view was read.

    Example:
        >>> StoredConsolidation(ConsolidationResult(), (), (), ("note-1",)).to_dict()
        {'accepted': {}, 'refused': {}, 'unresolved': 0, 'applied': {}, 'failed': 0, 'skipped': 1}
    """

    result: ConsolidationResult
    applied: Tuple[Accepted, ...]
    failed: Tuple[Tuple[Accepted, str], ...]
    skipped: Tuple[str, ...]

    def to_dict(self) -> Dict[str, Any]:
        """Counts for logs and events: the result's, then what applied."""
        applied: Dict[str, int] = {}
        for op in self.applied:
            applied[op.op.value] = applied.get(op.op.value, 0) + 1
        return {
            **self.result.to_dict(),
            "applied": dict(sorted(applied.items())),
            "failed": len(self.failed),
            "skipped": len(self.skipped),
        }


def consolidation_view(
    store: StoreVerbs, ids: Sequence[str], *, nearest: int = 5
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]], List[str]]:
    """``(candidates, existing, skipped)``: the active stored entries among
    ``ids`` (store order of ``ids``), their ``nearest`` active neighbours
    (same namespace and type; never one of the candidates), and the ids not
    consolidated (gone or inactive).

    Raises:
        ValueError: ``nearest`` is not an int >= 0.
    """
    if isinstance(nearest, bool) or not isinstance(nearest, int) or nearest < 0:
        raise ValueError("nearest must be an int >= 0, got %r" % (nearest,))
    store = store.holder
    wanted = list(dict.fromkeys(str(i) for i in ids))
    found = {str(e["id"]): e for e in store.read(wanted)} if wanted else {}
    candidates = [found[i] for i in wanted if i in found and live(found[i])]
    taken = {str(c["id"]) for c in candidates}
    skipped = [i for i in wanted if i not in taken]
    if not candidates:
        return [], [], skipped
    with FINDERS:
        finder = store.neighbour_finder(candidates)
        shown: Dict[str, Dict[str, Any]] = {}
        for candidate in candidates:
            # The candidates are stored, so the finder holds them too: ask
            # for as many more as there are candidates, and leave them out.
            near = [n for n, _ in finder.nearest(candidate, nearest + len(candidates)) if str(n["id"]) not in taken]
            for neighbour in near[:nearest]:
                shown.setdefault(str(neighbour["id"]), dict(neighbour))
    return candidates, list(shown.values()), skipped


def _change(
    op: Accepted, candidate: Optional[Dict[str, Any]], target: Optional[Dict[str, Any]], when: str
) -> Tuple[Dict[str, Any], ...]:
    """The new versions of stored entries that ``op`` writes
    (`op_writes`, the rule the
    flush path applies too), derived from their latest versions (an earlier
    operation of the plan may have recorded a repeat on the same target).
    An operation that keeps its candidate as given writes nothing: it is
    stored already."""
    if op.as_given:
        return ()
    return op_writes(op.op, candidate, target, when)


def apply_consolidation(
    store: StoreVerbs,
    candidates: Sequence[Mapping[str, Any]],
    result: ConsolidationResult,
    *,
    at: Optional[Moment] = None,
    skipped: Sequence[str] = (),
) -> StoredConsolidation:
    """Commit ``result``'s accepted operations on the stored ``candidates``
    (the ones `consolidation_view` returned, in that order), one
    [`Change`][] per operation, in plan
    order; see the module docstring for what each writes."""
    store = store.holder
    when = at if isinstance(at, str) else utc_stamp(moment_of(at, "at"))
    latest: Dict[str, Dict[str, Any]] = {str(c["id"]): dict(c) for c in candidates}
    for op in result.accepted:
        if op.target is not None:
            latest.setdefault(str(op.target["id"]), dict(op.target))
    applied: List[Accepted] = []
    failed: List[Tuple[Accepted, str]] = []
    for op in result.accepted:
        candidate = None if op.candidate is None else latest[str(candidates[op.candidate]["id"])]
        target = None if op.target is None else latest[str(op.target["id"])]
        try:
            rows = _change(op, candidate, target, when)
            if rows:
                bases = tuple(latest[str(row["id"])] for row in rows)
                store._commit_tracked(Change(replace=rows, unchanged=bases))
        except (EntryError, EntryNotFound, ValueError) as err:
            failed.append((op, "%s: %s" % (type(err).__name__, err)))
            continue
        if rows:  # what the next operation derives from: the versions as stored
            latest.update({str(e["id"]): e for e in store.read([str(row["id"]) for row in rows])})
        applied.append(op)
    return StoredConsolidation(result, tuple(applied), tuple(failed), tuple(skipped))


def consolidate_stored(
    store: StoreVerbs, ids: Sequence[str], *, model: Model, at: Optional[Moment] = None, nearest: int = 5
) -> StoredConsolidation:
    """View, decide, apply: consolidate the stored entries ``ids`` with the
    host's ``model`` (a LangChain chat model, a LlamaIndex LLM or a
    `Decider`).

    Example:
        ```python
        report = store.write([{"type": "note", "namespace": "u1", "content": "Staging DB is db-9."}])
        done = consolidate_stored(store, report.written, model=chat_model)
        done.to_dict()   # {'accepted': {'update': 1}, ..., 'applied': {'update': 1}, 'failed': 0, ...}
        ```
    """
    candidates, existing, skipped = consolidation_view(store, ids, nearest=nearest)
    when = at if isinstance(at, str) else utc_stamp(moment_of(at, "at"))
    result = consolidate(candidates, existing, model=model, at=when) if candidates else ConsolidationResult()
    return apply_consolidation(store, candidates, result, at=when, skipped=skipped)
