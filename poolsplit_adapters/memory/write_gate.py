"""The write gate (seed 002): what the harness may persist to long-term memory.

Writing everything is a slow leak that pollutes every later recall, and a
model that can write standing corrections can be talked into poisoning its
own memory. So every harness write (an evicted turn, a note the agent asks to
keep) passes one gate, which refuses:

* ``empty``: nothing but whitespace;
* ``oversized``: longer than ``max_chars`` (a raw dump is not a memory);
* ``duplicate``: the same content (case, spacing and Unicode compatibility
  forms aside), or the same claim in other words, is already stored in that
  namespace with that type, or comes twice in one batch. The store decides
  ([`StoreVerbs.write`][poolsplit_adapters.stores.StoreVerbs.write],
  through `duplicates`): it keeps one entry
  and records the repeat's source and time in that entry's ``seen``;
  [`WriteGate.repeated`][] marks the proposals it answered for;
* ``always_scope``: anything claiming ``scope: "always"``. Always-scope
  entries are behavioural corrections, curated by the host, never written by
  a model;
* ``held_elsewhere``: the store refused the entry's id because another
  collection of the same database holds it (LangChain's ``PGVector``, whose
  ids are unique per database:
  [`IdHeldElsewhere`][poolsplit_adapters.stores.IdHeldElsewhere]). The content key has
  no collection in it, so two collections on one namespace label saving the
  same text meet on one id; the first keeps it, the second is told.
* ``id_taken``: the store holds another entry under the content key (a host
  wrote one there, e.g. a correction): it is not folded into it, nor
  replaced.

Every write path, not only the harness's, also meets `check_write`:
a store's ``add``/``supersede``/``put``, the CLI's ``add`` and ``import``,
LlamaIndex's flushed chat. It refuses, with an [`EntryError`][] naming the
entry and field, what the selector would accept but silently misread: a
near-miss scope (``"Always"``, ``" always"``: scope is exact, so such an
entry would be stored as contextual and never load first), blank content,
and a ``created`` that is not an ISO-8601 time (recency and time bounds
would treat the entry as undated).

Provenance is stamped here, by the harness, never taken from the model:
``source`` (e.g. ``"thread:<id>"`` or ``"agent:thread:<id>"``), ``created``
and ``namespace``. The entry id is derived from namespace, type and
normalised content, so a retried write lands on the same id and a duplicate
is one key lookup away.

Example:
    >>> from poolsplit_adapters.memory import WriteGate
    >>> gate = WriteGate(max_chars=200)
    >>> p = gate.propose("Staging deploys need the release checklist.", type="note",
    ...                  source="agent:thread:t1", namespace="memories.u1",
    ...                  created="2026-07-01T00:00:00Z")
    >>> p.refused is None, p.entry["source"]
    (True, 'agent:thread:t1')
    >>> gate.propose("x", type="note", source="s", namespace="n", claims={"scope": "always"}).refused
    <Refusal.ALWAYS_SCOPE: 'always_scope'>
"""

from __future__ import annotations

import datetime
import hashlib
import re
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Collection, Dict, List, Mapping, Optional, Sequence

from ..poolsplit import entry_error, given_token_count, near_miss_scope, visible
from ..storable import REPLACEMENT, storable_form
from .changes import CHANGING_TYPES
from .duplicates import normalise_text, seen_rows
from .expiry import EXPIRES, entry_time
from .standing import RULES, StandingRules

__all__ = [
    "Refusal",
    "Proposal",
    "GateReport",
    "WriteGate",
    "check_scope",
    "check_write",
    "claims_always",
    "hashed_id",
    "utc_stamp",
]

_SPACE = re.compile(r"\s+")
#: The default longest part of a split turn (characters).
PART_CHARS = 1000
#: The one scope value with a meaning (the core compares it exactly).
ALWAYS = "always"


class Refusal(str, Enum):
    """Why the gate refused a write."""

    EMPTY = "empty"
    OVERSIZED = "oversized"
    DUPLICATE = "duplicate"
    ALWAYS_SCOPE = "always_scope"
    #: decided by the store: another collection of its database holds the id
    HELD_ELSEWHERE = "held_elsewhere"
    #: decided by the store: another entry holds the content key as its id,
    #: with other text or scope (a host's entry written under that key)
    ID_TAKEN = "id_taken"


def hashed_id(type: str, parts: Sequence[str]) -> str:
    """``<type>-<24 hex of the SHA-256 of parts>``: the form of every id the
    write path derives (the content key, [`WriteGate.key`][]; a returning
    fact's, `returned_id`; an exchange's). Any text has one: a lone
    surrogate in what was said (which UTF-8 cannot encode) is hashed as is
    (``surrogatepass``; other text encodes as UTF-8), so the id of a
    flushed line's exchange never stops the flush."""
    return "%s-%s" % (type, hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:24])


def utc_stamp(moment: Optional[datetime.datetime] = None) -> str:
    """``moment`` (default: now) as the entries' ISO-8601 UTC form, ``...Z``."""
    moment = moment or datetime.datetime.now(datetime.timezone.utc)
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return moment.isoformat(timespec="seconds") + "Z"


def claims_always(scope: Any) -> bool:
    """Whether a writer's ``scope`` claims the always tier: exactly, or only
    up to case, spaces, invisible characters or compatibility forms
    (`near_miss_scope`). The one rule of what a model may not claim (the
    ``remember`` tool's argument, a consolidator's operation)."""
    return scope == ALWAYS or near_miss_scope(scope)


def blank(text: str) -> bool:
    """Whether ``text`` shows nothing to a reader: whitespace, invisible
    format characters (`visible`: a zero-width space, a soft hyphen) and
    the replacement of what no store can hold. The one rule of "nothing to
    remember" (the gate's ``empty``, `check_write`'s blank content)."""
    return not visible(text.replace(REPLACEMENT, "")).strip()


def check_scope(entry: Mapping[str, Any], index: Optional[int] = None) -> None:
    """Refuse a near-miss scope (``"Always"``, ``" always"``): scope is
    exact, so such an entry would be contextual and never load first. The
    write path's rule, also asked of what a store hands back (an item a
    host wrote past our writes would otherwise be a correction that never
    loads and that no report names)."""
    scope = entry.get("scope")
    if near_miss_scope(scope):
        raise entry_error(
            entry,
            index,
            "scope",
            "is %r, not exactly %r: scope is exact, so it would be stored as contextual and never load first"
            % (scope, ALWAYS),
        )


def check_write(entry: Mapping[str, Any], index: Optional[int] = None) -> None:
    """Raise [`EntryError`][] (naming the entry and
    field) for what no write path may store: blank ``content``, a
    ``token_count`` that is not a positive int, a ``scope`` that is
    ``"always"`` only up to case or spaces, an empty ``namespace``, a
    non-string ``status``,
    a ``supersedes`` or ``superseded_by`` that is not an id (or a
    ``superseded_by`` naming the entry or its predecessor), a ``seen`` that
    is not a list of ``{source, at}`` strings, a ``created``, ``expires``,
    ``valid_from`` or ``valid_until`` that does not parse as ISO-8601. The core's [`check_entry`][]
    (types) is the caller's other check; this one is about meaning.

    Example:
        >>> from poolsplit_adapters import EntryError
        >>> try:
        ...     check_write({"id": "fix", "content": "Use cents.", "scope": " always"})
        ... except EntryError as err:
        ...     print(err.entry_id, err.field)
        fix scope
    """
    content = entry.get("content")
    if isinstance(content, str) and blank(content):
        raise entry_error(entry, index, "content", "is empty or blank: there is nothing to remember")
    if entry.get("token_count") is not None and given_token_count(entry) is None:
        # The core would count the content instead; a store that keeps it as a
        # document's metadata refuses it on every read (`check_converted`).
        raise entry_error(entry, index, "token_count", "must be a positive integer, got %r" % (entry["token_count"],))
    check_scope(entry, index)
    if entry.get("namespace") == "":  # stored, no forget(namespace=...) nor Visibility could ever name it
        raise entry_error(
            entry,
            index,
            "namespace",
            "is empty: no query and no forget(namespace=...) can name it (None: no namespace)",
        )
    _check_lifecycle_fields(entry, index)
    # A malformed lifecycle time would keep or hide the entry silently, or
    # fail only the first query that reads it (an as_of query, history).
    opened, closed = (entry_time(entry, key, index) for key in ("valid_from", "valid_until"))
    entry_time(entry, EXPIRES, index)
    if opened is not None and closed is not None and closed < opened:
        # a version closed before it opened was never true: no as_of read would ever load it
        raise entry_error(entry, index, "valid_until", "is before its valid_from: a version closes after it opens")
    created = entry.get("created")
    if isinstance(created, str) and created:
        try:
            datetime.datetime.fromisoformat(created[:-1] if created.endswith("Z") else created)
        except ValueError:
            raise entry_error(entry, index, "created", "is %r, not an ISO-8601 time" % (created,)) from None


def _check_lifecycle_fields(entry: Mapping[str, Any], index: Optional[int]) -> None:
    """The write path's fields a store sets and reads back: ``status`` a
    string (a number retired the entry with no word of why), the version
    links ``supersedes`` / ``superseded_by`` ids, and ``seen`` the list of
    ``{source, at}`` sightings that the next repeat appends to (else that
    repeat's write failed, long after this one was accepted)."""
    status = entry.get("status")
    if "status" in entry and not isinstance(status, str):
        raise entry_error(entry, index, "status", "must be a string ('active' loads), got %r" % (status,))
    for key in ("supersedes", "superseded_by"):
        link = entry.get(key)
        if link is not None and not isinstance(link, str):
            raise entry_error(entry, index, key, "must be an entry id (a string), got %r" % (link,))
    # Its own successor, or its predecessor's, is a cycle no history reads
    # (a ``supersedes`` naming itself is the write's cycle check, `Change.versions`).
    after = entry.get("superseded_by")
    if after is not None and after in (entry.get("id"), entry.get("supersedes")):
        said = "the entry itself" if after == entry.get("id") else "the version it supersedes"
        raise entry_error(entry, index, "superseded_by", "names %s: its versions would form a cycle" % said)
    seen_rows(entry, index)


@dataclass(frozen=True)
class Proposal:
    """One write as the gate sees it.

    Attributes:
        entry: the stamped entry that would be written (its ``id`` is the
            content key).
        refused: why it must not be written, or None.
    """

    entry: Dict[str, Any]
    refused: Optional[Refusal] = None
    #: for a duplicate, the id of the entry it repeats (kept instead)
    kept: Optional[str] = None

    @property
    def key(self) -> str:
        return str(self.entry["id"])


@dataclass
class GateReport:
    """What one or more passes through the gate did: ids written and
    refusals counted by reason (reported with the selection events).

    Example:
        >>> gate = WriteGate(max_chars=10)
        >>> report = GateReport()
        >>> report.count([gate.propose("short", type="note", source="s", namespace="n"),
        ...               gate.propose("far too long", type="note", source="s", namespace="n")])
        >>> report.to_dict()
        {'written': 1, 'refused': {'oversized': 1}}
    """

    written: List[str] = field(default_factory=list)
    refused: Dict[str, int] = field(default_factory=dict)

    def count(self, proposals: Sequence[Proposal]) -> None:
        """Add ``proposals`` (after the write succeeded)."""
        for p in proposals:
            if p.refused is None:
                self.written.append(p.key)
            else:
                self.refused[p.refused.value] = self.refused.get(p.refused.value, 0) + 1

    def merge(self, other: GateReport) -> None:
        self.written.extend(other.written)
        for reason, n in other.refused.items():
            self.refused[reason] = self.refused.get(reason, 0) + n

    def to_dict(self) -> Dict[str, Any]:
        return {"written": len(self.written), "refused": dict(sorted(self.refused.items()))}

    def __bool__(self) -> bool:
        return bool(self.written or self.refused)


class WriteGate:
    """The durability gate every harness write goes through.

    Args:
        max_chars: longest content accepted for one note (default 8000
            characters): a memory is recalled into a small budget, so a raw
            dump would only crowd it. A turn leaving the working set is never
            refused for its length: it is split into parts instead.
        part_chars: the longest part a turn (or a flushed chat line) is split
            into (default `PART_CHARS`, 1000 characters, about 250
            tokens, or ``max_chars`` when smaller: a part must fit a pool's
            share of a small budget; at most ``max_chars``).
        standing: the rules that recognise standing instructions and
            preferences in the user's messages
            (`RULES`, the default),
            or None to store none.

    A gate cannot be changed once built (it may be shared by several
    writers, each of which checked it): build another instead.

    Use [`propose`][] for each candidate, then [`settle`][] with the keys
    already in the store (one batched lookup) to mark duplicates; write the
    accepted entries; count them with [`GateReport`][].
    """

    def __init__(
        self, *, max_chars: int = 8000, part_chars: Optional[int] = None, standing: Optional[StandingRules] = RULES
    ) -> None:
        if part_chars is None:
            part_chars = min(PART_CHARS, max_chars) if isinstance(max_chars, int) else PART_CHARS
        for name, value in (("max_chars", max_chars), ("part_chars", part_chars)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError("WriteGate %s must be an int >= 1, got %r" % (name, value))
        if part_chars > max_chars:
            raise ValueError("WriteGate part_chars (%d) must not exceed max_chars (%d)" % (part_chars, max_chars))
        if standing is not None and not isinstance(standing, StandingRules):
            raise TypeError("WriteGate standing must be StandingRules or None, got %s" % type(standing).__name__)
        self.max_chars = max_chars
        #: The longest part a turn is split into (`turns`).
        self.part_chars = part_chars
        #: The rules that recognise the user's standing instructions and
        #: preferences (`standing`); None: off.
        self.standing = standing
        self._built = True

    def __setattr__(self, name: str, value: Any) -> None:
        """Refuse a change once built: one gate is shared by every writer
        it was given to (middlewares, LlamaIndex stores), which checked it
        when they were built; a value set later failed deep inside a later
        turn's write (``standing="x"``, ``part_chars="10"``)."""
        if getattr(self, "_built", False):
            raise AttributeError(
                "WriteGate.%s cannot be changed once the gate is built (its writers checked it then); "
                "build another: WriteGate(max_chars=..., part_chars=..., standing=...)" % name
            )
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return "WriteGate(max_chars=%d, part_chars=%d)" % (self.max_chars, self.part_chars)

    @staticmethod
    def normalise(content: str) -> str:
        """The form duplicates are compared in (the one rule,
        `normalise_text`): invisible
        characters removed, NFKC, case-folded, spaces collapsed."""
        return normalise_text(content)

    def key(self, content: str, *, type: str, namespace: Optional[str], owner: Optional[str] = None) -> str:
        """The content key: ``<type>-<hash of namespace, type, normalised
        content>`` (and ``owner``, when the entry belongs to one chat
        session: two sessions' identical lines are two memories)."""
        return hashed_id(type, (namespace or "", type, self.normalise(content)) + (() if owner is None else (owner,)))

    def propose(
        self,
        content: Any,
        *,
        type: str,
        source: str,
        namespace: Optional[str],
        created: Optional[str] = None,
        tags: Optional[Sequence[str]] = None,
        claims: Optional[Mapping[str, Any]] = None,
        owner: Optional[str] = None,
    ) -> Proposal:
        """Stamp a candidate and judge what can be judged without the store.

        ``claims``: what the writer (e.g. the model, through a tool) said about
        the entry beyond its content. Only ``scope`` is looked at, to refuse
        always-scope claims; nothing else a model says becomes a field.
        ``owner``: the chat session the entry belongs to, if any (part of its
        key, see [`key`][]).
        """
        # What was said, as every store can hold it (NUL and lone surrogates
        # replaced): a turn the gate refused for a NUL would never leave the thread.
        text = storable_form(content if isinstance(content, str) else ("" if content is None else str(content)))
        entry: Dict[str, Any] = {
            "id": self.key(text, type=type, namespace=namespace, owner=owner),
            "content": text,
            "type": type,
            "source": storable_form(source),  # a thread id is the caller's text too
            "created": created or utc_stamp(),
        }
        if namespace is not None:
            entry["namespace"] = namespace
        # Each tag once, in the order given, and none a reader sees nothing
        # of: a model's remember(tags=["t"] * 5000) or ["\u200b"] was stored as given.
        kept = list(dict.fromkeys(tag for tag in (storable_form(str(t)) for t in tags or ()) if not blank(tag)))
        if kept:
            entry["tags"] = kept
        scope = (claims or {}).get("scope")
        if claims_always(scope):
            return Proposal(entry, Refusal.ALWAYS_SCOPE)
        if blank(text):  # nothing said a reader sees, or only what no store could hold
            return Proposal(entry, Refusal.EMPTY)
        if len(text) > self.max_chars:
            return Proposal(entry, Refusal.OVERSIZED)
        return Proposal(entry)

    @staticmethod
    def repeated(proposals: Sequence[Proposal], kept: Sequence[Optional[str]]) -> List[Proposal]:
        """``proposals`` with those the store kept as repeats marked
        ``duplicate``: ``kept`` holds, for each accepted proposal in order,
        the id of the entry it repeats, or None when it was written (the
        answer of ``StoreVerbs.write``, ``WriteReport.kept``)."""
        answers = iter(kept)
        out = []
        for p in proposals:
            if p.refused is None:
                kept_id = next(answers, None)
                if kept_id is not None:
                    p = replace(p, refused=Refusal.DUPLICATE, kept=kept_id)
            out.append(p)
        return out

    @staticmethod
    def settle(proposals: Sequence[Proposal], existing: Collection[str]) -> List[Proposal]:
        """Mark as duplicates the proposals whose key is already stored
        (``existing``) or was proposed earlier in the same batch. A
        statement of a changing type (a fact, an instruction, a preference)
        said twice in one batch is left to the store's write: a change of
        it may come between ("db-7", "db-9", "db-7"), and only the store
        knows which version the last one is (`changes`)."""
        stored = set(existing)
        seen = set(stored)
        out = []
        for p in proposals:
            again = p.key in stored or (p.key in seen and p.entry.get("type") not in CHANGING_TYPES)
            if p.refused is None and again:
                p = replace(p, refused=Refusal.DUPLICATE, kept=p.key)
            elif p.refused is None:
                seen.add(p.key)
            out.append(p)
        return out
