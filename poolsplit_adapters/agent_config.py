"""The agent memory's settings in three groups: what a model call recalls
(`RecallConfig`), what the middleware writes (`WriteConfig`) and how the
recalled memory is shown to the model (`RenderConfig`).

[`PoolSplitMemoryMiddleware`][poolsplit_adapters.langchain.middleware.PoolSplitMemoryMiddleware]
takes the few settings every agent names (``pools``, ``namespace``,
``store``, ``max_turns``, ``now``) as keywords and the rest as these objects,
so that a reader sees which part of the loop a setting changes, and a setting
left at its default is never written. Each is a frozen dataclass of plain
values with keyword-only fields: one can be shared by several middlewares
and changed with ``dataclasses.replace``. The values are checked once, when
the middleware that takes them is built; an error names the field.

The LangChain ``create_search_memory_tool`` reads memory as the middleware
does and takes a `RecallConfig` too. The flat keywords of 0.2
(``fetch_k=``, ``remember=``, ``heading=``, ...) are refused with a
``TypeError`` that names the object the setting moved to
(`removed_keyword_error`); ``docs/migrating.md`` lists each.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Optional

from .agent_memory import DEFAULT_HEADING
from .checks import ArgumentError
from .memory.write_gate import WriteGate
from .poolsplit import Scorer, TokenCounter

__all__ = ["RecallConfig", "RenderConfig", "WriteConfig", "removed_keyword_error"]


@dataclass(frozen=True, kw_only=True)
class RecallConfig:
    """What each model call recalls from the store, and how it is ranked.

    Attributes:
        total_tokens: with ``pools="auto"``, the token budget each call's
            task-aware plan shares out (required with ``"auto"``), entries'
            texts and markers counted.
        total_entries: with ``pools="auto"``, the entry budget shared out
            (None: as many entries as the tokens allow).
        fetch_k: per-type recall size for indexed stores and vector stores
            (None: every item for a LangGraph store; 20 for a vector store,
            its first round, grown while a pool's budget has room).
        chain_penalty: score factor per namespace-chain link after the
            first (0 < x <= 1; default 0.9).
        scorer: the ranking function (None: the adapters' default,
            ``default_adapter_scorer``). Give it or ``embeddings``, not both.
        embeddings: a LangChain ``Embeddings``: rank by words and vectors
            fused (``embedding_scorer_for``).
        token_counter: cost of an entry's text without ``token_count``
            (None: tiktoken ``o200k_base``, offline; counts are cached per
            item). The middleware adds a typical marker's tokens to each
            count (`RenderedCounter`): the block the model reads keeps to
            the budgets.

    Example:
        ```python
        from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, RecallConfig

        memory = PoolSplitMemoryMiddleware(
            "auto",
            namespace=("memories", "u1"),
            recall=RecallConfig(total_tokens=1200, total_entries=12, fetch_k=40),
        )
        ```
    """

    total_tokens: Optional[int] = None
    total_entries: Optional[int] = None
    fetch_k: Optional[int] = None
    chain_penalty: float = 0.9
    scorer: Optional[Scorer] = None
    embeddings: Any = None
    token_counter: Optional[TokenCounter] = None

    def settings(self) -> dict[str, Any]:
        """The selection settings these are (each field under its own name),
        as the middleware and the search tool hand them on."""
        return {field.name: getattr(self, field.name) for field in fields(self)}


@dataclass(frozen=True, kw_only=True)
class WriteConfig:
    """What the middleware writes to long-term memory, and what it does with
    it afterwards.

    Attributes:
        remember: register the ``remember`` tool, with which the agent saves
            a note (default True; the model must be able to bind tools).
        write_gate: the [`WriteGate`][poolsplit_adapters.memory.write_gate.WriteGate]
            every evicted turn and note passes (None: ``WriteGate()``).
        episode_type: the entry type of evicted turns (``"episode"``).
        note_type: the entry type of the ``remember`` tool's notes
            (``"note"``).
        consolidator: the host's chat model (``with_structured_output``
            must work), a LlamaIndex LLM or a ``Decider``: after each agent
            run (``after_agent``) the entries the turn wrote are
            consolidated with their nearest stored neighbours in the
            background (None: off): ``update`` supersedes, ``retire``
            closes, ``noop`` records a repeat and closes it, nothing is
            deleted and a correction is never touched. The store must be a
            LangGraph store or follow the store contract's verbs
            (``StoreVerbs``: SQLite, vector-store memories).
        consolidation_delay: seconds a thread must be quiet before its
            consolidation runs (default 1.0): a burst of turns runs it once.

    Example:
        ```python
        from poolsplit_adapters import Pool
        from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, WriteConfig

        memory = PoolSplitMemoryMiddleware(
            [Pool("notes", 400, 6)],
            namespace=("memories", "u1"),
            write=WriteConfig(remember=False, episode_type="turn"),
        )
        ```
    """

    remember: bool = True
    write_gate: Optional[WriteGate] = None
    episode_type: str = "episode"
    note_type: str = "note"
    consolidator: Any = None
    consolidation_delay: float = 1.0


@dataclass(frozen=True, kw_only=True)
class RenderConfig:
    """How the recalled memory is put before the model.

    Attributes:
        heading: the line above the injected memory in the system message.
        progressive: summaries first, full text for the best entries while
            room remains or when the message asks for detail; registers the
            ``expand_memory`` tool, which reads only the namespaces the call
            may read (default False).

    Example:
        ```python
        from poolsplit_adapters import Pool
        from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, RenderConfig

        memory = PoolSplitMemoryMiddleware(
            [Pool("notes", 400, 6)],
            namespace=("memories", "u1"),
            render=RenderConfig(heading="What you know about this user:", progressive=True),
        )
        ```
    """

    heading: str = DEFAULT_HEADING
    progressive: bool = False


#: Each flat keyword of 0.2 that moved into a config object: keyword -> the
#: middleware keyword and class that now hold it.
MOVED = {
    **{name: ("recall", RecallConfig) for name in RecallConfig.__dataclass_fields__},
    **{name: ("write", WriteConfig) for name in WriteConfig.__dataclass_fields__},
    **{name: ("render", RenderConfig) for name in RenderConfig.__dataclass_fields__},
}

#: What the middleware takes (the keywords its errors list).
MIDDLEWARE_KEYWORDS = ("pools", "namespace", "store", "max_turns", "now", "recall", "write", "render")

#: Flat keywords of 0.2 removed without a new place, with the reason.
GONE = {"page_size": "it had no effect since 0.2: recall reads each search in one exact read"}


def _meant(name: str, known: Sequence[str]) -> str:
    """ "; did you mean max_turns=?" for a misspelt keyword (a config's
    field named where it now lives), else nothing."""
    places = {key: "%s=" % key for key in known}
    places.update({key: "%s=%s(%s=...)" % (m[0], m[1].__name__, key) for key, m in MOVED.items() if m[0] in known})
    close = difflib.get_close_matches(name, list(places), n=1)
    return "; did you mean %s?" % places[close[0]] if close else ""


def removed_keyword_error(
    owner: str, given: Mapping[str, Any], known: Sequence[str] = MIDDLEWARE_KEYWORDS
) -> ArgumentError:
    """The error for keywords ``owner`` no longer takes (``given`` is not
    empty): each moved one named with its new place, e.g.
    ``fetch_k= is recall=RecallConfig(fetch_k=...)``, each removed one with
    why, and any other with the keywords that are ``known`` (a config a
    keyword moved to counts only when ``owner`` takes it)."""
    lines = []
    for name in sorted(given):
        if name in MOVED and MOVED[name][0] in known:
            keyword, kind = MOVED[name]
            lines.append("%s= is %s=%s(%s=...) since 0.3" % (name, keyword, kind.__name__, name))
        elif name in GONE:
            lines.append("%s= was removed in 0.3 (%s)" % (name, GONE[name]))
        else:
            lines.append("%s= is not a keyword of %s%s" % (name, owner, _meant(name, known)))
    return ArgumentError("%s: %s (see docs/migrating.md; known: %s)" % (owner, "; ".join(lines), ", ".join(known)))
