"""The filter index's name per table, and which stores ``install_filter_index`` takes."""

from __future__ import annotations

import pytest

from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.stores.postgres import FILTER_INDEX, filter_index_name, install_filter_index


def test_pgvectors_table_keeps_the_fixed_name():
    assert filter_index_name() == FILTER_INDEX == "poolsplit_pool_filter"


def test_each_llama_index_table_gets_its_own_name():
    assert filter_index_name("data_memory") == "poolsplit_pool_filter_data_memory"
    assert filter_index_name("data_other") != filter_index_name("data_memory")


def test_a_long_table_name_gets_a_distinct_name_postgres_keeps_whole():
    a, b = filter_index_name("data_" + "x" * 60 + "a"), filter_index_name("data_" + "x" * 60 + "b")
    assert a != b and len(a.encode()) == len(b.encode()) == 63
    assert a.startswith("poolsplit_pool_filter_data_xxx")


def test_a_long_multibyte_table_name_is_cut_on_a_character():
    name = filter_index_name("data_" + "é" * 40)
    assert len(name.encode()) <= 63 and "\ufffd" not in name


def test_install_filter_index_refuses_another_store():
    with pytest.raises(ArgumentError, match="install_filter_index takes"):
        install_filter_index(object())
