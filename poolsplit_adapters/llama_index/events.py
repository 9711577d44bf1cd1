"""The instrumentation event every LlamaIndex adapter emits per selection."""

from __future__ import annotations

from typing import Any

from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index_instrumentation.base import BaseEvent

from ..poolsplit import Selection
from ..reports import event_payload

dispatcher = get_dispatcher(__name__)


class PoolSplitSelectionEvent(BaseEvent):
    """Emitted once per selection: who selected (``source``: ``"retriever"``,
    ``"postprocessor"`` or ``"memory"``) and ``summary``, the selection's
    JSON form (``render.selection_dict``). The event carries the span of the
    call that selected, so a handler can tell concurrent calls apart.

    Example::

        class Log(BaseEventHandler):
            def handle(self, event, **kwargs):
                if isinstance(event, PoolSplitSelectionEvent):
                    print(event.source, event.summary["chosen"])
        get_dispatcher().add_event_handler(Log())
    """

    source: str
    summary: dict[str, Any]

    @classmethod
    def class_name(cls) -> str:
        return "PoolSplitSelectionEvent"


def announce(source: str, selection: Selection) -> None:
    """Emit the event for ``selection``."""
    dispatcher.event(PoolSplitSelectionEvent(source=source, summary=event_payload(selection)))
