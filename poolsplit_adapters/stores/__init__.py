"""Durable long-term memory.

[`SQLiteMemoryStore`][] is the embedded default (one SQLite file, several
processes, every acknowledged write durable); [`MemoryStore`][] is the
protocol every store meets (``isinstance`` holds for each), and
[`StoreVerbs`][] is the one store contract: every verb and its async twin
written once over a few primitives, so add, supersede, delete, history and
forget mean the same on every store; [`InProcessStore`][]
holds the contract in a ``MemoryIndex`` (no file); [`search_all_namespaces`][] is the operators'
search across tenants (never used on an agent's path);
[`PostgresConnection`][] gives each framework's Postgres store its form of
one connection setting. The JSON Lines and TOML loaders live in `files`.
"""

from __future__ import annotations

from .base import Change, DuplicateEntry, EntryNotFound, IdHeldElsewhere, MemoryStore, StoreVerbs
from .consolidation import StoredConsolidation, consolidate_stored
from .files import InputFileError, bundled_pools, bundled_store, dump_store, load_pools, load_store
from .internals import FrameworkInternalsWarning
from .memory import InProcessStore
from .postgres import PostgresConnection
from .search import SearchHit, search_all_namespaces
from .sqlite import SCHEMA_VERSION, SQLiteMemoryStore, StoreError

__all__ = [
    "SCHEMA_VERSION",
    "DuplicateEntry",
    "IdHeldElsewhere",
    "EntryNotFound",
    "FrameworkInternalsWarning",
    "InProcessStore",
    "InputFileError",
    "MemoryStore",
    "PostgresConnection",
    "StoreVerbs",
    "StoredConsolidation",
    "consolidate_stored",
    "Change",
    "SQLiteMemoryStore",
    "SearchHit",
    "StoreError",
    "bundled_pools",
    "bundled_store",
    "dump_store",
    "load_pools",
    "load_store",
    "search_all_namespaces",
]
