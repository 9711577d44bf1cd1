"""LangGraph namespaces as entry namespaces: `namespace_label`, the
one mapping between a namespace tuple and the entry ``namespace`` string;
the checks of a namespace, a chain of them and the ids read under one
(`check_namespaces`, `check_ids`, refused before any store sees them), and
what a reader of a chain may see (`chain_visibility`).

Its own module because the store memory (`.store`) and its ranked
searches (`.postgres_store_search`, which `.store` imports) both
label namespaces: kept here, below both, the searches need not reach back
into the module that uses them.
"""

from __future__ import annotations

from typing import Any, Iterable, List, Sequence, Tuple

from ...errors import ArgumentError
from ...poolsplit import Visibility
from ..checks import check_entry_id, check_key_label, storable_text

__all__ = ["Namespace", "chain_visibility", "check_ids", "check_namespaces", "check_one", "namespace_label"]

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


def chain_visibility(chain: Sequence[Namespace], chain_penalty: float) -> Visibility:
    """What a query over the namespace ``chain`` (own first) may see: the
    entries of those namespaces, each further link scored ``chain_penalty``
    lower."""
    labels = tuple(namespace_label(ns) for ns in chain)
    return Visibility(namespace=labels if len(labels) > 1 else labels[0], chain_penalty=chain_penalty)


def check_one(value: Any, argument: str) -> Namespace:
    if isinstance(value, str) or not isinstance(value, (tuple, list)) or not value:
        raise ArgumentError(
            "%s must be a non-empty tuple of strings such as ('memories', 'user-1'), got %r" % (argument, value)
        )
    for label in value:
        if not isinstance(label, str) or not label or "." in label:
            raise ArgumentError(
                "%s: every label must be a non-empty string without '.', got %r in %r" % (argument, label, value)
            )
        storable_text(label, "%s label" % argument)  # NUL, lone surrogate: before any store sees it
    if value[0] == "langgraph":  # BaseStore.put refuses it too; the batched writes would not
        raise ArgumentError(
            "%s: the root label 'langgraph' is LangGraph's own (its stores refuse it), got %r" % (argument, value)
        )
    label = namespace_label(value)  # a Postgres key holds it: an error names its start, not the whole
    check_key_label(label, argument)
    return tuple(value)


def check_ids(ids: Iterable[Any], argument: str = "entry id") -> List[str]:
    """``ids`` as a list of distinct strings every store can hold (NUL and
    lone surrogates refused, naming ``argument``, before any query runs)."""
    return [check_entry_id(key, argument) for key in dict.fromkeys(ids)]


def check_namespaces(value: Any, argument: str = "namespace") -> Tuple[Namespace, ...]:
    """A namespace (tuple of labels) or an explicit chain of them (a list or
    tuple of tuples, own namespace first) as a chain. Errors name ``argument``."""
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, (tuple, list)) for v in value):
        chain = tuple(check_one(v, argument) for v in value)
        if len(set(chain)) != len(chain):
            raise ValueError("%s: the namespace chain repeats a namespace: %r" % (argument, value))
        return chain
    return (check_one(value, argument),)
