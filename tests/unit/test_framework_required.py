"""A framework release that moves a private name a call is made of (no
public path can stand in): the call stops before any statement with a
`FrameworkInternalsError` naming the distribution, its installed version,
the name and the tested range, never an ``AttributeError`` from inside a
search.

The release is simulated on the real class: the name is taken away for the
test (``monkeypatch.delattr``, a pydantic private attribute from the
class's declared ones), as a release that renames it would. The PGVector
and LangGraph Postgres cases, which need a server to build the store, are in
tests/integration/test_postgres_framework_required.py.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pytest
from llama_index.core import MockEmbedding, StorageContext, VectorStoreIndex
from llama_index.core.retrievers import BaseRetriever
from llama_index.vector_stores.postgres import PGVectorStore

from poolsplit_adapters import Pool
from poolsplit_adapters.llama_index import PoolSplitRetriever
from poolsplit_adapters.stores import internals
from poolsplit_adapters.stores.internals import TESTED, FrameworkInternalsError, declares, require
from poolsplit_adapters.stores.postgres import LLAMA_INDEX_INTERNALS, install_filter_index

LLAMA_PG = "llama-index-vector-stores-postgres"
POOLS = [Pool("facts", 500, 4, ("fact",))]


def _store() -> PGVectorStore:
    # Built offline: the store connects on its first use, which never comes.
    return PGVectorStore.from_params(
        host="127.0.0.1", port="1", database="none", user="u", password="p", table_name="t", embed_dim=4
    )


def _says(error: BaseException, distribution: str, name: str) -> None:
    low, high = TESTED[distribution]
    text = str(error)
    assert text.startswith("%s %s: " % (distribution, importlib.metadata.version(distribution)))
    assert name in text and "tested with %s %s to %s" % (distribution, low, high) in text


@pytest.mark.parametrize("name", LLAMA_INDEX_INTERNALS)
def test_a_llama_index_pgvectorstore_without_a_name_our_search_is_made_of_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, name: str
):
    store = _store()
    assert all(declares(store, n) for n in LLAMA_INDEX_INTERNALS)  # the installed release has them all
    private = dict(PGVectorStore.__private_attributes__)
    if name in private:
        del private[name]
        monkeypatch.setattr(PGVectorStore, "__private_attributes__", private)
    else:
        monkeypatch.delattr(PGVectorStore, name)
    index = VectorStoreIndex.from_vector_store(store, embed_model=MockEmbedding(embed_dim=4))
    with pytest.raises(FrameworkInternalsError) as caught:
        PoolSplitRetriever.from_vector_store_index(index, POOLS).retrieve("deploy")
    _says(caught.value, LLAMA_PG, "PGVectorStore.%s" % name)
    with pytest.raises(FrameworkInternalsError) as caught:
        install_filter_index(store)
    _says(caught.value, LLAMA_PG, "PGVectorStore.%s" % name)


def test_an_index_without_its_embedding_model_is_refused_by_name(monkeypatch: pytest.MonkeyPatch):
    index = VectorStoreIndex([], storage_context=StorageContext.from_defaults(), embed_model=MockEmbedding(embed_dim=4))
    assert isinstance(PoolSplitRetriever.from_vector_store_index(index, POOLS), BaseRetriever)  # as released: built
    monkeypatch.delattr(index, "_embed_model")
    with pytest.raises(FrameworkInternalsError) as caught:
        PoolSplitRetriever.from_vector_store_index(index, POOLS)
    _says(caught.value, "llama-index-core", "VectorStoreIndex._embed_model")
    # A model given by the caller needs no reach.
    given = PoolSplitRetriever.from_vector_store_index(index, POOLS, embed_model=MockEmbedding(embed_dim=4))
    assert given.retrieve("deploy") == []


class _Declared:
    method_name = None

    def __init__(self) -> None:
        self.attribute = 1

    @property
    def prop(self) -> Any:
        raise AssertionError("a property is never read by the check")


def test_require_names_every_missing_name_and_reads_no_property():
    obj = _Declared()
    require(obj, ("method_name", "attribute", "prop"), "llama-index-core", "x", "here")  # all there: no error
    with pytest.raises(FrameworkInternalsError, match=r"_Declared\.gone and _Declared\.lost is not what here reads"):
        require(obj, ("attribute", "gone", "lost"), "llama-index-core", "x", "here")
    assert issubclass(internals.FrameworkInternalsError, RuntimeError)
