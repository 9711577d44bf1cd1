"""Whose memory one agent call reads: the store and the namespace chain,
each fixed or taken from the call's runtime, framework-free.

The agent middleware and the search tool answer the same question on every
call, so they answer it here, once: a tenant's memory must be found the same
way by the hook that injects it and by the tool that searches it, or one of
them could read another user's namespace. The LangChain adapters' own
``RuntimeMemory`` adds what a LangChain caller may hand over as a store (a
``VectorStore``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Callable, Optional, Union

from ...call import AdapterCall
from ...checks import check_call_form
from ...errors import ArgumentError
from ...poolsplit import Selection
from ...settings import AgentMemorySettings
from ...threads import off_loop
from .backends import Backend, Plan, backend_for
from .store import Namespace, check_namespaces

__all__ = ["NamespaceSpec", "RuntimeBackends"]

#: A namespace, an explicit chain of them (own first), or ``runtime -> either``.
NamespaceSpec = Union[Sequence[str], Sequence[Sequence[str]], Callable[[Any], Any]]

#: How many runtime stores keep their backend (and its prepared indexes).
RUNTIME_STORES_KEPT = 16


def _runtime_hint(runtime: Any, err: Exception) -> str:
    """What a failing ``namespace(runtime)`` most likely missed: the run's
    ``context`` (none was given to ``invoke``), or ``runtime.config``
    (LangGraph's ``Runtime`` has none; ``get_config()`` reads the run's),
    said only when ``err`` is the callable reading it: a context without
    the user's key is another mistake, with another fix."""
    if getattr(runtime, "context", None) is None:
        return " (runtime.context is None: pass context={...} to invoke/stream, e.g. context={'user_id': 'ana'})"
    if isinstance(err, AttributeError) and "'config'" in str(err) and not hasattr(runtime, "config"):
        return " (the agent's runtime has no config: read it with langgraph.config.get_config())"
    return ""


class RuntimeBackends:
    """The store and namespace chain of each call, resolved from its runtime
    (the arguments are the LangChain ``RuntimeMemory``'s; a store becomes a
    backend through `_backend_for`), and the search tool's selection there."""

    def __init__(self, owner: str, namespace: NamespaceSpec, store: Any, settings: AgentMemorySettings) -> None:
        self.owner = owner
        self.settings = settings
        if callable(namespace):
            self._namespace_fn: Optional[Callable[[Any], Any]] = namespace
            check_call_form(namespace, "namespace", "namespace(runtime)", None)
            self._namespace: Optional[tuple[Namespace, ...]] = None
        else:
            self._namespace_fn = None
            self._namespace = check_namespaces(namespace)
        self._fixed: Optional[Backend] = None if store is None else self._backend_for(store, "store")
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
            raise ValueError(
                "namespace(runtime) failed: %s: %s%s" % (type(err).__name__, err, _runtime_hint(runtime, err))
            ) from err
        return check_namespaces(value, "namespace(runtime)")

    def backend(self, runtime: Any) -> Backend:
        """This call's store, as a backend: the fixed one, else one per
        ``runtime.store`` (kept, so its prepared indexes outlive the call)."""
        if self._fixed is not None:
            return self._fixed
        store = getattr(runtime, "store", None)
        if store is None:
            raise ArgumentError("%s has no store: pass store= or give one to create_agent(..., store=...)" % self.owner)
        with self._lock:
            found = self._runtime_backends.get(id(store))
            if found is None or found[0] is not store:
                found = (store, self._backend_for(store, "runtime.store"))
                self._runtime_backends[id(store)] = found
                if len(self._runtime_backends) > RUNTIME_STORES_KEPT:
                    self._runtime_backends.popitem(last=False)
            return found[1]

    def _backend_for(self, store: Any, argument: str) -> Backend:
        """The backend over ``store`` (a clear error naming ``argument``)."""
        return backend_for(store, self.settings, argument=argument)

    # -- the search tool's selection ----------------------------------------------------

    def _reading(self, runtime: Any, query: str) -> tuple[Backend, tuple[Namespace, ...], AdapterCall, Plan]:
        backend, chain = self.backend(runtime), self.chain(runtime)
        call = AdapterCall(self.settings, query, entry_types=lambda: backend.entry_types(chain))
        return backend, chain, call, Plan.of(call)

    def select(self, runtime: Any, query: str) -> Selection:
        """One selection for ``query`` as the message, from this call's store
        and namespaces, through the adapter call (recorded like every
        adapter's): what the search tool answers with."""
        backend, chain, call, plan = self._reading(runtime, query)
        snap = backend.snapshot(chain, call.options.context, plan)
        return call.record(call.annotate(backend.select(snap, chain, call.options.context, plan)))

    async def aselect(self, runtime: Any, query: str) -> Selection:
        """Async `select`."""
        # pools="auto" reads the store's types: an async store's sync read (Postgres, SQLite), from a worker thread.
        away = self.backend(runtime).off_loop
        backend, chain, call, plan = (
            await off_loop(self._reading, runtime, query) if away else self._reading(runtime, query)
        )
        snap = await backend.asnapshot(chain, call.options.context, plan)
        return call.record(call.annotate(await backend.aselect(snap, chain, call.options.context, plan)))
