"""The advisory locks a write to a Postgres vector store holds on its ids,
shared by both frameworks' write paths (LangChain's ``PGVector`` claim,
`pgvector_ids`; LlamaIndex's ``PGVectorStore`` write, `llama_index_writes`).

Why apart: each side's write module may not import the other side's, and
both must lock an id under the same key, or a LangChain writer and a
LlamaIndex writer of one database would not wait for each other. No
framework is imported here: only SQLAlchemy, which both stores bring.
"""

from __future__ import annotations

import hashlib
from typing import Any, Collection, List

__all__ = ["lock_key", "lock_statements"]


def lock_key(entry_id: str) -> int:
    """The advisory lock key of an id: 64 bits of a hash of it, as Postgres'
    signed ``bigint``. Computed here, not by the server, so every claim
    takes its locks in the same (sorted) order and two claims of
    overlapping ids cannot deadlock. The hash is personalised, so its keys
    are unlikely to meet another application's advisory locks on the same
    database; two ids sharing a key only wait for each other."""
    digest = hashlib.blake2b(entry_id.encode("utf-8"), digest_size=8, person=b"poolsplit-ids").digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_statements(ids: Collection[str]) -> List[Any]:
    """One ``pg_advisory_xact_lock`` statement per distinct key of ``ids``,
    in key order (the key a bound parameter): run inside a transaction,
    they hold the ids until it ends."""
    from sqlalchemy import BigInteger, func, literal, select

    keys = sorted({lock_key(i) for i in ids})
    return [select(func.pg_advisory_xact_lock(literal(key, BigInteger))) for key in keys]
