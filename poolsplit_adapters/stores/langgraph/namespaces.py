"""LangGraph namespaces as entry namespaces: `namespace_label`, the
one mapping between a namespace tuple and the entry ``namespace`` string.

Its own module because the store memory (`.store`) and its ranked
searches (`.postgres_store_search`, which `.store` imports) both
label namespaces: kept here, below both, the searches need not reach back
into the module that uses them.
"""

from __future__ import annotations

from typing import Sequence, Tuple

from ...errors import ArgumentError

__all__ = ["Namespace", "namespace_label"]

Namespace = Tuple[str, ...]


def namespace_label(namespace: Sequence[str]) -> str:
    """The entry ``namespace`` string of a LangGraph namespace tuple: its
    labels joined by ``"."`` (which a label may not hold, so the mapping is
    one to one). The one mapping between the two forms.

    The agent middleware and `BaseStoreMemory` take namespaces as
    LangGraph does, tuples such as ``("memories", "ana")``; an entry (in the
    SQLite store, a vector store's metadata, ``Visibility``) carries a
    string. To write a correction for the agent whose memory is
    ``("memories", "ana")`` into a store that holds entries (the SQLite
    store, ``InProcessStore``, a vector store), give it
    ``namespace=namespace_label(("memories", "ana"))``, i.e.
    ``"memories.ana"``: namespaces are exact, so ``"ana"`` never loads (the
    selection counts it, see
    `always_outside_namespace`).

    Example:
        >>> namespace_label(("memories", "ana"))
        'memories.ana'
    """
    if isinstance(namespace, str):  # "ana" would join as "a.n.a"
        raise ArgumentError("namespace_label takes a tuple of labels such as ('memories', 'ana'), got %r" % namespace)
    return ".".join(namespace)
