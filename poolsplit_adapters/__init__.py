"""poolsplit-adapters: pool-split memory retrieval for agents.

Reserved token budgets per group of memory types ("pools") so low-priority
kinds of memory still surface, and always-scope behavioural corrections that
load on every call outside every budget. The core selector lives in
[`poolsplit_adapters.poolsplit`][] (stdlib only, vendorable as one file;
``select`` and ``retrieve_pools`` here are its own fill over the faster
best-first source, see `poolsplit_adapters.fastpath`); the framework
adapters live in [`poolsplit_adapters.langchain`][] and
[`poolsplit_adapters.llama_index`][] and are imported on demand so that the
core never pulls a framework in.
"""

from .fastpath import retrieve_pools, select
from .poolsplit import (
    Chosen,
    Dropped,
    EntryError,
    Pool,
    PoolStats,
    PreparedScorer,
    PreparingScorer,
    Reason,
    ScorerCall,
    Selection,
    UnadmittedCorrectionWarning,
    Visibility,
    __version__,
    check_entry,
    default_is_active,
    default_scorer,
    default_token_counter,
    prepare_scorer,
    retrieve,
)


def __getattr__(name: str) -> object:
    # Imported on first use: MemoryIndex pulls in numpy, TiktokenCounter
    # tiktoken; the core selector needs neither.
    if name == "MemoryIndex":
        from .index import MemoryIndex

        return MemoryIndex
    if name == "TiktokenCounter":
        from .tokens import TiktokenCounter

        return TiktokenCounter
    if name == "StandingUnplannedWarning":  # the write path's, beside the core's warning
        from .memory.tasks import StandingUnplannedWarning

        return StandingUnplannedWarning
    raise AttributeError("module 'poolsplit_adapters' has no attribute %r" % name)


__all__ = [
    "__version__",
    "Chosen",
    "Dropped",
    "EntryError",
    "MemoryIndex",
    "Pool",
    "PoolStats",
    "PreparedScorer",
    "PreparingScorer",
    "Reason",
    "ScorerCall",
    "Selection",
    "StandingUnplannedWarning",
    "TiktokenCounter",
    "UnadmittedCorrectionWarning",
    "Visibility",
    "check_entry",
    "default_is_active",
    "default_scorer",
    "default_token_counter",
    "prepare_scorer",
    "retrieve",
    "retrieve_pools",
    "select",
]
