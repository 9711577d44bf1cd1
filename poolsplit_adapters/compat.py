"""Names kept only for 0.1 callers, in one place (each warns when used).

``scope`` names an entry's load tier (``"always"``); the visibility filter
was called ``Scope`` too, and one name with two meanings is the kind of clash
that hides bugs, so the filter became :class:`~poolsplit_adapters.poolsplit.Visibility`
and its keyword ``visibility=``. The package's ``select`` and
``retrieve_pools`` are the core's, plus the deprecated ``scope=`` keyword.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from . import poolsplit
from .poolsplit import Pool, Selection, Visibility

__all__ = ["Scope", "resolve_visibility", "select", "retrieve_pools"]


class Scope(Visibility):
    """Deprecated alias of :class:`~poolsplit_adapters.poolsplit.Visibility`.

    Example::

        Visibility(namespace="tenant-a")   # instead of Scope(namespace="tenant-a")
    """

    def __post_init__(self) -> None:
        warnings.warn("Scope is deprecated; use Visibility", DeprecationWarning, stacklevel=3)
        super().__post_init__()


def resolve_visibility(
    visibility: Optional[Visibility],
    scope: Optional[Visibility] = None,
    stacklevel: int = 3,
    what: str = "the scope= keyword",
) -> Optional[Visibility]:
    """The filter a call asked for: ``visibility=``, or the deprecated
    ``scope=`` (``what`` names it in the warning, e.g. the adapter's
    ``Retriever(scope=...)``). Giving both is a ``TypeError``."""
    if scope is not None:
        warnings.warn("%s is deprecated; use visibility=" % what, DeprecationWarning, stacklevel=stacklevel)
        if visibility is not None:
            raise TypeError("give visibility= only (scope= is its deprecated name)")
        return scope
    return visibility


def select(
    entries: Sequence[Mapping[str, Any]],
    pools: Sequence[Pool],
    context: Optional[Mapping[str, Any]] = None,
    *,
    scope: Optional[Visibility] = None,
    visibility: Optional[Visibility] = None,
    **options: Any,
) -> Selection:
    """:func:`poolsplit_adapters.poolsplit.select`, also taking ``scope=``."""
    view = resolve_visibility(visibility, scope)
    options.setdefault("_stacklevel", 3)  # warnings name the caller of this wrapper
    return poolsplit.select(entries, pools, context, visibility=view, **options)


def retrieve_pools(
    entries: Sequence[Mapping[str, Any]],
    pools: Sequence[Pool],
    context: Optional[Mapping[str, Any]] = None,
    **options: Any,
) -> dict[str, list[Any]]:
    """:func:`poolsplit_adapters.poolsplit.retrieve_pools`, also taking ``scope=``."""
    return select(entries, pools, context, _report=False, _stacklevel=4, **options).pools
