"""Names kept only for 0.1 callers, in one place (each warns when used).

``scope`` names an entry's load tier (``"always"``); the visibility filter
was called ``Scope`` too, and one name with two meanings is the kind of clash
that hides bugs, so the filter became [`Visibility`][]
and its keyword ``visibility=``. The package's ``select`` and
``retrieve_pools`` are the core's (its one fill, with ``layering=``),
plus the deprecated ``scope=`` keyword (resolved by
`resolve_visibility`, which the
engine's ``MemoryIndex.select`` takes too), filled from the best-first
candidate source (`fastpath.BestFirstCandidates`: the list source's
selection, faster on a large list) unless ``candidates=`` names another.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from . import poolsplit
from .fastpath import BestFirstCandidates
from .poolsplit import Pool, Selection, Visibility
from .scope_keyword import resolve_visibility

__all__ = ["Scope", "select", "retrieve_pools"]


class Scope(Visibility):
    """Deprecated alias of [`Visibility`][].

    Example:
        ```python
        Visibility(namespace="tenant-a")   # instead of Scope(namespace="tenant-a")
        ```
    """

    def __post_init__(self) -> None:
        warnings.warn("Scope is deprecated; use Visibility", DeprecationWarning, stacklevel=3)
        super().__post_init__()


def select(
    entries: Sequence[Mapping[str, Any]],
    pools: Sequence[Pool],
    context: Optional[Mapping[str, Any]] = None,
    *,
    scope: Optional[Visibility] = None,
    visibility: Optional[Visibility] = None,
    **options: Any,
) -> Selection:
    """[`poolsplit_adapters.poolsplit.select`][] (with its seams), also taking ``scope=``; its default source is
    the best-first one (the same selection as the core's list source, several times faster on a large list)."""
    view = resolve_visibility(visibility, scope)
    options.setdefault("_stacklevel", 3)  # warnings name the caller of this wrapper
    options.setdefault("candidates", BestFirstCandidates)
    return poolsplit.select(entries, pools, context, visibility=view, **options)


def retrieve_pools(
    entries: Sequence[Mapping[str, Any]],
    pools: Sequence[Pool],
    context: Optional[Mapping[str, Any]] = None,
    **options: Any,
) -> dict[str, list[Any]]:
    """[`poolsplit_adapters.poolsplit.retrieve_pools`][], also taking ``scope=``."""
    return select(entries, pools, context, _report=False, _stacklevel=4, **options).pools
