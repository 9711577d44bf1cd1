"""Whose memory one agent call reads: the store and the namespace chain,
each fixed or taken from the call's runtime.

The agent middleware and the search tool answer the same question on every
call, so they answer it here, once: a tenant's memory must be found the same
way by the hook that injects it and by the tool that searches it, or one of
them could read another user's namespace.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Callable, Optional, Union

from ..settings import AgentMemorySettings
from ..stores.langgraph.backends import Backend
from ..stores.langgraph.store import Namespace, check_namespaces
from .backends import backend_for

__all__ = ["NamespaceSpec", "RuntimeMemory"]

#: A namespace, an explicit chain of them (own first), or ``runtime -> either``.
NamespaceSpec = Union[Sequence[str], Sequence[Sequence[str]], Callable[[Any], Any]]

#: How many runtime stores keep their backend (and its prepared indexes).
RUNTIME_STORES_KEPT = 16


class RuntimeMemory:
    """The store and namespace chain of each call, resolved from its runtime.

    Args:
        owner: the class or function the caller built, named in errors.
        namespace: a namespace (``("memories", "ana")``), an explicit chain
            (``[("memories", uid), ("memories", "shared")]``), or a callable
            ``runtime -> namespace`` (``lambda rt: ("memories",
            rt.context["user_id"])``), called on every call with the hook's
            ``Runtime`` or the tool's ``ToolRuntime``. Exact: never widened.
        store: the memory's store (any kind
            [backend_for][poolsplit_adapters.langchain.backends.backend_for]
            takes), or None for ``runtime.store`` (the store given to
            ``create_agent(store=...)``).
        settings: the selection settings the backends read with.

    Example:
        >>> from langchain.tools import ToolRuntime
        >>> from langgraph.store.memory import InMemoryStore
        >>> from poolsplit_adapters import Pool
        >>> settings = AgentMemorySettings.held_by("my_tool", pools=[Pool("notes", 200, 5)])
        >>> where = RuntimeMemory("my_tool", lambda rt: ("memories", rt.context["user_id"]), None, settings)
        >>> runtime = ToolRuntime(state={}, context={"user_id": "ana"}, config={}, stream_writer=print,
        ...                       tool_call_id=None, store=InMemoryStore())
        >>> where.chain(runtime), type(where.backend(runtime)).__name__
        ((('memories', 'ana'),), '_BaseStoreBackend')
    """

    def __init__(self, owner: str, namespace: NamespaceSpec, store: Any, settings: AgentMemorySettings) -> None:
        self.owner = owner
        self.settings = settings
        if callable(namespace):
            self._namespace_fn: Optional[Callable[[Any], Any]] = namespace
            self._namespace: Optional[tuple[Namespace, ...]] = None
        else:
            self._namespace_fn = None
            self._namespace = check_namespaces(namespace)
        self._fixed: Optional[Backend] = None if store is None else backend_for(store, settings)
        # Backends over each runtime store seen (a cache, not thread state).
        self._runtime_backends: OrderedDict[int, tuple[Any, Backend]] = OrderedDict()
        self._lock = threading.Lock()

    def chain(self, runtime: Any) -> tuple[Namespace, ...]:
        """This call's namespace chain, own namespace first (checked, naming
        ``namespace(runtime)`` when a callable gave it)."""
        if self._namespace is not None:
            return self._namespace
        assert self._namespace_fn is not None
        try:
            value = self._namespace_fn(runtime)
        except Exception as err:
            raise ValueError("namespace(runtime) failed: %s: %s" % (type(err).__name__, err)) from err
        return check_namespaces(value, "namespace(runtime)")

    def backend(self, runtime: Any) -> Backend:
        """This call's store, as a backend: the fixed one, else one per
        ``runtime.store`` (kept, so its prepared indexes outlive the call)."""
        if self._fixed is not None:
            return self._fixed
        store = getattr(runtime, "store", None)
        if store is None:
            raise ValueError("%s has no store: pass store= or give one to create_agent(..., store=...)" % self.owner)
        with self._lock:
            found = self._runtime_backends.get(id(store))
            if found is None or found[0] is not store:
                found = (store, backend_for(store, self.settings, argument="runtime.store"))
                self._runtime_backends[id(store)] = found
                if len(self._runtime_backends) > RUNTIME_STORES_KEPT:
                    self._runtime_backends.popitem(last=False)
            return found[1]
