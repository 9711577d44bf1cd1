"""Every argument check of the adapters and the agent middleware, with one
error helper.

A bad argument fails where it is given (the constructor, or the call that
carries it) with a message that names it: a bare string ``tags`` would
otherwise be read as a set of letters, a string ``k`` fail deep inside a
framework, and pydantic's lax mode turn ``k="3"`` into ``3``. Every check
raises `ArgumentError` through `argument_error`, so each
message has one shape: ``<name> must be <what>, got <type> <value>``.
"""

from __future__ import annotations

import datetime
import difflib
import inspect
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Callable, List, Optional, Union

from .errors import ArgumentError, argument_error, check_call_form
from .memory.tasks import AUTO, resolve_pools
from .poolsplit import Pool, PreparingScorer, Visibility, as_utc
from .poolsplit import check_pools as core_check_pools

__all__ = [
    "ArgumentError",
    "argument_error",
    "check_callable",
    "check_call_form",
    "check_scorer",
    "check_chain_penalty",
    "check_flag",
    "check_given",
    "check_instance",
    "check_keywords_only",
    "BlockList",
    "check_k",
    "check_label",
    "check_now",
    "check_plan",
    "check_positive_int",
    "check_project",
    "check_string",
    "check_tags",
    "check_text",
    "check_token_counter",
    "check_visibility",
    "checked_settings",
]


def check_k(value: Any, name: str = "k") -> Optional[int]:
    """``k`` (or a total budget): None, or an int >= 0 (not a bool, not a
    numeric string)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise argument_error(name, "an int >= 0 or None", value)
    if value < 0:
        raise ArgumentError("%s must be >= 0, got %r" % (name, value))
    return value


def check_positive_int(value: Any, name: str, why: str = "") -> int:
    """An int >= 1 (not a bool): ``max_turns``, ``fetch_k``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise argument_error(name, "an int >= 1" + (" (%s)" % why if why else ""), value)
    return value


def check_tags(value: Any, name: str = "tags") -> list[str]:
    """Scoring-context tags: a list or tuple of strings (None: no tags)."""
    if value is None:
        return []
    if isinstance(value, str):
        raise ArgumentError(
            "%s must be a list of strings, not the bare string %r (did you mean [%r]?)" % (name, value, value)
        )
    if not isinstance(value, (list, tuple)) or not all(isinstance(tag, str) for tag in value):
        raise argument_error(name, "a list or tuple of strings", value)
    return list(value)


def check_text(value: Any, name: str) -> Optional[str]:
    """A string or None: a task signal (``goal``, ``action_type``,
    ``phase``), a ``project``."""
    if value is not None and not isinstance(value, str):
        raise argument_error(name, "a string or None", value)
    return value


def check_project(value: Any, name: str = "project") -> Optional[str]:
    """The project of the scoring context: a string or None."""
    return check_text(value, name)


def check_string(value: Any, name: str) -> str:
    """A string (may be empty): the middleware's ``heading``."""
    if not isinstance(value, str):
        raise argument_error(name, "a string", value)
    return value


def check_label(value: Any, name: str) -> str:
    """A non-empty string: an entry type the middleware writes."""
    if not isinstance(value, str) or not value:
        raise argument_error(name, "a non-empty string", value)
    return value


def check_now(value: Any, name: str = "now") -> Optional[datetime.datetime]:
    """``now`` as the adapters hand it to the core: naive UTC (an aware
    time converted to the instant it names; a naive one taken as UTC).

    Why: the core's recency drops an offset (``ScoringContext.ref``, the
    spec's rule for its own callers) while the same call's expiry and time
    filters convert it (``as_utc``): an aware ``now`` twelve hours west of
    UTC ranked as if it were twelve hours earlier than the instant its
    expiry judged. Converted once here, every adapter surface (settings
    and per-call ``now``) means one instant throughout a call."""
    if value is not None and not isinstance(value, datetime.datetime):
        raise argument_error(name, "a datetime or None", value)
    return None if value is None else as_utc(value)


def check_visibility(value: Any, name: str = "visibility") -> Optional[Visibility]:
    if value is not None and not isinstance(value, Visibility):
        raise argument_error(name, "a Visibility or None", value)
    return value


def check_flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise argument_error(name, "True or False", value)
    return value


def check_callable(value: Any, name: str) -> Any:
    """A callable or None (None: the default applies)."""
    if value is not None and not callable(value):
        raise argument_error(name, "callable", value)
    return value


def check_token_counter(value: Any, name: str = "token_counter") -> Any:
    """A token counter, ``counter(text) -> int``, or None (the default)."""
    return check_call_form(value, name, "%s(text)" % name, "")


def check_scorer(value: Any, name: str) -> Any:
    """A scorer (the core's ``Scorer``: a spec-form function, called as
    ``scorer(entry, context, now=...)``, or a ``PreparingScorer``), or None
    (None: the default applies)."""
    if value is None or isinstance(value, PreparingScorer) or getattr(value, "prepare", None) is not None:
        return value
    if not callable(value):
        raise argument_error(name, "callable or have prepare(context, now)", value)
    return check_call_form(value, name, "%s(entry, context, now=...)" % name, {}, {}, now=None)


def check_instance(value: Any, kind: type, name: str) -> Any:
    """An instance of ``kind``, or None (None: the default applies)."""
    if value is not None and not isinstance(value, kind):
        raise argument_error(name, "a %s" % kind.__name__, value)
    return value


def check_given(value: Any, kind: type, name: str, hint: str) -> Any:
    """An instance of ``kind``, required (None refused too); ``hint`` says
    where one comes from. Checked before a pydantic model sees it, whose own
    error takes four lines and names neither."""
    if not isinstance(value, kind):
        raise argument_error(name, "a %s (%s)" % (kind.__name__, hint), value)
    return value


class BlockList(List[Any]):
    """A list of blocks (``poolsplit_memory_blocks``' answer) a framework
    takes as one argument, itself: when a caller nests it in another list,
    the framework reads it as one block, and
    any attribute it asks of it raises an ``AttributeError`` saying how to
    give it (``hasattr`` still answers False), not ``'list' object has no
    attribute 'name'`` from inside the framework."""

    def __init__(self, parts: Iterable[Any], made_by: str, argument: str) -> None:
        super().__init__(parts)
        self.made_by, self.argument = made_by, argument

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_") or attribute in ("made_by", "argument"):
            raise AttributeError(attribute)
        raise AttributeError(
            "%s holds the list %s returns as one item (read as a block: no %r): give that list as %s= itself, or"
            " [*blocks, your_block]" % (self.argument, self.made_by, attribute, self.argument)
        )


def check_chain_penalty(value: Any, name: str = "chain_penalty") -> float:
    """A namespace-chain penalty, checked by the one rule that reads it
    ([`Visibility`][])."""
    try:
        Visibility(namespace="-", chain_penalty=value)
    except (TypeError, ValueError) as err:
        raise ArgumentError("%s: %s" % (name, err)) from None
    return float(value)


def check_plan(
    value: Any,
    name: str = "pools",
    *,
    total_tokens: Optional[int] = None,
    total_entries: Optional[int] = None,
    owner: str = "",
    entry_types: Any = None,
    collections: Any = None,
) -> Union[list[Pool], str]:
    """An adapter's pool plan: a list of [`Pool`][] checked by the core
    itself (every item a Pool, names unique), or ``"auto"`` (a task-aware
    plan per call, [`resolve_pools`][]),
    with the totals that go with it (``"auto"`` needs both; explicit pools
    take none; that error names ``owner``). Checked once, at construction, so a bad plan fails there
    rather than on the first query; each call's plan is then checked by the
    core's ``select``.

    Not the core's ``check_pools``, which takes a list only: this one
    accepts ``"auto"`` and the totals.
    """
    if value != AUTO:
        if isinstance(value, (str, bytes)):
            raise argument_error(name, "a list of Pool objects or 'auto'", value)
        try:  # the core's rule: distinct Pools (a single Pool is refused there, naming the fix)
            value = core_check_pools(value)
        except (TypeError, ValueError) as err:
            raise ArgumentError("%s: %s" % (name, err)) from None
    try:  # one rule for the totals: resolve_pools's
        resolve_pools(
            value,
            {},
            total_tokens=total_tokens,
            total_entries=total_entries,
            entry_types=entry_types,
            collections=collections,
        )
    except (TypeError, ValueError) as err:
        raise ArgumentError("%s: %s" % (owner, err) if owner else str(err)) from None
    if value != AUTO and not value:
        # the core takes an empty plan (it selects nothing); an adapter built on one would load
        # nothing on any call, corrections included: a mistake, not a plan
        raise ArgumentError(
            "%s: an empty plan loads nothing, corrections included: give at least one Pool, or 'auto'" % name
        )
    return AUTO if value == AUTO else list(value)


#: Check of each shared constructor setting, by name (``scorer`` and
#: ``token_counter``: None means the default, resolved in ``call``).
SETTING_CHECKS: dict[str, Callable[[Any, str], Any]] = {
    "k": check_k,
    "project": check_project,
    "now": check_now,
    "visibility": check_visibility,
    "scorer": check_scorer,
    "token_counter": check_token_counter,
    "total_tokens": check_k,  # None, or an int >= 0, like k
    "total_entries": check_k,
    "goal": check_text,
    "action_type": check_text,
    "phase": check_text,
    "progressive": check_flag,
    "show_selection_to_llm": check_flag,  # before pydantic, whose lax bool reads "yes" as True
    "chain_penalty": check_chain_penalty,
}


def check_keywords_only(owner: str, given: Sequence[Any]) -> None:
    """A pydantic-model adapter (a LangChain retriever or compressor, the
    LlamaIndex postprocessor) takes keywords only, as the frameworks' models
    do: a plan given by position is refused naming ``owner`` and the keyword,
    not with "AdapterSettings.__init__() takes 1 positional argument"."""
    if given:
        raise ArgumentError(
            "%s takes keyword arguments only, e.g. %s(pools=[Pool(...), ...]); got %d positional argument%s"
            % (owner, owner, len(given), "" if len(given) == 1 else "s")
        )


def own_keywords(function: Any) -> list[str]:
    """The keyword names ``function`` takes itself (not ``self``, not its
    ``**`` catch-all): what an unknown-keyword error lists beside the
    settings' own. Empty for None."""
    if function is None:
        return []
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in inspect.signature(function).parameters.values() if p.kind in named and p.name != "self"]


def checked_settings(owner: str, data: Mapping[str, Any], known: Sequence[str]) -> dict[str, Any]:
    """``data`` (constructor keywords of ``owner``) with every shared
    setting checked, the plan with its totals (a copy: the caller's mapping
    is not changed).

    Unknown keywords raise: a misspelt option silently ignored is a filter
    silently not applied (0.1's ``scope=`` was dropped without a word; it
    was then a deprecated alias of ``visibility=``, removed in 0.3).
    """
    data = dict(data)
    if "scope" in data:
        raise ArgumentError("%s: scope= was removed in 0.3; use visibility=Visibility(...)" % owner)
    unknown = sorted(set(data) - set(known))
    if unknown:
        close = [m for name in unknown for m in difflib.get_close_matches(name, known, n=1)]
        raise ArgumentError(
            "%s got unexpected keyword argument(s) %s%s (known: %s)"
            % (
                owner,
                ", ".join(map(repr, unknown)),
                "; did you mean %s?" % ", ".join(map(repr, close)) if close else "",
                ", ".join(sorted(set(known))),
            )
        )
    if "pools" not in data:
        raise ArgumentError("%s needs pools= (a list of Pool objects)" % owner)
    for name, check in SETTING_CHECKS.items():
        if name in data:
            data[name] = check(data[name], name)
    data["pools"] = check_plan(
        data["pools"],
        total_tokens=data.get("total_tokens"),
        total_entries=data.get("total_entries"),
        owner=owner,
        entry_types=data.get("entry_types"),
        collections=data.get("collections"),
    )
    return data


_OVERRIDE_CHECKS: dict[str, Callable[[Any, str], Any]] = {
    "k": check_k,
    "project": check_project,
    "now": check_now,
    "goal": check_text,
    "action_type": check_text,
    "phase": check_text,
}


def check_overrides(
    overrides: Mapping[str, Any], known: Collection[str], named: Callable[[str], str] = str
) -> dict[str, Any]:
    """One call's overrides (``k``, ``tags``, ``project``, ``now``,
    ``namespace``, the task signals), each checked; ``named(key)`` is how an
    error names a key (the middleware reads them from ``runtime.context``).
    Unknown keys raise. Values left None mean "the setting's own"; ``tags``
    comes back as a list (None: no tags)."""
    unknown = [key for key in overrides if key not in known]
    if unknown:
        close = [m for key in sorted(unknown) for m in difflib.get_close_matches(key, list(known), n=1)]
        raise ArgumentError(
            "unexpected per-call keyword argument(s) %s%s (known: %s)"
            % (
                ", ".join(map(repr, sorted(unknown))),
                "; did you mean %s?" % ", ".join(map(repr, close)) if close else "",
                ", ".join(known),
            )
        )
    checked = dict(overrides)
    for key, value in overrides.items():
        check = _OVERRIDE_CHECKS.get(key)
        if check is not None and value is not None:
            checked[key] = check(value, named(key))  # as checked: a ``now`` in UTC
    checked["tags"] = check_tags(overrides.get("tags"), named("tags"))
    return checked
