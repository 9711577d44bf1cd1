"""Store and pool files written with a UTF-8 byte-order mark (as editors on
Windows save them) read exactly as the same files without one."""

from __future__ import annotations

import codecs

from poolsplit_adapters import Pool
from poolsplit_adapters.stores import load_pools, load_store

STORE = '{"id": "a", "content": "caf\\u00e9 first"}\n{"id": "b", "content": "second", "type": "fact"}\n'
POOLS = '[[pool]]\nname = "facts"\nmax_tokens = 50\nmax_entries = 2\ntypes = ["fact"]\n'


def test_a_store_file_with_a_byte_order_mark_reads_as_without_one(tmp_path):
    plain, marked = tmp_path / "plain.jsonl", tmp_path / "marked.jsonl"
    plain.write_bytes(STORE.encode("utf-8"))
    marked.write_bytes(codecs.BOM_UTF8 + STORE.encode("utf-8"))
    before = marked.read_bytes()
    assert (
        load_store(marked)
        == load_store(plain)
        == [
            {"id": "a", "content": "caf\u00e9 first"},
            {"id": "b", "content": "second", "type": "fact"},
        ]
    )
    assert marked.read_bytes() == before  # read, never rewritten


def test_a_pool_file_with_a_byte_order_mark_reads_as_without_one(tmp_path):
    marked = tmp_path / "pools.toml"
    marked.write_bytes(codecs.BOM_UTF8 + POOLS.encode("utf-8"))
    assert load_pools(marked) == [Pool("facts", 50, 2, ("fact",))]
