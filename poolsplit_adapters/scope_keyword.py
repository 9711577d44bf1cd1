"""The deprecated ``scope=`` keyword (0.1's name for ``visibility=``),
resolved in one place for every call that still takes it: the package's
``select`` (`compat`), ``MemoryIndex.select`` and
the adapters' options (`checks`).

Its own module because the engine (`index`) takes
the keyword too and must not import the compatibility layer above it;
`compat` keeps the deprecated names themselves.
"""

from __future__ import annotations

import warnings
from typing import Optional

from .poolsplit import Visibility

__all__ = ["resolve_visibility"]


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
