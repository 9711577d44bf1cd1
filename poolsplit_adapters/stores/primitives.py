"""The few primitives every store implements, each with its async twin:
what [`StoreVerbs`][poolsplit_adapters.stores.StoreVerbs] writes every verb over.

A store implements ``read``, ``commit``,
``select`` and ``version``;
``aread``, ``acommit`` and ``aselect`` default to the sync ones (a store
with an async API, a LangGraph store or a LangChain vector store, overrides
them), so every async verb is written once too. Nothing else of a store's
shape is asked for: a caller holding a store calls its verbs, never asks
what kind of store it is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Dict, List, Optional, Tuple

from ..memory.duplicates import DuplicateFinder
from ..memory.write_gate import utc_stamp
from ..poolsplit import Pool, Selection
from .change import Change

__all__ = ["StorePrimitives"]


class StorePrimitives(ABC):
    """The store contract's primitives (see the module docstring).

    Example:
        ```python
        store.read(["fix-1"])                     # fresh copies of those found
        await store.aread(None, "memories.u1")    # one namespace, through the async twin
        store.commit(Change(forget=("fix-1",)))   # one write, verified first
        ```
    """

    #: (version, finder) of ``duplicate_finder``, kept between writes.
    _finder: Optional[Tuple[Any, DuplicateFinder]] = None
    #: Commits of this store that raised: a finder captured before one of them
    #: may hold what that write admitted, and is never brought along.
    _failed_commits: int = 0
    #: Whether this store's writes are [`Change`][]s its own ``commit``
    #: applies (every store of the package). False for a host's store that
    #: meets the public protocol only (`ProtocolStore`):
    #: its verbs are its own, and nothing is consolidated or forgotten
    #: through it.
    commits: bool = True

    @abstractmethod
    def read(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Fresh copies of the stored entries with these ids (those found),
        or of every entry (of ``namespace`` when given), in store order."""

    @abstractmethod
    def commit(self, change: Change) -> None:
        """Apply ``change`` in one write: [`Change.verify`][] against the
        stored versions of its touched ids, then write [`Change.rows`][]
        and delete `Change.forget`."""

    @abstractmethod
    def select(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any) -> Selection:
        """The core's ``select`` over the current content."""

    @property
    @abstractmethod
    def version(self) -> Any:
        """Changes whenever the content changes (equal values: same content)."""

    async def aread(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Async [`read`][] (default: the sync one)."""
        return self.read(ids, namespace)

    async def acommit(self, change: Change) -> None:
        """Async [`commit`][] (default: the sync one)."""
        self.commit(change)

    async def aselect(
        self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any
    ) -> Selection:
        """Async [`select`][] (default: the sync one)."""
        return self.select(pools, context, **options)

    def stamp(self) -> str:
        """The ``created`` given to an entry without one (now, UTC)."""
        return utc_stamp()
