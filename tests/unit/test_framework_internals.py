"""The in-process framework internals the adapters read, pinned (the
Postgres ones are in tests/integration/test_postgres_framework_internals.py).

Each name here is private to its framework: a release may rename it or
change what it holds, and the adapters then fall back to a slower public
path (the kept index, the watermark) or fail. These tests fail first, with
a message naming the distribution, its installed version and the versions
the reach was tested with (tests/framework_versions.py); ``make compat``
runs them at the lowest and the newest versions the extras allow.
"""

from __future__ import annotations

from framework_versions import changed
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.memory import InMemoryStore
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding

from poolsplit_adapters.stores.langgraph.memory_store_search import serves_in_memory_store
from poolsplit_adapters.stores.langgraph.prepared import watermark

NS = ("memories", "u1")
KEPT_INDEX = "poolsplit_adapters/stores/langgraph/memory_store_search.py (the agent's kept index) and stores/langgraph/prepared.py"


def _store() -> InMemoryStore:
    return InMemoryStore(index={"dims": 4, "embed": DeterministicFakeEmbedding(size=4), "fields": ["text"]})


def test_in_memory_store_holds_its_items_in_a_dict_per_namespace_updated_in_place():
    """``InMemoryStore._data``: namespace tuple -> {key: Item}. The kept
    index and the watermark read it instead of searching the store, and
    rely on a put replacing the Item inside the namespace's own dict (its
    change mark, :mod:`poolsplit_adapters.langchain.dict_version`)."""
    store = _store()
    store.put(NS, "k1", {"text": "deploy to staging"})
    data = getattr(store, "_data", None)
    expected = "a dict of namespace tuple -> {key: Item}, a put replacing the Item in that dict"
    assert isinstance(data, dict) and isinstance(data.get(NS), dict), changed(
        "langgraph-checkpoint", "InMemoryStore._data", expected, KEPT_INDEX
    )
    namespace = data[NS]
    assert namespace["k1"] == store.get(NS, "k1"), changed(
        "langgraph-checkpoint", "InMemoryStore._data", expected, KEPT_INDEX
    )
    store.put(NS, "k1", {"text": "deploy to production"})
    store.put(NS, "k2", {"text": "rollback"})
    assert data is store._data and data[NS] is namespace, changed(
        "langgraph-checkpoint", "InMemoryStore._data", expected, KEPT_INDEX
    )
    assert {key: item.value for key, item in namespace.items()} == {
        "k1": {"text": "deploy to production"},
        "k2": {"text": "rollback"},
    }, changed("langgraph-checkpoint", "InMemoryStore._data", expected, KEPT_INDEX)
    store.delete(NS, "k2")
    assert list(namespace) == ["k1"], changed("langgraph-checkpoint", "InMemoryStore._data", expected, KEPT_INDEX)


def test_in_memory_store_holds_each_items_vectors_by_namespace_key_and_field():
    """``InMemoryStore._vectors``: namespace tuple -> {key: {field path:
    vector}}, the vectors the kept index ranks by without re-embedding."""
    store = _store()
    store.put(NS, "k1", {"text": "deploy to staging"})
    vectors = getattr(store, "_vectors", None)
    expected = "a dict of namespace tuple -> {key: {field path: list of floats}}"
    assert isinstance(vectors, dict), changed("langgraph-checkpoint", "InMemoryStore._vectors", expected, KEPT_INDEX)
    by_field = vectors.get(NS, {}).get("k1")
    assert isinstance(by_field, dict) and list(by_field) == ["text"], changed(
        "langgraph-checkpoint", "InMemoryStore._vectors", expected, KEPT_INDEX
    )
    assert [float(x) for x in by_field["text"]] == DeterministicFakeEmbedding(size=4).embed_query(
        "deploy to staging"
    ), changed("langgraph-checkpoint", "InMemoryStore._vectors", expected, KEPT_INDEX)
    store.delete(NS, "k1")
    assert "k1" not in vectors.get(NS, {}), changed(
        "langgraph-checkpoint", "InMemoryStore._vectors", expected, KEPT_INDEX
    )


def test_the_adapters_take_their_in_memory_store_paths():
    """Both reaches together: the kept index serves the store (else the
    agent searches the whole store every turn) and the watermark reads the
    items (else it has none, and the prepared index is rebuilt)."""
    store = _store()
    store.put(NS, "k1", {"text": "deploy to staging"})
    assert serves_in_memory_store(store), changed(
        "langgraph-checkpoint", "InMemoryStore._data/_vectors", "the kept index to serve the store", KEPT_INDEX
    )
    assert watermark(store, [NS]) is not None, changed(
        "langgraph-checkpoint", "InMemoryStore._data", "a watermark read from the items", KEPT_INDEX
    )


def test_a_vector_store_index_keeps_its_embedding_model_where_its_retrievers_read_it():
    """``VectorStoreIndex._embed_model``: the model the index embeds with,
    which its own retrievers read and so does
    :class:`~poolsplit_adapters.stores.vectorstores.llama_index_search.IndexRecall` (one
    query embedding for every pool search)."""
    model = MockEmbedding(embed_dim=4)
    index = VectorStoreIndex(nodes=[], embed_model=model)
    assert getattr(index, "_embed_model", None) is model, changed(
        "llama-index-core",
        "VectorStoreIndex._embed_model",
        "the embed_model the index was built with",
        "poolsplit_adapters/stores/vectorstores/llama_index_search.py",
    )


def test_a_vector_store_index_embeds_nodes_with_its_model_before_they_are_inserted():
    """``VectorStoreIndex._get_node_with_embedding(nodes)``: the nodes with
    the index's embeddings (what its own ``insert_nodes`` calls first), and
    ``_store_nodes_override`` (a copy in the docstore as well): a
    `VectorIndexMemory` write embeds the new versions before it deletes
    anything (``stores/vectorstores/llama_index_writes.py``)."""
    from llama_index.core.schema import TextNode

    index = VectorStoreIndex(nodes=[], embed_model=MockEmbedding(embed_dim=4))
    where = "poolsplit_adapters/stores/vectorstores/llama_index_writes.py"
    embed = getattr(index, "_get_node_with_embedding", None)
    assert callable(embed), changed("llama-index-core", "VectorStoreIndex._get_node_with_embedding", "a method", where)
    [node] = embed([TextNode(text="deploy to staging", id_="n1")])
    assert (node.node_id, node.embedding) == ("n1", [0.5, 0.5, 0.5, 0.5]), changed(
        "llama-index-core", "VectorStoreIndex._get_node_with_embedding", "the nodes with their embeddings", where
    )
    assert getattr(index, "_store_nodes_override", None) is False, changed(
        "llama-index-core", "VectorStoreIndex._store_nodes_override", "False for an index built without it", where
    )
