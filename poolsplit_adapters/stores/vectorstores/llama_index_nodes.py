"""A LlamaIndex node <-> an entry, as the vector-store engines read and
write it (the adapters convert with the same functions: `nodes` re-exports
them)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Union

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle, TextNode

from ...convert import entry_from, stored_parts
from ...errors import ArgumentError, argument_error
from ...poolsplit import check_entry

__all__ = [
    "AnyNode",
    "check_always_nodes",
    "check_query",
    "node_parts",
    "node_to_entry",
    "nodes_from",
    "one_node_per_id",
    "query_text",
    "scored_nodes",
]

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
    text, metadata, node_id, _ = node_parts(node, position)
    if type_key != "type":
        metadata = {k: v for k, v in metadata.items() if k != "type"}
        if metadata.get(type_key) is not None:  # None: no type (IS_EMPTY finds it as untyped)
            metadata["type"] = metadata[type_key]
    return entry_from(text, metadata, node_id, kind="node", position=position)


def node_parts(node: Any, position: int) -> tuple[str, dict[str, Any], str, BaseNode]:
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


def nodes_from(entries: Iterable[Mapping[str, Any]]) -> list[TextNode]:
    """Entries as ``TextNode``s (metadata = every key but content and id),
    e.g. to build a ``VectorStoreIndex`` from a JSONL store. Only a node's
    text is embedded: every metadata key is in its
    ``excluded_embed_metadata_keys`` (`stored_parts`).

    Raises:
        EntryError: a malformed entry (the core's `check_entry`, naming its
            position and field): unchecked, a content of None became the
            text "None", a ``type`` of 3 a node no pool's filter recalls,
            and an int id a pydantic error from inside ``TextNode``.
    """
    out = []
    for position, entry in enumerate(entries):
        check_entry(entry, position)
        text, metadata = stored_parts(entry)
        node = TextNode(text=text, metadata=metadata, excluded_embed_metadata_keys=list(metadata))
        if entry.get("id"):
            node.id_ = entry["id"]
        out.append(node)
    return out


def _content(node: BaseNode) -> tuple[str, Any]:
    """What makes two nodes under one id the same node: text and metadata."""
    return node.get_content(metadata_mode=MetadataMode.NONE), node.metadata


def one_node_per_id(nodes: Sequence[Any]) -> None:
    """Refuse two nodes with one id. LlamaIndex's ``BaseRetriever.retrieve``
    keeps the first node of each id and drops the rest after our selection
    chose them, so a second correction under a taken id would be reported
    loaded and never reach the model."""
    ids = [n.node.node_id if isinstance(n, NodeWithScore) else getattr(n, "node_id", None) for n in nodes]
    if len(set(ids)) == len(ids):
        return
    first: dict[Any, int] = {}
    for position, node_id in enumerate(ids):
        if node_id in first:
            raise ArgumentError(
                "nodes[%d] and nodes[%d] share the node id %r: LlamaIndex's retriever returns one node per id, "
                "so one of them would be lost; give each node its own id_" % (first[node_id], position, node_id)
            )
        first[node_id] = position


def scored_nodes(nodes: Sequence[Any]) -> Sequence[NodeWithScore]:
    """``nodes`` when every item is a ``NodeWithScore`` (what a node
    postprocessor is given), else a ``TypeError`` naming the first that is
    not, each node id once. Why: a list of plain nodes (or a None) failed
    inside the postprocessor with ``'TextNode' object has no attribute
    'node'``, which names neither the item nor what to pass instead; a node
    given twice (two retrievers merged by hand) was selected, shown and
    counted against its pool twice, so the first is kept (LlamaIndex's own
    rule of one node per id); two nodes with one id and other content are
    refused, as the retriever refuses them (`one_node_per_id`). ``nodes``
    not a list (None, a generator) is an `ArgumentError` naming it: it failed
    inside with ``'NoneType' object is not iterable``."""
    if isinstance(nodes, (str, bytes, Mapping)) or not isinstance(nodes, Sequence):
        raise argument_error("nodes", "a list of NodeWithScore", nodes)
    first: dict[str, int] = {}
    for position, node in enumerate(nodes):
        if not isinstance(node, NodeWithScore):
            hint = ": wrap it as NodeWithScore(node=...)" if isinstance(node, BaseNode) else ""
            raise TypeError(
                "nodes[%d] must be a NodeWithScore (what a retriever returns), got %s%s"
                % (position, type(node).__name__, hint)
            )
        kept = first.setdefault(node.node.node_id, position)
        if kept != position and _content(nodes[kept].node) != _content(node.node):
            raise ArgumentError(
                "nodes[%d] and nodes[%d] share the node id %r with other content: one of them would be lost; "
                "give each node its own id_" % (kept, position, node.node.node_id)
            )
    if len(first) < len(nodes):
        return [nodes[position] for position in sorted(first.values())]
    return nodes


def check_query(query: Any) -> None:
    """A retriever's query: a string or a ``QueryBundle``. Why checked:
    ``retrieve_with_selection(3)`` failed inside LlamaIndex's instrumentation
    with a pydantic error about ``RetrievalStartEvent``, and ``b"deploy"``
    with ``'bytes' object has no attribute 'query_str'``."""
    if not isinstance(query, (str, QueryBundle)):
        raise argument_error("query", "a string or a QueryBundle", query)


def query_text(query_bundle: Any) -> str:
    """The query of a node postprocessor's ``query_bundle`` ("" for None).
    Why checked: ``postprocess_nodes(nodes, "refunds")`` (the query as the
    second argument, LlamaIndex's ``query_bundle``) failed inside with
    ``'str' object has no attribute 'query_str'``."""
    if query_bundle is None:
        return ""
    if not isinstance(query_bundle, QueryBundle):
        raise argument_error("query_bundle", "a QueryBundle or None (give a string as query_str=)", query_bundle)
    return query_bundle.query_str


def check_always_nodes(nodes: Any) -> None:
    """A node postprocessor's ``always_nodes``: a list of nodes, each
    always-scope (put back when an earlier stage dropped it, so one that
    is not would be a contextual node smuggled past the budgets). Checked
    before pydantic sees them: a dict in the list failed inside pydantic
    with "Can't instantiate abstract class BaseNode", naming no item."""
    if isinstance(nodes, (str, bytes, Mapping)) or not isinstance(nodes, Sequence):
        raise ArgumentError("always_nodes must be a list of nodes, got %s" % type(nodes).__name__)
    for position, node in enumerate(nodes):
        if not isinstance(node, BaseNode):
            raise ArgumentError(
                "always_nodes[%d] must be a llama_index node (TextNode, ...), got %s" % (position, type(node).__name__)
            )
        if node_to_entry(node, position).get("scope") != "always":
            raise ArgumentError("always_nodes[%d] (node %r) is not scope 'always'" % (position, node.node_id))
