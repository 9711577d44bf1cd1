"""Construction over framework objects: one check per object (by the
index), the same entries, selections and errors as converting one by one."""

from __future__ import annotations

import copy
import datetime
from typing import Any, Callable, Dict, List, Tuple

import pytest
import strategies
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document
from llama_index.core.schema import Document as LlamaDocument
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from poolsplit_adapters import EntryError, MemoryIndex, Pool
from poolsplit_adapters.langchain import PoolSplitCompressor
from poolsplit_adapters.langchain import PoolSplitRetriever as LangChainRetriever
from poolsplit_adapters.langchain.documents import DocumentConverter
from poolsplit_adapters.llama_index import PoolSplitNodePostprocessor
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaIndexRetriever
from poolsplit_adapters.llama_index.nodes import NodeConverter
from poolsplit_adapters.poolsplit import default_token_counter
from poolsplit_adapters.render import selection_dict
from poolsplit_adapters.tokens import TokenizerCounter

pytestmark = pytest.mark.filterwarnings("ignore::poolsplit_adapters.poolsplit.UnadmittedCorrectionWarning")

NOW = datetime.datetime(2026, 7, 7)
COUNTERS: Dict[str, Callable[[str], int]] = {
    "len/4": default_token_counter,
    "words, batched": TokenizerCounter(str.split),  # has count_many: the index's batch path
}
# What hand-written or loader metadata gets wrong, each refused by a check.
MALFORMED: List[Dict[str, Any]] = [
    {"tags": "ops"},
    {"created": 2026},
    {"base_priority": "high"},
    {"base_priority": float("nan")},
    {"token_count": -3},
    {"token_count": True},
    {"token_count": 2.0},
    {"scope": 1},
]


@st.composite
def parts(draw: Any, valid: bool) -> Tuple[str, Dict[str, Any], Any]:
    """(text, metadata, object id) of one framework object."""
    entry = draw(strategies.entries())
    text = entry.pop("content")
    object_id = entry.pop("id", None)
    if object_id is not None and draw(st.booleans()):
        entry["id"] = object_id  # the id from metadata instead of the object
        object_id = None
    if (
        valid
        and entry.get("token_count") is not None
        and not (type(entry["token_count"]) is int and entry["token_count"] > 0)
    ):
        del entry["token_count"]
    if not valid and draw(st.integers(0, 3)) == 0:
        entry.update(draw(st.sampled_from(MALFORMED)))
    if draw(st.integers(0, 5)) == 0:
        entry["poolsplit"] = {"pool": "stale", "score": 9.0}  # an earlier selection's, not input
    return text, entry, object_id


def documents(valid: bool) -> Any:
    def build(drawn: Tuple[str, Dict[str, Any], Any]) -> Any:
        text, metadata, object_id = drawn
        return Document(page_content=text, metadata=metadata, id=object_id)

    one = parts(valid).map(build)
    if not valid:
        one = st.one_of(one, one, one, st.just("not a document"))
    return st.lists(one, max_size=20)


def nodes(valid: bool) -> Any:
    def build(drawn_kind: Tuple[Tuple[str, Dict[str, Any], Any], str]) -> Any:
        (text, metadata, object_id), kind = drawn_kind
        ids = {"id_": object_id} if object_id else {}
        if kind == "document":  # not a plain TextNode: its own get_content
            return LlamaDocument(text=text, metadata=metadata, **ids)
        node = TextNode(text=text, metadata=metadata, **ids)
        return NodeWithScore(node=node, score=0.5) if kind == "scored" else node

    one = st.tuples(parts(valid), st.sampled_from(["text", "text", "scored", "document"])).map(build)
    if not valid:
        one = st.one_of(one, one, one, st.just(42))
    return st.lists(one, max_size=20)


def outcome(build: Callable[[], Tuple[MemoryIndex, Dict[int, Any]]], queries: List[Any], pools: List[Pool]) -> Any:
    """What a construction gives: its error, or its entries, the objects
    they lead back to and the selections of ``queries``."""
    try:
        index, source = build()
    except (EntryError, TypeError) as err:
        return type(err), str(err), getattr(err, "index", None), getattr(err, "field", None)
    entries = index.entries
    return (
        [dict(e) for e in entries],
        [id(source[id(e)]) for e in entries],
        [selection_dict(index.select(pools, context, now=NOW)) for context in queries],
    )


def one_by_one(converter: Any, objects: List[Any], counter: Callable[[str], int]) -> Any:
    """How the retrievers built their index before: every object converted
    and checked, then indexed (checked again)."""

    def build() -> Tuple[MemoryIndex, Dict[int, Any]]:
        entries, source = converter.entries(objects)
        return MemoryIndex(entries, token_counter=counter), source

    return build


@given(
    documents(valid=False),
    strategies.pools(),
    st.lists(strategies.contexts, max_size=3),
    st.sampled_from(sorted(COUNTERS)),
)
def test_documents_index_as_one_by_one_conversion(docs, pools, queries, counter_name):
    counter = COUNTERS[counter_name]
    expected = outcome(one_by_one(DocumentConverter, docs, counter), queries, pools)
    assert outcome(lambda: DocumentConverter.index(docs, counter), queries, pools) == expected


@given(
    nodes(valid=False),
    strategies.pools(),
    st.lists(strategies.contexts, max_size=3),
    st.sampled_from(sorted(COUNTERS)),
)
def test_nodes_index_as_one_by_one_conversion(items, pools, queries, counter_name):
    counter = COUNTERS[counter_name]
    expected = outcome(one_by_one(NodeConverter, items, counter), queries, pools)
    assert outcome(lambda: NodeConverter.index(items, counter), queries, pools) == expected


def _unsealed(document: Document) -> Tuple[Any, ...]:
    metadata = dict(document.metadata)
    mark = dict(metadata.pop("poolsplit"))
    del mark["call"], mark["seal"]  # per call by design
    return document.id, document.page_content, metadata, mark


@given(documents(valid=True), strategies.pools(), strategies.contexts, st.sampled_from(sorted(COUNTERS)))
def test_langchain_retriever_loads_what_the_one_by_one_path_loads(docs, pools, context, counter_name):
    # The compressor converts the same documents one by one on every call:
    # the retriever's index, built in one pass, must give the same answer.
    settings = {"pools": pools, "now": NOW, "token_counter": COUNTERS[counter_name]}
    message = (context or {}).get("message", "")
    retriever = LangChainRetriever(documents=docs, **settings)
    compressor = PoolSplitCompressor(**settings)
    got = retriever.invoke(message)
    expected = compressor.compress_documents(docs, message)
    assert [_unsealed(d) for d in got] == [_unsealed(d) for d in expected]
    assert selection_dict(retriever.last_selection) == selection_dict(compressor.last_selection)


@given(nodes(valid=True), strategies.pools(), strategies.contexts, st.sampled_from(sorted(COUNTERS)))
def test_llama_index_retriever_loads_what_the_one_by_one_path_loads(items, pools, context, counter_name):
    # LlamaIndex's retrieve() returns one node per node id: distinct ids here.
    items = list({_base(n).node_id: n for n in items}.values())
    settings = {"now": NOW, "token_counter": COUNTERS[counter_name]}
    message = (context or {}).get("message", "")
    retriever = LlamaIndexRetriever(pools, nodes=items, **settings)
    post = PoolSplitNodePostprocessor(pools=pools, **settings)
    scored = [n if isinstance(n, NodeWithScore) else NodeWithScore(node=n) for n in items]
    got = retriever.retrieve(message)
    expected = post.postprocess_nodes(scored, query_bundle=QueryBundle(message))
    given = {n.node.node_id: n.score for n in scored}

    def without_upstream(node: Any) -> Any:  # the postprocessor keeps the score a node came with
        selection = dict(node.node.metadata["poolsplit"])
        assert selection.pop("upstream_score", None) == given[node.node.node_id]
        return {**node.node.metadata, "poolsplit": selection}

    assert [(n.node.node_id, n.node.get_content(), n.node.metadata, n.score) for n in got] == [
        (n.node.node_id, n.node.get_content(), without_upstream(n), n.score) for n in expected
    ]
    assert selection_dict(retriever.last_selection) == selection_dict(post.last_selection)


def _base(node: Any) -> Any:
    return node.node if isinstance(node, NodeWithScore) else node


def test_the_first_malformed_document_is_named_whatever_fails_later():
    good = Document(page_content="fine", id="ok")
    bad_tags = Document(page_content="x", id="bad-tags", metadata={"tags": "ops"})
    bad_count = Document(page_content="x", id="bad-count", metadata={"token_count": -1})
    pools = [Pool("all", 100, 5)]
    with pytest.raises(EntryError, match="^document 'bad-tags': metadata field 'tags' must be a list"):
        LangChainRetriever(documents=[good, bad_tags, bad_count], pools=pools)
    with pytest.raises(EntryError, match="^document 'bad-count': metadata field 'token_count' must be a positive"):
        LangChainRetriever(documents=[good, bad_count, bad_tags], pools=pools)
    with pytest.raises(EntryError, match="^document 'bad-tags'"):
        DocumentConverter.index([good, bad_tags, "text"], default_token_counter)  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^documents\[1\] must be a langchain_core Document"):
        DocumentConverter.index([good, "text", bad_tags], default_token_counter)  # type: ignore[list-item]


def test_a_counter_error_keeps_the_index_wording():
    # Not a malformed document: the counter's answer is at fault, and the
    # core says so as it always did.
    docs = [Document(page_content="fine", id="ok")]
    with pytest.raises(EntryError, match=r"^entry 'ok' \(index 0\): field 'token_count' is not a positive integer"):
        LangChainRetriever(documents=docs, pools=[Pool("all", 100, 5)], token_counter=lambda text: 0)


def test_construction_never_changes_the_callers_objects():
    metadata = {"type": "fact", "tags": ["ops"], "poolsplit": {"pool": "stale"}}
    doc = Document(page_content="deploy notes", metadata=copy.deepcopy(metadata), id="d1")
    node = TextNode(text="deploy notes", metadata=copy.deepcopy(metadata), id_="n1")
    LangChainRetriever(documents=[doc], pools=[Pool("all", 100, 5)]).invoke("deploy")
    LlamaIndexRetriever([Pool("all", 100, 5)], nodes=[node]).retrieve("deploy")
    assert doc.metadata == metadata
    assert node.metadata == metadata


def test_adapters_over_documents_and_nodes_build_their_scorers_postings_when_constructed():
    """MemoryIndex.prepare_for builds a RelevanceScorer's BM25 postings now
    (the default scorer has none to build), MemoryIndex(prepare_for=[...])
    while reading the entries, and the retrievers over documents and nodes
    build them at construction: their first call costs
    what every later one does, and ranks as a lazily built index does."""
    from poolsplit_adapters.relevance import RelevanceScorer

    texts = ["Refunds are rounded down", "The staging gate opens at noon", "Refund the duplicate charge"]
    entries = [{"id": "e%d" % n, "type": "note", "content": text} for n, text in enumerate(texts)]
    plain = MemoryIndex(entries)
    assert plain.prepare_for(plain._scorer) is plain and not plain._scoring.terms
    assert plain.prepare_for(RelevanceScorer()) is plain and len(plain._scoring.terms) == 1
    # The constructor's keyword builds the same, while the entries are read.
    assert not MemoryIndex(entries, prepare_for=[plain._scorer])._scoring.terms
    assert len(MemoryIndex(entries, prepare_for=[RelevanceScorer(), RelevanceScorer()])._scoring.terms) == 1
    pools = [Pool("all", 100, 2)]
    documents = [Document(page_content=e["content"], metadata={"type": "note"}, id=e["id"]) for e in entries]
    nodes = [TextNode(text=e["content"], metadata={"type": "note"}, id_=e["id"]) for e in entries]
    langchain = LangChainRetriever(documents=documents, pools=pools, token_counter=default_token_counter, now=NOW)
    llama = LlamaIndexRetriever(pools, nodes=nodes, token_counter=default_token_counter, now=NOW)
    assert len(langchain._held.index._scoring.terms) == 1 and len(llama._index._scoring.terms) == 1
    lazy = MemoryIndex(entries)
    expected = [e["id"] for e in lazy.select(pools, {"message": "refund"}, now=NOW, scorer=langchain.scorer).entries()]
    assert [d.id for d in langchain.invoke("refund")] == expected
    assert [n.node.node_id for n in llama.retrieve("refund")] == expected


@pytest.mark.parametrize(
    "bad, found",
    [
        ("text", "got str"),
        (
            {"page_content": "x", "metadata": {"type": "note"}},
            "got dict (build a Document(page_content, metadata=...))",
        ),
        ({"id": "x"}, "got dict (build a Document(page_content, metadata=...))"),
    ],
)
def test_a_document_that_is_not_one_is_named_by_position_by_the_retriever_as_by_the_compressor(bad, found):
    good = Document(page_content="fine", id="ok")
    pools = [Pool("all", 100, 5)]
    message = "documents[1] must be a langchain_core Document, " + found
    with pytest.raises(ValueError) as by_retriever:  # a ValueError, as pydantic's report was, and a TypeError
        LangChainRetriever(documents=[good, bad], pools=pools)
    with pytest.raises(TypeError) as by_compressor:
        PoolSplitCompressor(pools=pools).compress_documents([good, bad], "q")
    assert isinstance(by_retriever.value, TypeError)
    assert str(by_retriever.value) == str(by_compressor.value) == message


def test_documents_that_are_not_a_list_are_named():
    with pytest.raises(TypeError, match=r"^documents must be a list of langchain_core Documents, got str$"):
        LangChainRetriever(documents="fine", pools=[Pool("all", 100, 5)])
