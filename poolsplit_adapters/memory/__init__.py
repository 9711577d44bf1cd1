"""The memory lifecycle around the selector (seeds 002 and 003), framework-neutral.

Recall and promote are the selector's job; this room holds the rest of the
loop: which turns stay in the working set (`working_set`), what may be
written to long-term memory (`write_gate`), task-aware pool plans
(`tasks`), progressive loading and its token metrics
(`progressive`, `metrics`) and the expand lookup (`expand`);
consolidation's building blocks: duplicates (`duplicates`), versions
with validity times (`validity`), expiry (`expiry`) and the
optional model-driven consolidator (`consolidate`).

The embedding scorer and the vector-store score rule
(`poolsplit_adapters.relevance.embedding`,
`poolsplit_adapters.relevance.similarity`: scoring, so they live with
it) need numpy; their names are loaded on first use from here too, so
``import poolsplit_adapters.memory`` works without it.
"""

from typing import Any

from .consolidate import ConsolidationOp, ConsolidationResult, OpRefusal, aconsolidate, consolidate
from .duplicates import Duplicate, DuplicateFinder, DuplicateKind, record_repeat
from .expand import UnknownEntryError, expand
from .expiry import active_at, is_expired
from .metrics import TokenMetrics, token_metrics
from .progressive import Layer, ProgressiveLayers, SelectOptions, progressive_fill, progressive_select, wants_detail
from .tasks import DEFAULT_PRESETS, TaskDetection, detect_task_type, resolve_pools, task_pools
from .validity import Version, as_of, history, retire, supersede, valid_at
from .working_set import Demotion, Turn, View, plan_demotion, split_turns
from .write_gate import GateReport, Proposal, Refusal, WriteGate, utc_stamp

# name -> module, imported on first access (numpy, except the hash embedder).
# The embedding scorer and the score rule are scoring (relevance/), named
# here too: ``from poolsplit_adapters.memory import EmbeddingScorer`` is how
# the docs import it.
_LAZY = {
    "EmbeddingScorer": "poolsplit_adapters.relevance.embedding",
    "EmbeddingFallbackWarning": "poolsplit_adapters.relevance.embedding",
    "HashEmbedder": "poolsplit_adapters.memory.hash_embedding",
    "StoreMetric": "poolsplit_adapters.relevance.similarity",
    "relevance_from_store_score": "poolsplit_adapters.relevance.similarity",
    "metric_for": "poolsplit_adapters.relevance.similarity",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "ConsolidationResult",
    "Duplicate",
    "DuplicateFinder",
    "DuplicateKind",
    "ConsolidationOp",
    "OpRefusal",
    "Version",
    "aconsolidate",
    "active_at",
    "as_of",
    "consolidate",
    "history",
    "is_expired",
    "record_repeat",
    "retire",
    "supersede",
    "valid_at",
    "DEFAULT_PRESETS",
    "EmbeddingFallbackWarning",
    "EmbeddingScorer",
    "HashEmbedder",
    "StoreMetric",
    "Demotion",
    "GateReport",
    "Layer",
    "Proposal",
    "Refusal",
    "TaskDetection",
    "TokenMetrics",
    "Turn",
    "UnknownEntryError",
    "View",
    "WriteGate",
    "detect_task_type",
    "expand",
    "metric_for",
    "plan_demotion",
    "progressive_fill",
    "progressive_select",
    "ProgressiveLayers",
    "SelectOptions",
    "relevance_from_store_score",
    "resolve_pools",
    "split_turns",
    "task_pools",
    "token_metrics",
    "utc_stamp",
    "wants_detail",
]
