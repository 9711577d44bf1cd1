"""PoolSplitNodePostprocessor: pool budgets for any LlamaIndex pipeline."""

from __future__ import annotations

import datetime
from typing import Any, Callable, List, Optional

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from pydantic import ConfigDict, Field, PrivateAttr

from .._frameworks import (
    cap_round_robin,
    check_pools,
    select_with,
)
from ..poolsplit import Pool, Selection, Visibility, default_scorer
from .events import announce
from .nodes import NodeConverter, llama_counter, node_to_entry


class PoolSplitNodePostprocessor(BaseNodePostprocessor):
    """Re-apply pool budgets to the nodes an earlier stage produced.

    **Put it last.** A similarity cutoff or a reranker placed after it can
    remove the corrections it puts first; placed before it, they can remove
    them before it sees them. For the second case, give ``always_nodes``:
    always-scope nodes (the corrections) that are added back whenever an
    earlier stage dropped them.

    Fields: ``pools``, ``k``, ``token_counter``, ``scorer``, ``project``,
    ``now``, ``always_nodes``, ``show_selection_to_llm``; ``last_selection``
    holds the report of the last call.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pools: List[Pool]
    k: Optional[int] = None
    token_counter: Optional[Callable[[str], int]] = Field(default=None, exclude=True)
    scorer: Callable[..., float] = Field(default=default_scorer, exclude=True)
    project: Optional[str] = None
    now: Optional[datetime.datetime] = None
    always_nodes: List[BaseNode] = Field(default_factory=list)
    visibility: Optional[Visibility] = None
    show_selection_to_llm: bool = False

    _last: Optional[Selection] = PrivateAttr(default=None)

    def model_post_init(self, __context: Any) -> None:
        self.pools = check_pools(self.pools)
        for position, node in enumerate(self.always_nodes):
            if node_to_entry(node, position).get("scope") != "always":
                raise ValueError("always_nodes[%d] (node %r) is not scope 'always'" % (position, node.node_id))
        if self.token_counter is None:
            self.token_counter = llama_counter()

    @classmethod
    def class_name(cls) -> str:
        return "PoolSplitNodePostprocessor"

    @property
    def last_selection(self) -> Optional[Selection]:
        return self._last

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        present = {n.node.node_id for n in nodes}
        restored = [NodeWithScore(node=n) for n in self.always_nodes if n.node_id not in present]
        entries, source = NodeConverter.entries([*restored, *nodes])
        context = {"message": query_bundle.query_str if query_bundle else "", "project": self.project}
        assert self.token_counter is not None
        selection = select_with(self, entries, context)
        self._last = selection
        announce("postprocessor", selection)
        return NodeConverter(self.show_selection_to_llm).to_nodes(cap_round_robin(selection, self.k), source)
