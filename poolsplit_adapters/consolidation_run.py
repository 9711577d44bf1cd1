"""One consolidation run over a store: the ids' view, the model's decision,
the operations applied, and its report.

`BackgroundConsolidation` decides when and where a run happens (debounced
per key, in a thread or a task, one run at a time per store); this module
is what a run does once it is due, the same steps sync and on the loop:
read the store's view of the ids (`consolidation_view`), ask the model
(`consolidate` / `aconsolidate`) and apply what it decided
(`apply_consolidation`, verified against the store as it commits). A run
never raises into the turn that caused it: any error becomes its
`ConsolidationRun` report, which `log_run` writes to the
``poolsplit_adapters.consolidation`` logger.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import logging
from dataclasses import dataclass
from typing import Any, Dict, Hashable, Optional, Protocol, Tuple

from .memory.consolidate import ConsolidationResult, Decider, aconsolidate, consolidate
from .memory.write_gate import utc_stamp
from .stores.base import StoreVerbs
from .stores.consolidation import StoredConsolidation, apply_consolidation, consolidation_view
from .threads import off_loop

__all__ = ["LOGGER", "ConsolidationRun", "RunSettings", "arun_consolidation", "log_run", "run_consolidation"]

#: Where failed runs and refused operations are logged.
LOGGER = logging.getLogger("poolsplit_adapters.consolidation")


@dataclass(frozen=True)
class ConsolidationRun:
    """One background run: the key, the ids it consolidated, and what it did
    (``outcome``) or why it could not (``error``, "Type: message").

    Example:
        >>> ConsolidationRun(("t1", "memories.u1"), ("note-1",), None, "TimeoutError: model").to_dict()["error"]
        'TimeoutError: model'
    """

    key: Hashable
    ids: Tuple[str, ...]
    outcome: Optional[StoredConsolidation]
    error: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        """The JSON form (for events and logs)."""
        body: Dict[str, Any] = {"ids": len(self.ids)}
        if self.outcome is not None:
            body.update(self.outcome.to_dict())
        if self.error is not None:
            body["error"] = self.error
        return body


class RunSettings(Protocol):
    """What a run is made with, read when it starts: a
    `BackgroundConsolidation`'s settings."""

    #: The driver of the host's model.
    decider: Decider
    #: Neighbours shown per candidate.
    nearest: int
    #: The time stamped on the operations (None: the time of the run).
    now: Optional[datetime.datetime]


def run_consolidation(how: RunSettings, key: Hashable, store: StoreVerbs, ids: Tuple[str, ...]) -> ConsolidationRun:
    """One run of ``ids`` in ``store``, in the calling thread: view, decide
    (sync), apply. Errors are the report, never raised."""
    try:
        candidates, existing, skipped = consolidation_view(store, ids, nearest=how.nearest)
        at = utc_stamp(how.now)
        result = consolidate(candidates, existing, model=how.decider, at=at) if candidates else ConsolidationResult()
        return ConsolidationRun(key, ids, apply_consolidation(store, candidates, result, at=at, skipped=skipped))
    except Exception as err:  # reported, never raised into a turn
        return ConsolidationRun(key, ids, None, "%s: %s" % (type(err).__name__, err))


async def arun_consolidation(
    how: RunSettings, key: Hashable, store: StoreVerbs, ids: Tuple[str, ...]
) -> ConsolidationRun:
    """`run_consolidation` on the loop: the store's sync verbs in a worker
    thread (`off_loop`), the model awaited. A cancellation is not an
    error: it propagates (the caller gives the ids back)."""
    try:
        candidates, existing, skipped = await off_loop(
            functools.partial(consolidation_view, store, ids, nearest=how.nearest)
        )
        at = utc_stamp(how.now)
        result = (
            await aconsolidate(candidates, existing, model=how.decider, at=at) if candidates else ConsolidationResult()
        )
        outcome = await off_loop(
            functools.partial(apply_consolidation, store, candidates, result, at=at, skipped=skipped)
        )
        return ConsolidationRun(key, ids, outcome)
    except asyncio.CancelledError:
        raise
    except Exception as err:  # reported, never raised into a turn
        return ConsolidationRun(key, ids, None, "%s: %s" % (type(err).__name__, err))


def log_run(run: ConsolidationRun) -> None:
    """What a finished run says in the log: a failed run as a warning, each
    refused or unapplied operation of a finished one as info."""
    if run.error is not None:
        LOGGER.warning("consolidation of %d entries (%r) failed: %s", len(run.ids), run.key, run.error)
    elif run.outcome is not None:
        for refused in run.outcome.result.refused:
            LOGGER.info("consolidator output refused (%s): %s", refused.reason.value, refused.detail)
        for op, reason in run.outcome.failed:
            LOGGER.info("consolidation %s not applied: %s", op.op.value, reason)
