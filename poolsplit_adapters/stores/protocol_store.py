"""A host's own store that meets the public protocol ([`MemoryStore`][]:
the verbs alone) taken as the store contract: the one adapter from the
protocol to [`StoreVerbs`][], so every caller holds the contract and calls
its verbs, never asks what kind of store it was given.

The host's store keeps its own semantics: its ``add`` writes (``put_many``
when it has one: a write that races another of the same content lands on
the same id), its ``supersede``, ``delete``, ``get``, ``entries``,
``select`` and ``version`` answer. It does not commit the contract's
[`Change`][]s (its ``commits`` is False), so a write
through it reports no repeats, and a consolidation or a ``forget`` runs on
the stores of the package only.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Dict, List, Optional

from ..poolsplit import Pool, Selection
from .base import MemoryStore, StoreVerbs
from .change import Change, WriteReport

__all__ = ["ProtocolStore", "contract_of"]


class ProtocolStore(StoreVerbs):
    """[`StoreVerbs`][] over a store that meets [`MemoryStore`][] only.

    Args:
        store: the host's store (``add``, ``get``, ``supersede``,
            ``delete``, ``entries``, ``select``, ``version``).

    Example:
        ```python
        verbs = contract_of(host_store)      # a ProtocolStore unless it is a StoreVerbs already
        verbs.write([{"type": "fact", "content": "Refunds round half-even."}]).ids
        ```
    """

    commits = False

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def __repr__(self) -> str:
        return "ProtocolStore(%r)" % (self.store,)

    @property
    def version(self) -> Any:
        return self.store.version

    def read(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """The host store's entries with these ids (one ``get`` each), or its
        ``entries(namespace)``."""
        if ids is None:
            return self.store.entries(namespace)
        found = (self.store.get(i) for i in dict.fromkeys(ids))
        return [e for e in found if e is not None and (namespace is None or e.get("namespace") == namespace)]

    def commit(self, change: Change) -> None:
        raise TypeError(
            "%s meets the store protocol only: it writes through its own verbs, not the contract's changes"
            % type(self.store).__name__
        )

    def select(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any) -> Selection:
        """The host store's ``select``; ``marker_cost`` (the agent
        middleware's marker per counted cost, see
        [`MemoryIndex.select`][poolsplit_adapters.index.MemoryIndex.select]) only when it names that
        keyword: the core's ``select``, which a host's store usually calls
        with its options, takes no such keyword (it counts a marker with
        ``token_counter=RenderedCounter(...)``)."""
        return self.store.select(pools, context, **_named(self.store.select, options))

    async def aselect(
        self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any
    ) -> Selection:
        """The host store's ``aselect`` when it has one, else its ``select``."""
        own = getattr(self.store, "aselect", None)
        if own is None:
            return self.select(pools, context, **options)
        return await own(pools, context, **_named(own, options))  # type: ignore[no-any-return]

    def write(self, entries: Iterable[Mapping[str, Any]]) -> WriteReport:
        """The host store's ``put_many`` when it has one, else its ``add``;
        no repeat is reported (its own write decides)."""
        rows = list(entries)
        puts = getattr(self.store, "put_many", None)
        ids = puts(rows) if puts is not None else self.store.add(rows)
        return WriteReport([str(i) for i in ids], [])

    def add(self, entries: Iterable[Mapping[str, Any]]) -> List[str]:
        return self.store.add(list(entries))

    def get(self, entry_id: str) -> Optional[Dict[str, Any]]:
        return self.store.get(entry_id)

    def entries(self, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        return self.store.entries(namespace)

    def supersede(self, entry_id: str, new_entry: Mapping[str, Any]) -> str:
        return self.store.supersede(entry_id, new_entry)

    def delete(self, entry_id: str, *, history: bool = True) -> bool:
        """The host store's ``delete``; ``history=False`` is passed on, and
        refused (nothing deleted) when that ``delete`` takes no ``history``
        flag: it would forget the older versions too.

        Raises:
            TypeError: ``history=False`` and the host's ``delete`` has no such flag.
        """
        if history:
            return self.store.delete(entry_id)
        if not _takes_history(self.store.delete):
            raise TypeError(
                "delete(%r, history=False): %s.delete takes no history flag, so it would forget the older "
                "versions too; nothing was deleted" % (entry_id, type(self.store).__name__)
            )
        return self.store.delete(entry_id, history=False)  # type: ignore[call-arg]


def _takes_history(delete: Any) -> bool:
    """Whether ``delete`` takes a ``history`` keyword (by name, or any
    keyword); a callable whose signature cannot be read is given it."""
    try:
        parameters = inspect.signature(delete).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind is p.VAR_KEYWORD or (p.name == "history" and p.kind is not p.POSITIONAL_ONLY) for p in parameters)


def _named(select: Any, options: Dict[str, Any]) -> Dict[str, Any]:
    """``options`` without ``marker_cost`` unless ``select`` names it."""
    if "marker_cost" not in options:
        return options
    try:
        named = "marker_cost" in inspect.signature(select).parameters
    except (TypeError, ValueError):
        named = False
    return options if named else {k: v for k, v in options.items() if k != "marker_cost"}


def contract_of(store: MemoryStore) -> StoreVerbs:
    """``store`` as the store contract: itself when it is one, else a
    `ProtocolStore` over it (the one place the two are told apart)."""
    return store if isinstance(store, StoreVerbs) else ProtocolStore(store)
