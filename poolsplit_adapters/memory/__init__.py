"""The memory lifecycle around the selector (seeds 002/003), framework-neutral."""

from .expand import UnknownEntryError, expand
from .metrics import TokenMetrics, token_metrics
from .progressive import Layer, progressive_fill, progressive_select, wants_detail
from .tasks import DEFAULT_PRESETS, TaskDetection, detect_task_type, resolve_pools, task_pools

__all__ = [
    "DEFAULT_PRESETS",
    "Layer",
    "TaskDetection",
    "TokenMetrics",
    "UnknownEntryError",
    "detect_task_type",
    "expand",
    "progressive_fill",
    "progressive_select",
    "resolve_pools",
    "task_pools",
    "token_metrics",
    "wants_detail",
]
