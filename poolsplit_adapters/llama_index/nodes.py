"""LlamaIndex node <-> entry conversion, shared by the adapters."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional, Union

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, TextNode

from ..convert import SELECTION_KEY, entry_from, index_from, loaded_text, selection_metadata, stored_parts
from ..index import MemoryIndex
from ..poolsplit import Chosen, Scorer, TokenCounter
from ..recall import merge_recalled

AnyNode = Union[BaseNode, NodeWithScore]


def node_to_entry(node: AnyNode, position: int = 0, *, type_key: str = "type") -> dict[str, Any]:
    """The entry for a node: its metadata, ``content`` = its text (no
    metadata), ``id`` = its node id. ``type_key``: the metadata key that
    holds the node's type (a retriever's ``type_key``): its value is the
    entry's ``type``, and a node without it has none (a ``"note"``), as the
    store's type filters found it, whatever its metadata ``"type"`` says.

    Raises:
        EntryError: malformed metadata, naming the node and the field.
        TypeError: ``node`` is neither a node nor a ``NodeWithScore``.
    """
    text, metadata, node_id, _ = _parts(node, position)
    if type_key != "type":
        metadata = {k: v for k, v in metadata.items() if k != "type"}
        if metadata.get(type_key) is not None:  # None: no type (IS_EMPTY finds it as untyped)
            metadata["type"] = metadata[type_key]
    return entry_from(text, metadata, node_id, kind="node", position=position)


def _parts(node: Any, position: int) -> tuple[str, dict[str, Any], str, BaseNode]:
    """(text, metadata, id, the node itself) of a node or ``NodeWithScore``."""
    if not isinstance(node, (BaseNode, NodeWithScore)):
        raise TypeError(
            "nodes[%d] must be a llama_index node (TextNode, Document, ...) or NodeWithScore, got %s"
            % (position, type(node).__name__)
        )
    base = node.node if isinstance(node, NodeWithScore) else node
    # A plain TextNode's text without metadata is its ``text`` (what
    # get_content(MetadataMode.NONE) returns for it, without building and
    # discarding a metadata string per node); other kinds say for themselves.
    text = base.text if type(base) is TextNode else base.get_content(metadata_mode=MetadataMode.NONE)
    return text, base.metadata, base.node_id, base


class NodeConverter:
    """Shared by the retriever and the postprocessor: nodes in, nodes out.

    Example:
        ```python
        entries, source = NodeConverter.entries(nodes)
        selection = select(entries, pools)
        returned = NodeConverter(show_selection_to_llm=False).to_nodes(selection.chosen, source)
        ```
    """

    def __init__(self, show_selection_to_llm: bool) -> None:
        self.show = show_selection_to_llm

    @staticmethod
    def entries(
        nodes: Sequence[AnyNode], *, recalled: bool = False, type_key: str = "type"
    ) -> tuple[list[dict[str, Any]], dict[int, BaseNode]]:
        """Entries and the way back to each node. ``recalled``: nodes come
        from several searches of one index (see
        `merge_recalled`); ``type_key``: as
        [`node_to_entry`][]'s."""
        items = list(nodes)
        if recalled:
            items = merge_recalled(items, key=lambda n: n.node.node_id if isinstance(n, NodeWithScore) else n.node_id)
        entries, source = [], {}
        for position, node in enumerate(items):
            entry = node_to_entry(node, position, type_key=type_key)
            entries.append(entry)
            source[id(entry)] = node.node if isinstance(node, NodeWithScore) else node
        return entries, source

    @staticmethod
    def index(
        nodes: Sequence[AnyNode], token_counter: TokenCounter, prepare_for: Sequence[Scorer] = ()
    ) -> tuple[MemoryIndex, dict[int, BaseNode]]:
        """A [`MemoryIndex`][] over ``nodes`` (built
        once, every cost counted in one batch, with what ``prepare_for``'s
        scorers rank by) and the way back to each node; fails as
        `entries` would."""
        return index_from(nodes, _parts, kind="node", token_counter=token_counter, prepare_for=prepare_for)

    def to_nodes(
        self, chosen: Sequence[Chosen], source: Mapping[int, BaseNode], upstream: Optional[Mapping[int, float]] = None
    ) -> list[NodeWithScore]:
        """The chosen entries as nodes, each scored by the selection (its
        ``NodeWithScore.score``, as a reranker's). ``upstream``: the score
        each entry's node came with from an earlier stage (by ``id`` of the
        entry), kept as ``metadata["poolsplit"]["upstream_score"]``."""
        scores = [c.score for c in chosen if c.score is not None]
        # Never None: several postprocessors drop score=None. Always-scope
        # nodes rank above everything returned with them.
        always_score = (max(scores) if scores else 0.0) + 1.0
        out = []
        for c in chosen:
            original = source[id(c.entry)]
            # One copy with the new fields (each a new object, the caller's
            # untouched), not three validated assignments after the copy.
            made = selection_metadata(c)
            if upstream is not None and id(c.entry) in upstream:
                made["upstream_score"] = upstream[id(c.entry)]
            update: dict[str, Any] = {
                "metadata": {**original.metadata, SELECTION_KEY: made},
                "excluded_embed_metadata_keys": [*original.excluded_embed_metadata_keys, SELECTION_KEY],
            }
            if not self.show:
                update["excluded_llm_metadata_keys"] = [*original.excluded_llm_metadata_keys, SELECTION_KEY]
            node = original.model_copy(update=update)
            if str(c.layer) != "full":  # progressive loading: the summary, full text by id (expand tool)
                node.set_content(loaded_text(c, original.get_content(metadata_mode=MetadataMode.NONE)))
            out.append(NodeWithScore(node=node, score=always_score if c.always else float(c.score or 0.0)))
        return out


def nodes_from(entries: Iterable[Mapping[str, Any]]) -> list[TextNode]:
    """Entries as ``TextNode``s (metadata = every key but content and id),
    e.g. to build a ``VectorStoreIndex`` from a JSONL store. Only a node's
    text is embedded: every metadata key is in its
    ``excluded_embed_metadata_keys`` (`stored_parts`)."""
    out = []
    for entry in entries:
        text, metadata = stored_parts(entry)
        node = TextNode(text=text, metadata=metadata, excluded_embed_metadata_keys=list(metadata))
        if entry.get("id"):
            node.id_ = entry["id"]
        out.append(node)
    return out
