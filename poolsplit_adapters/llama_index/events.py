"""The instrumentation event every LlamaIndex adapter emits per selection."""

from __future__ import annotations

from typing import Any, Dict

from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index_instrumentation.base import BaseEvent

from .._frameworks import (
    selection_digest,
)
from ..poolsplit import Selection

dispatcher = get_dispatcher(__name__)


class PoolSplitSelectionEvent(BaseEvent):
    """Emitted once per selection: who selected (``source``) and a
    JSON-friendly digest of what loaded and why the rest did not."""

    source: str
    summary: Dict[str, Any]

    @classmethod
    def class_name(cls) -> str:
        return "PoolSplitSelectionEvent"


def announce(source: str, selection: Selection) -> None:
    dispatcher.event(PoolSplitSelectionEvent(source=source, summary=selection_digest(selection)))
