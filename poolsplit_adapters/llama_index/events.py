"""The instrumentation event every LlamaIndex adapter emits per selection."""

from __future__ import annotations

from typing import Any, Optional

from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index_instrumentation.base import BaseEvent
from pydantic import PrivateAttr

from ..poolsplit import Selection
from ..reports import EventPayload, event_payload

dispatcher = get_dispatcher(__name__)


class PoolSplitSelectionEvent(BaseEvent):
    """Emitted once per selection: who selected (``source``: ``"retriever"``,
    ``"postprocessor"`` or ``"memory"``) and ``summary``, the selection's
    JSON form (``render.selection_dict``). The event carries the span of the
    call that selected, so a handler can tell concurrent calls apart.

    Example:
        ```python
        class Log(BaseEventHandler):
            def handle(self, event, **kwargs):
                if isinstance(event, PoolSplitSelectionEvent):
                    print(event.source, event.summary["chosen"])
        get_dispatcher().add_event_handler(Log())
        ```
    """

    source: str
    summary: dict[str, Any]
    _payload: Optional[EventPayload] = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "PoolSplitSelectionEvent"

    def all_dropped(self) -> list[dict[str, Any]]:
        """Every left-out entry (``summary["dropped"]`` lists the first few
        per pool and reason), built when asked."""
        if self._payload is not None:
            return self._payload.all_dropped()
        if self.summary.get("dropped_complete"):
            return list(self.summary["dropped"])
        raise ValueError("this event lists a sample of what did not load; the full list is on the event announce made")


def announce(source: str, selection: Selection) -> None:
    """Emit the event for ``selection``."""
    payload = event_payload(selection)
    event = PoolSplitSelectionEvent(source=source, summary=dict(payload))
    event._payload = payload
    dispatcher.event(event)
