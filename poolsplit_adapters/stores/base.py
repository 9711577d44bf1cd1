"""The long-term store contract every durable memory backend meets.

The SQLite store (:mod:`.sqlite`), the LangGraph store wrapper and the
adapters' long-term memory all speak this one protocol, so a host can move
from the embedded file to a server without touching its agent code.

The promise behind every write method: **a write that returns is durable, and
a write that fails raises and leaves nothing half-written.** Callers rely on
it to evict from a working set only after ``add`` returned ("recallable
forgetting", not amnesia).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Protocol, Sequence, runtime_checkable

from ..poolsplit import Pool, Selection

__all__ = ["MemoryStore"]


@runtime_checkable
class MemoryStore(Protocol):
    """A durable store of memory entries that answers pool-split queries.

    Entries are plain dicts (the core's schema). A store:

    * assigns ``id`` and ``created`` to an entry that lacks them, validates it
      with the core's ``check_entry`` and never mutates what the caller
      passed;
    * keeps a superseded entry for audit (it gets ``superseded_by`` and never
      loads again) and truly forgets a deleted one;
    * answers :meth:`select` with the core's semantics over its current
      content, and exposes a :attr:`version` that changes whenever that
      content changes (a cache key).

    Example (any implementation)::

        ids = store.add([{"type": "fact", "content": "Refunds round half-even."}])
        store.select([Pool("facts", 200, 5, ("fact",))], {"message": "refund rounding"})
    """

    def add(self, entries: Iterable[Mapping[str, Any]]) -> List[str]:
        """Store entries in one atomic, durable write; return their ids in order."""
        ...

    def get(self, entry_id: str) -> Optional[Dict[str, Any]]:
        """A copy of the entry with this id (superseded ones too), or None."""
        ...

    def supersede(self, entry_id: str, new_entry: Mapping[str, Any]) -> str:
        """Replace an entry by a new one (atomically); return the new id. The
        old one gets ``superseded_by`` and stays for audit."""
        ...

    def delete(self, entry_id: str) -> bool:
        """Forget an entry for good; False when there was none."""
        ...

    def entries(self, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Copies of every stored entry (of one namespace when given), in
        store order, superseded ones included."""
        ...

    def select(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any) -> Selection:
        """The core's ``select`` over the current content (``now``,
        ``scorer``, ``visibility`` as keywords)."""
        ...

    @property
    def version(self) -> Any:
        """Changes whenever the content changes (equal values: same content)."""
        ...
