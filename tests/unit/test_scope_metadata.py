"""A scope that reads "always" only up to case or spaces, in the metadata
the adapters build entries from, is refused with the object and the field
(as every write path refuses it): scope is exact, so the correction would
silently be contextual and never load first."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore, TextNode

from poolsplit_adapters import EntryError, Pool
from poolsplit_adapters.langchain import PoolSplitCompressor
from poolsplit_adapters.langchain import PoolSplitRetriever as LangChainRetriever
from poolsplit_adapters.llama_index import PoolSplitNodePostprocessor
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaRetriever
from poolsplit_adapters.poolsplit import near_miss_scope

POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("notes", 100, 3, ("note",))]


@pytest.mark.parametrize("scope", ["ALWAYS", "Always", " always", "always\n"])
def test_every_adapter_names_the_object_and_the_scope_field(scope):
    meta = {"type": "correction", "scope": scope}
    expected = "%s 'fix': metadata field 'scope' is %r, not exactly 'always': scope is exact, so it would be " \
        "contextual and never load first"  # fmt: skip
    docs = [
        Document("Deploy notes.", id="n1", metadata={"type": "note"}),
        Document("Use cents.", id="fix", metadata=meta),
    ]
    nodes = [
        TextNode(text="Deploy notes.", id_="n1", metadata={"type": "note"}),
        TextNode(text="Use cents.", id_="fix", metadata=dict(meta)),
    ]
    attempts = [
        ("document", lambda: LangChainRetriever(documents=docs, pools=POOLS)),
        ("document", lambda: PoolSplitCompressor(pools=POOLS).compress_documents(docs, "deploy")),
        ("node", lambda: LlamaRetriever(POOLS, nodes)),
        (
            "node",
            lambda: PoolSplitNodePostprocessor(pools=POOLS).postprocess_nodes([NodeWithScore(node=n) for n in nodes]),
        ),
    ]
    for kind, attempt in attempts:
        with pytest.raises(EntryError) as info:
            attempt()
        assert str(info.value) == expected % (kind, scope)
        assert (info.value.field, info.value.entry_id, info.value.index) == ("scope", "fix", 1)
    assert docs[1].metadata == meta and nodes[1].metadata == meta  # nothing the caller passed is changed


def test_only_near_misses_are_refused():
    # "al ways" and "allways" are one slip of typing away (refused too); "ways" and "never" are other words
    scopes = ("always", "ALWAYS", " Always ", "al ways", "allways", "ways", "", None, 1, "never")
    assert [near_miss_scope(s) for s in scopes] == [
        False, True, True, True, True, False, False, False, False, False,
    ]  # fmt: skip
    retriever = LangChainRetriever(
        documents=[Document("Use cents.", id="fix", metadata={"type": "correction", "scope": "always"})], pools=POOLS
    )
    assert [d.id for d in retriever.invoke("cents")] == ["fix"]
