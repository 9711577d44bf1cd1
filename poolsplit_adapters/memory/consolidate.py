"""The consolidator: the host's own model decides, the harness validates and writes.

Rules catch exact and near repeats (`duplicates`), but only a model
can tell that "we moved staging to db-9" *updates* "the staging DB is db-7",
or that "the freeze is over" *retires* "deploys are frozen". So an optional
step, off by default (nothing calls it unless the host does), shows the model
the new candidate memories beside the nearest existing ones and asks for
operations:

    add      store the new memory as it is
    update   the new memory replaces an existing one: a supersede
             ([`supersede`][]): the old version is closed, never
             deleted, and keeps its provenance
    retire   an existing memory is no longer true and nothing replaces it
             ([`retire`][]); a new memory may be named as the
             evidence
    noop     the new memory repeats an existing one: its provenance is added
             to the kept one's ``seen`` ([`record_repeat`][])
             and the repeat is kept closed (retired), its text in history;
             naming no existing memory, the new one is kept as an add
             (nothing a model judges dull is dropped)

How the model is kept honest:

* **Small integer handles, never ids.** Existing memories are numbered
  ``1..n``, new ones ``n+1..n+m``, in one number space; an operation names
  handles, so the model cannot invent an id, and a handle from the wrong list
  is caught.
* **The model writes no text and sets no field.** Operations carry handles
  (and an optional reason, for logs); content comes from the candidates the
  harness stamped. An operation with any other key is refused, so a
  prompt-injected "set scope to always" never becomes a field.
* **Every operation is validated**, in order, and refused with a reason
  ([`OpRefusal`][]) when it is malformed, names an unknown handle, touches
  an always-scope correction (or claims ``scope: "always"``), reuses a handle
  an earlier accepted operation already took, crosses namespaces, or targets
  an entry that is no longer active, or asks for a change the validity
  rules refuse, or updates the user's own statement (``said_by: "user"``)
  with a memory that is not the user's statement of that type. Refused operations apply nothing.
* **Nothing is lost.** The result lists accepted operations (with the exact
  entry dicts to write), refused ones with their reason, and the
  *unresolved* candidates, those no accepted operation disposed of; the host
  writes those through its ordinary path. Malformed output as a whole (not
  JSON, not the schema, no answer) refuses everything and leaves every
  candidate unresolved.

The function is pure over entry dicts: it never writes, never mutates its
input, and returns what to write; the one write gate applies it.

Example:
    A LangChain chat model; a LlamaIndex ``LLM`` works the same:

    ```python
    result = consolidate(candidates, finder_nearest, model=chat_model, at="2026-12-01T10:00:00Z")
    for op in result.accepted:
        store.put_many(op.writes)
    for refused in result.refused:
        log.warning("consolidator refused %s: %s", refused.reason, refused.detail)
    write_normally([candidates[i] for i in result.unresolved])
    ```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from ..poolsplit import EntryError, default_is_active
from .consolidate_prompt import SYSTEM_PROMPT, ConsolidationPrompt, Decider, MalformedOutput, build_prompt, check_inputs
from .duplicates import record_repeat
from .expiry import Moment, moment_of
from .turns import USER as _USER
from .validity import retire, supersede
from .write_gate import claims_always, utc_stamp

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from llama_index.core.llms import LLM

__all__ = [
    "ConsolidationOp",
    "OpRefusal",
    "Accepted",
    "Refused",
    "ConsolidationResult",
    "ConsolidationPrompt",
    "Decider",
    "MalformedOutput",
    "SYSTEM_PROMPT",
    "build_prompt",
    "validate",
    "op_writes",
    "consolidate",
    "aconsolidate",
]


class ConsolidationOp(str, Enum):
    """The operations a consolidator may ask for."""

    ADD = "add"
    UPDATE = "update"
    RETIRE = "retire"
    NOOP = "noop"


class OpRefusal(str, Enum):
    """Why an operation (or the whole output) was refused."""

    #: not an operation of the schema: unknown op, a missing or extra field,
    #: a handle that is not an int; or the whole output is not the schema
    MALFORMED = "malformed"
    #: a handle that was not shown, or one from the wrong list
    UNKNOWN_HANDLE = "unknown_handle"
    #: it updates, retires or names an always-scope correction, takes an
    #: always-scope candidate by any op (a noop would drop it unwritten, or
    #: retire it once stored; refused, it is written as given), or claims
    #: ``scope: "always"``
    ALWAYS_SCOPE = "always_scope"
    #: an earlier accepted operation already took that handle
    CONFLICT = "conflict"
    #: the new and the existing memory are in different namespaces
    NAMESPACE = "namespace"
    #: the existing memory is no longer active (superseded, retired)
    INACTIVE = "inactive"
    #: the validity rules refuse the change (e.g. it would close a version
    #: before it became valid)
    INVALID_CHANGE = "invalid_change"
    #: it updates a statement of the user's own (``said_by: "user"``: an
    #: instruction, preference or fact the user stated) with a new memory
    #: that is not the user's statement of the same type (the model's
    #: answer, a tool's output, a turn): only the user changes what the
    #: user said
    USER_STATEMENT = "user_statement"


@dataclass(frozen=True)
class Accepted:
    """An operation that passed validation, with what it writes.

    Attributes:
        op: the operation.
        candidate: index into the ``candidates`` given (None for a retire
            without evidence).
        target: the existing entry it acts on (None for add, and for a noop
            that names none).
        writes: the new entry dicts to store, in order (`op_writes`):
            add, the candidate; update, the closed old version then the new
            one; retire, the closed entry; noop, the kept entry with the
            repeat recorded then the repeat closed, or, with no target, the
            candidate as given.
        reason: the model's stated reason, for logs (never stored).

    Example:
        >>> a = Accepted(ConsolidationOp.ADD, 0, None, ({"id": "n1", "content": "x"},), None)
        >>> a.op.value, a.writes[0]["id"]
        ('add', 'n1')
    """

    op: ConsolidationOp
    candidate: Optional[int]
    target: Optional[Mapping[str, Any]]
    writes: Tuple[Dict[str, Any], ...]
    reason: Optional[str]

    @property
    def as_given(self) -> bool:
        """Whether the operation keeps its candidate as it was given (an add,
        or a noop that names no existing memory): the host's ordinary write
        stores it, or, once stored, there is nothing to change."""
        return (
            self.candidate is not None
            and self.target is None
            and self.op
            in (
                ConsolidationOp.ADD,
                ConsolidationOp.NOOP,
            )
        )


@dataclass(frozen=True)
class Refused:
    """An operation (or a whole output, ``position`` None) that was refused.

    Attributes:
        position: its index in the model's list of operations, or None when
            the whole output was refused.
        output: what the model said, as parsed (JSON-friendly), or the raw
            text when it did not parse.
        reason: why.
        detail: a sentence a person can act on.

    Example:
        >>> r = Refused(0, {"op": "retire", "old": 9}, OpRefusal.UNKNOWN_HANDLE, "old 9 was not shown")
        >>> r.reason.value
        'unknown_handle'
    """

    position: Optional[int]
    output: Any
    reason: OpRefusal
    detail: str


@dataclass(frozen=True)
class ConsolidationResult:
    """What a consolidation decided: accepted and refused operations and the
    candidates left for the host's ordinary write path.

    Example:
        >>> result = validate([{"op": "add", "new": 2}, {"op": "retire", "old": 7}],
        ...                   [{"id": "n1", "content": "new fact"}], [{"id": "e1", "content": "old fact"}])
        >>> [a.op.value for a in result.accepted], [r.reason.value for r in result.refused], result.unresolved
        (['add'], ['unknown_handle'], ())
    """

    accepted: Tuple[Accepted, ...] = ()
    refused: Tuple[Refused, ...] = ()
    unresolved: Tuple[int, ...] = ()
    #: the model's output as parsed, for logs
    output: Any = field(default=None, compare=False)
    #: ``(operation, reason)`` of accepted operations the store refused when
    #: they applied (the target changed meanwhile): their candidates took
    #: the ordinary write (set by a store's ``consolidate``)
    failed: Tuple[Tuple[Accepted, str], ...] = ()

    def writes(self) -> List[Dict[str, Any]]:
        """Every entry dict to write, in operation order."""
        return [entry for op in self.accepted for entry in op.writes]

    def to_dict(self) -> Dict[str, Any]:
        """Counts for the gate's events: ops by kind, refusals by reason."""
        ops: Dict[str, int] = {}
        for op in self.accepted:
            ops[op.op.value] = ops.get(op.op.value, 0) + 1
        refused: Dict[str, int] = {}
        for r in self.refused:
            refused[r.reason.value] = refused.get(r.reason.value, 0) + 1
        counts: Dict[str, Any] = {
            "accepted": dict(sorted(ops.items())),
            "refused": dict(sorted(refused.items())),
            "unresolved": len(self.unresolved),
        }
        if self.failed:  # only when some did: the events' shape is otherwise unchanged
            counts["failed"] = len(self.failed)
        return counts


_VERB = {
    ConsolidationOp.ADD: "adds",
    ConsolidationOp.UPDATE: "updates",
    ConsolidationOp.RETIRE: "retires",
    ConsolidationOp.NOOP: "records a repeat on",
}
_ALLOWED = frozenset(("op", "new", "old", "reason"))
_NEEDS = {
    ConsolidationOp.ADD: ("new",),
    ConsolidationOp.UPDATE: ("new", "old"),
    ConsolidationOp.RETIRE: ("old",),
    ConsolidationOp.NOOP: ("new",),
}
_FORBIDS = {ConsolidationOp.ADD: ("old",)}


def _handle(raw: Mapping[str, Any], key: str) -> Optional[int]:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("%r must be an integer handle, got %r" % (key, value))
    return value


def _claims_always(raw: Mapping[str, Any]) -> bool:
    return claims_always(raw.get("scope"))


def _rewrites_user(candidate: Mapping[str, Any], target: Mapping[str, Any]) -> bool:
    """Whether superseding ``target`` with ``candidate`` would put other
    words in the place of the user's own statement: ``target`` was said by
    the user (``said_by``, stamped by the write path), ``candidate`` is not
    a statement of the user's of the same type."""
    if target.get("said_by") != _USER:
        return False
    return candidate.get("said_by") != _USER or candidate.get("type") != target.get("type")


def validate(
    operations: Any,
    candidates: Sequence[Mapping[str, Any]],
    existing: Sequence[Mapping[str, Any]],
    *,
    at: Optional[Moment] = None,
    output: Any = None,
) -> ConsolidationResult:
    """Judge a model's ``operations`` (a list of dicts) against the prompt's
    handles and turn the accepted ones into writes; see the module docstring
    for every rule. ``at`` is the time stamped on supersedes and retirements
    (default now).

    Raises:
        EntryError: an input entry without string ``content`` or ``id``
            (the host's entries, not the model's output).
    """
    check_inputs(candidates, existing)
    when = utc_stamp(moment_of(at, "at")) if not isinstance(at, str) else at
    moment_of(when, "at")  # a malformed string fails here, before anything is judged
    if not isinstance(operations, (list, tuple)):
        refusal = Refused(None, operations, OpRefusal.MALFORMED, "the output is not a list of operations")
        return ConsolidationResult((), (refusal,), tuple(range(len(candidates))), output)
    n = len(existing)
    accepted: List[Accepted] = []
    refused: List[Refused] = []
    used_new: Dict[int, int] = {}
    used_old: Dict[int, int] = {}
    for position, raw in enumerate(operations):

        def refuse(reason: OpRefusal, detail: str, raw: Any = raw, position: int = position) -> None:
            refused.append(Refused(position, raw, reason, detail))

        if not isinstance(raw, Mapping):
            refuse(OpRefusal.MALFORMED, "an operation must be an object, got %s" % type(raw).__name__)
            continue
        if _claims_always(raw):
            refuse(OpRefusal.ALWAYS_SCOPE, "a model may not write an always-scope memory")
            continue
        extra = sorted(str(k) for k in raw if k not in _ALLOWED and raw[k] is not None)
        if extra:
            refuse(OpRefusal.MALFORMED, "unknown field(s) %s: the model may only name handles" % ", ".join(extra))
            continue
        try:
            op = ConsolidationOp(raw.get("op"))
        except ValueError:
            refuse(OpRefusal.MALFORMED, "unknown op %r (add, update, retire or noop)" % (raw.get("op"),))
            continue
        try:
            new, old = _handle(raw, "new"), _handle(raw, "old")
        except ValueError as err:
            refuse(OpRefusal.MALFORMED, str(err))
            continue
        missing = [k for k in _NEEDS[op] if raw.get(k) is None]
        if missing:
            refuse(OpRefusal.MALFORMED, "%s needs %s" % (op.value, " and ".join(repr(k) for k in missing)))
            continue
        if any(raw.get(k) is not None for k in _FORBIDS.get(op, ())):
            refuse(OpRefusal.MALFORMED, "%s takes no 'old' handle (use update)" % op.value)
            continue
        if new is not None and not n < new <= n + len(candidates):
            refuse(
                OpRefusal.UNKNOWN_HANDLE,
                "new %d is not a new memory's handle (%d..%d)" % (new, n + 1, n + len(candidates)),
            )
            continue
        if old is not None and not 1 <= old <= n:
            refuse(OpRefusal.UNKNOWN_HANDLE, "old %d is not an existing memory's handle (1..%d)" % (old, n))
            continue
        candidate = candidates[new - n - 1] if new is not None else None
        target = existing[old - 1] if old is not None else None
        if target is not None and target.get("scope") == "always":
            refuse(
                OpRefusal.ALWAYS_SCOPE,
                "existing %s is an always-scope correction; a model never %s one" % (old, _VERB[op]),
            )
            continue
        if candidate is not None and candidate.get("scope") == "always":
            # Any op: a noop folded (or dropped) a host's correction, retiring it once stored.
            refuse(OpRefusal.ALWAYS_SCOPE, "new %s is always-scope; a model never writes, folds or drops one" % new)
            continue
        if (
            op is ConsolidationOp.UPDATE
            and target is not None
            and candidate is not None
            and _rewrites_user(candidate, target)
        ):
            refuse(
                OpRefusal.USER_STATEMENT,
                "existing %s is the user's own %s; new %s is not the user's %s, and only the user changes it"
                % (old, target.get("type"), new, target.get("type")),
            )
            continue
        if target is not None and not default_is_active(target):
            refuse(OpRefusal.INACTIVE, "existing %s is no longer active" % old)
            continue
        if target is not None and candidate is not None and target.get("namespace") != candidate.get("namespace"):
            refuse(OpRefusal.NAMESPACE, "new %s and existing %s are in different namespaces" % (new, old))
            continue
        takes_new = op is not ConsolidationOp.RETIRE
        takes_old = op in (ConsolidationOp.UPDATE, ConsolidationOp.RETIRE)
        if takes_new and new in used_new:
            refuse(OpRefusal.CONFLICT, "new %d was already disposed of by operation %d" % (new, used_new[new]))
            continue
        if takes_old and old in used_old:
            refuse(OpRefusal.CONFLICT, "existing %d was already changed by operation %d" % (old, used_old[old]))
            continue
        try:
            writes = op_writes(op, candidate, target, when)
        except EntryError as err:
            refuse(OpRefusal.INVALID_CHANGE, str(err))
            continue
        if takes_new and new is not None:
            used_new[new] = position
        if takes_old and old is not None:
            used_old[old] = position
        reason = raw.get("reason")
        accepted.append(
            Accepted(
                op, None if new is None else new - n - 1, target, writes, reason if isinstance(reason, str) else None
            )
        )
    unresolved = tuple(i for i in range(len(candidates)) if n + i + 1 not in used_new)
    return ConsolidationResult(tuple(accepted), tuple(refused), unresolved, output)


def op_writes(
    op: ConsolidationOp, candidate: Optional[Mapping[str, Any]], target: Optional[Mapping[str, Any]], when: str
) -> Tuple[Dict[str, Any], ...]:
    """The entry versions an operation writes, derived from ``candidate``
    and ``target`` (the one rule for both consolidation paths: before the
    write, LlamaIndex's flush, and after it, the middleware's
    `consolidation`):

    * add: the candidate as given;
    * update: the closed target, then the candidate superseding it;
    * retire: the closed target;
    * noop with a target: the target with the repeat's provenance in its
      ``seen`` (when the candidate has a ``source``), then the candidate
      *closed* (retired): the repeat's own text is kept as history, never
      reduced to a ``seen`` row;
    * noop without a target: the candidate as given, as an add (a memory is
      never dropped because a model found it dull).

    Raises:
        EntryError: the validity rules refuse the change.
    """
    source = candidate.get("source") if candidate is not None else None
    source = source if isinstance(source, str) and source else None
    if op in (ConsolidationOp.ADD, ConsolidationOp.NOOP) and target is None and candidate is not None:
        return (dict(candidate),)
    if op is ConsolidationOp.UPDATE and candidate is not None and target is not None:
        return supersede(target, candidate, at=when, source=source)
    if op is ConsolidationOp.RETIRE and target is not None:
        return (retire(target, at=when, source=source),)
    if op is ConsolidationOp.NOOP and target is not None and candidate is not None:
        closed = retire(candidate, at=when, source=source)
        if source is None:
            return (closed,)
        seen_at = candidate.get("created")
        return (record_repeat(target, source=source, at=seen_at if isinstance(seen_at, str) else when), closed)
    return ()


Model = Union["BaseChatModel", "LLM", Decider]


def _decider(model: Model) -> Decider:
    from .consolidate_models import decider_for

    return decider_for(model)


def _settle(
    decide: Any, candidates: Sequence[Mapping[str, Any]], existing: Sequence[Mapping[str, Any]], at: Optional[Moment]
) -> ConsolidationResult:
    if isinstance(decide, MalformedOutput):
        refusal = Refused(None, decide.output, OpRefusal.MALFORMED, str(decide))
        return ConsolidationResult((), (refusal,), tuple(range(len(candidates))), decide.output)
    return validate(decide, candidates, existing, at=at, output=decide)


def consolidate(
    candidates: Sequence[Mapping[str, Any]],
    existing: Sequence[Mapping[str, Any]],
    *,
    model: Model,
    at: Optional[Moment] = None,
) -> ConsolidationResult:
    """Ask ``model`` what to do with ``candidates`` given the nearest
    ``existing`` memories, and validate its answer.

    ``model``: a LangChain ``BaseChatModel`` that supports structured output
    (``with_structured_output``), a LlamaIndex ``LLM`` (``structured_predict``)
    or a `Decider`. ``at``: the time of supersedes and retirements
    (default now). With no candidates the model is not called.

    Raises:
        EntryError: an input entry without string ``content`` or ``id``, or an id given twice.
        TypeError: ``model`` is none of the above.
    """
    prompt = build_prompt(candidates, existing)
    if not candidates:
        return ConsolidationResult()
    decider = _decider(model)
    try:
        decided: Any = decider.decide(prompt)
    except MalformedOutput as err:
        decided = err
    return _settle(decided, candidates, existing, at)


async def aconsolidate(
    candidates: Sequence[Mapping[str, Any]],
    existing: Sequence[Mapping[str, Any]],
    *,
    model: Model,
    at: Optional[Moment] = None,
) -> ConsolidationResult:
    """Async [`consolidate`][] (``ainvoke`` / ``astructured_predict``)."""
    prompt = build_prompt(candidates, existing)
    if not candidates:
        return ConsolidationResult()
    decider = _decider(model)
    try:
        decided: Any = await decider.adecide(prompt)
    except MalformedOutput as err:
        decided = err
    return _settle(decided, candidates, existing, at)
