"""PoolSplitNodePostprocessor: pool budgets for any LlamaIndex pipeline."""

from __future__ import annotations

from typing import Any, ClassVar, Optional

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from pydantic import ConfigDict, Field

from ..call import select_given
from ..settings import AdapterSettings, Framework
from ..stores.vectorstores.llama_index_nodes import check_always_nodes, query_text, scored_nodes
from .events import announce
from .nodes import NodeConverter


class PoolSplitNodePostprocessor(AdapterSettings, BaseNodePostprocessor):
    """Re-apply pool budgets to the nodes an earlier stage produced.

    **Put it last.** A similarity cutoff or a reranker placed after it can
    remove the corrections it puts first; placed before it, they can remove
    them before it sees them. For the second case, give ``always_nodes``:
    always-scope nodes (the corrections) that are added back whenever an
    earlier stage dropped them.

    Its selection settings are those of
    `AdapterSettings` (``token_counter`` defaults to
    LlamaIndex's tokenizer, the one ``Memory`` uses). Every call emits a
    [`PoolSplitSelectionEvent`][]; `last_selection` is the call
    that finished last (use
    [`capture_selections`][] for your own).

    Each returned node's score is the selection's, as a reranker's is; the
    score it came with is kept as ``metadata["poolsplit"]["upstream_score"]``.

    Example:
        ```python
        post = PoolSplitNodePostprocessor(pools=pools, always_nodes=corrections)
        engine = index.as_query_engine(node_postprocessors=[SimilarityPostprocessor(0.5), post])
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    framework: ClassVar[Framework] = Framework.LLAMA_INDEX

    always_nodes: list[BaseNode] = Field(
        default_factory=list, description="Always-scope nodes put back when an earlier stage dropped them."
    )
    show_selection_to_llm: bool = Field(default=False, description="Keep the poolsplit metadata in the LLM view.")

    def __init__(self, *given: Any, **data: Any) -> None:
        check_always_nodes(data.get("always_nodes", ()))  # before pydantic, which would make a dict a node
        super().__init__(*given, **data)  # AdapterSettings': keywords only

    @classmethod
    def class_name(cls) -> str:
        return "PoolSplitNodePostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> list[NodeWithScore]:
        nodes = list(scored_nodes(nodes))  # checked, each node id once
        present = {n.node.node_id for n in nodes}
        restored = [NodeWithScore(node=n) for n in self.always_nodes if n.node_id not in present]
        given = [*restored, *nodes]
        entries, source = NodeConverter.entries(given)
        # The earlier stage's scores, kept beside the selection's (which replaces them, as a reranker's does).
        upstream = {id(e): float(n.score) for e, n in zip(entries, given) if n.score is not None}
        selection, returned = select_given(self, query_text(query_bundle), entries)
        announce("postprocessor", selection)
        return NodeConverter(self.show_selection_to_llm).to_nodes(returned, source, upstream)
