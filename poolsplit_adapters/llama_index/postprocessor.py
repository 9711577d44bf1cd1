"""PoolSplitNodePostprocessor: pool budgets for any LlamaIndex pipeline."""

from __future__ import annotations

from typing import Any, List, Optional

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from pydantic import ConfigDict, Field

from ..settings import ArgumentError
from .events import announce
from .nodes import LlamaIndexSettings, NodeConverter, node_to_entry


class PoolSplitNodePostprocessor(LlamaIndexSettings, BaseNodePostprocessor):
    """Re-apply pool budgets to the nodes an earlier stage produced.

    **Put it last.** A similarity cutoff or a reranker placed after it can
    remove the corrections it puts first; placed before it, they can remove
    them before it sees them. For the second case, give ``always_nodes``:
    always-scope nodes (the corrections) that are added back whenever an
    earlier stage dropped them.

    Its selection settings are those of
    :class:`~poolsplit_adapters.settings.SelectionSettings` (``scope=`` is a
    deprecated alias of ``visibility=``). Every call emits a
    :class:`PoolSplitSelectionEvent`; :attr:`last_selection` is the call
    that finished last (use
    :func:`~poolsplit_adapters.reports.capture_selections` for your own).

    Example::

        post = PoolSplitNodePostprocessor(pools=pools, always_nodes=corrections)
        engine = index.as_query_engine(node_postprocessors=[SimilarityPostprocessor(0.5), post])
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    always_nodes: List[BaseNode] = Field(
        default_factory=list, description="Always-scope nodes put back when an earlier stage dropped them."
    )
    show_selection_to_llm: bool = Field(default=False, description="Keep the poolsplit metadata in the LLM view.")

    def model_post_init(self, __context: Any) -> None:
        for position, node in enumerate(self.always_nodes):
            if node_to_entry(node, position).get("scope") != "always":
                raise ArgumentError("always_nodes[%d] (node %r) is not scope 'always'" % (position, node.node_id))

    @classmethod
    def class_name(cls) -> str:
        return "PoolSplitNodePostprocessor"

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        present = {n.node.node_id for n in nodes}
        restored = [NodeWithScore(node=n) for n in self.always_nodes if n.node_id not in present]
        entries, source = NodeConverter.entries([*restored, *nodes])
        options = self.options_for(query_bundle.query_str if query_bundle else "")
        selection = self.record(self.select_from(entries, options))
        announce("postprocessor", selection)
        return NodeConverter(self.show_selection_to_llm).to_nodes(self.returned(selection, options), source)
