"""Markers that say which layer loaded.

A summary in the context reads like the whole memory unless the model is
told otherwise. A layered marker carries ``layer="summary"`` (or
``"timeline"``) and holds the summary as its text, so the model knows there
is more and can ask for it by id (see
:func:`~poolsplit_adapters.memory.expand.expand`). An entry loaded in full
renders exactly as in plain selection, without a ``layer`` attribute.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from ..poolsplit import Selection
from ..render import BUDGET_REASONS, RenderedContext, marker, omission_line
from .progressive import summary_of

__all__ = ["layer_marker", "render_layers"]

EXPAND_HINT = {
    1: '[1 entry shown as a summary (layer="summary" or "timeline"); its full text is available by id]',
    2: '[%d entries shown as summaries (layer="summary" or "timeline"); their full text is available by id]',
}


def _layer_name(layer: Any) -> str:
    return str(getattr(layer, "value", layer))


def layer_marker(entry: Mapping[str, Any], pool: Optional[str] = None, layer: Any = "full") -> str:
    """:func:`~poolsplit_adapters.render.marker` for one loaded layer.

    ``layer`` "full" gives the plain marker; "summary" and "timeline" give
    the entry's summary as the text and a ``layer`` attribute.

    Example::

        layer_marker({"id": "ep-1", "content": "long...", "summary": "short"}, "episodes", "summary")
        # '<memory id="ep-1" source="" at="" pool="episodes" layer="summary">\\nshort\\n</memory>'
    """
    name = _layer_name(layer)
    if name == "full":
        return marker(entry, pool)
    summary = summary_of(entry)
    if summary is None:
        raise ValueError("entry %r has no summary to render at layer %r" % (entry.get("id"), name))
    # A copy carrying the summary as its text: the caller's entry is not touched.
    text = marker(dict(entry, content=summary), pool)
    head, _, body = text.partition(">\n")  # attribute values are escaped: the first ">\n" ends the head
    return '%s layer="%s">\n%s' % (head, name, body)


def render_layers(selection: Selection, *, with_omissions: bool = True, with_hint: bool = True) -> RenderedContext:
    """:func:`~poolsplit_adapters.render.render_context` for a selection
    whose chosen items carry a ``layer`` (items without one render in full).

    After the omission line comes one hint line when any entry loaded as a
    summary, saying the full text can be fetched by id.
    """
    blocks = [layer_marker(c.entry, c.pool, getattr(c, "layer", "full")) for c in selection.chosen]
    cut = [d for d in selection.dropped if d.reason in BUDGET_REASONS]
    counts: Dict[str, int] = {}
    for item in cut:
        counts[item.pool or "?"] = counts.get(item.pool or "?", 0) + 1
    by_pool = {name: counts[name] for name in selection.stats if name in counts}
    if cut and with_omissions:
        blocks.append(omission_line(by_pool, "by budget"))
    short = sum(1 for c in selection.chosen if _layer_name(getattr(c, "layer", "full")) != "full")
    if short and with_hint:
        blocks.append(EXPAND_HINT[1] if short == 1 else EXPAND_HINT[2] % short)
    return RenderedContext(
        text="\n".join(blocks),
        included_ids=[c.entry.get("id") for c in selection.chosen],
        omitted_ids=[d.entry.get("id") for d in cut],
        omitted_by_pool=by_pool,
    )
