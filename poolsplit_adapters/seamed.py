"""The fill's seams under their 0.3 home: every name here is the core's own object.

The one fill, [`fill_pools`][poolsplit_adapters.poolsplit.fill_pools], its list source
[`ListCandidates`][poolsplit_adapters.poolsplit.ListCandidates], its ``select`` (with ``layering=`` and
``candidates=``) and ``retrieve_pools`` live in the core (`poolsplit_adapters.poolsplit`); this module only names
them for callers of 0.3.
"""

from __future__ import annotations

from .poolsplit import CountedSelection, ListCandidates, fill_pools, retrieve_pools, select

__all__ = ["CountedSelection", "ListCandidates", "fill_pools", "select", "retrieve_pools"]
