"""LlamaIndex node <-> entry conversion, shared by the adapters."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore

from ..checks import check_flag
from ..convert import SELECTION_KEY, entries_of, index_from, loaded_text, selection_metadata
from ..index import MemoryIndex
from ..poolsplit import Chosen, Scorer, TokenCounter
from ..recall import merge_recalled
from ..stores.vectorstores.llama_index_nodes import AnyNode as AnyNode
from ..stores.vectorstores.llama_index_nodes import node_parts as _parts
from ..stores.vectorstores.llama_index_nodes import node_to_entry as node_to_entry
from ..stores.vectorstores.llama_index_nodes import nodes_from as nodes_from


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
        self.show = check_flag(show_selection_to_llm, "show_selection_to_llm")

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
        to_entry = functools.partial(node_to_entry, type_key=type_key)
        return entries_of(items, to_entry, lambda n: n.node if isinstance(n, NodeWithScore) else n)

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
