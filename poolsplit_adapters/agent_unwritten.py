"""The messages the agent memory has read and not yet written, kept in the
agent's state so that a turn someone else removes from the state is still
stored, and an edited message is read again.

The working set lets a turn go only after its durable write; but another
middleware (LangChain's ``SummarizationMiddleware`` replaces the older
messages with a summary) or the host's own code (a ``RemoveMessage``) may
remove messages first, before or after the memory middleware in the list.
So every message the middleware reads (at the start of a run, at each model
call, at the end of a run) is noted in a private state key
(`UNWRITTEN_KEY`) as the write step reads it (`Noted`: its view, text,
transcript lines, whether it is the user's) until it is written. A noted
message no longer in the state has left it: `Unwritten.vanished` hands it
back, and the middleware writes it as it writes a demoted turn (its turns'
episodes and parts, the standing statements not read yet) at its next model
call or at the end of the run, then forgets the note. A message that is
written (demoted) is forgotten too, so no message is written twice.

A note also holds the digest of the text whose standing statements were
read (``heard``): a message edited in place (resent with the same id, which
LangGraph replaces) has a new text, so it is read again
(`Unwritten.unheard`); the episode is written once, from the text the
message has when it leaves.

Messages come in as `Heard`; nothing here imports a framework.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Optional

from typing_extensions import TypedDict

from .memory.working_set import HUMAN, View

__all__ = ["Heard", "Noted", "Unwritten", "UNWRITTEN_KEY", "LEGACY_HEARD_KEY"]

#: The state key of the messages read and not yet written (private).
UNWRITTEN_KEY = "poolsplit_unwritten"
#: The state key 0.3 kept the last human message read in (its id): a thread
#: checkpointed by it has every message up to that one read.
LEGACY_HEARD_KEY = "poolsplit_heard"


@dataclass(frozen=True)
class Heard:
    """One message of the agent's state, as the write step reads it.

    Attributes:
        view: what the working set knows of it (kind, id, tool calls).
        text: its text.
        lines: its lines in a transcript, each as (label, body)
            (``("tool x: ", "...")``), spelled when a demoted turn needs them.
        plain: an answer of the model without tool calls.
        user: the user's own words. A human message a framework wrote
            (LangChain's summary of the conversation, written by a model)
            is not: no standing statement is read from it, and a demoted
            turn stores it among the answer's lines, under its own label.
    """

    view: View
    text: str
    lines: Callable[[], Sequence[tuple[str, str]]]
    plain: bool = False
    user: bool = True


class Noted(TypedDict):
    """A message read and not yet written, in the state's JSON form: `Heard`
    with its lines spelled, and the digest of the text whose standing
    statements were read (None: not read yet)."""

    key: str
    kind: str
    id: Optional[str]
    calls: list[str]
    answers: Optional[str]
    text: str
    lines: list[list[str]]
    plain: bool
    user: bool
    heard: Optional[str]


def digest(text: str) -> str:
    """What a note compares a message's text by (an edit changes it)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _key(message: Heard) -> str:
    """A message's key among the notes: its id (a message without one, which
    LangGraph's state never holds, by its kind and text)."""
    view = message.view
    return "id:%s" % view.id if view.id is not None else "text:%s:%s" % (view.kind, digest(message.text))


def _note(message: Heard, heard: Optional[str]) -> Noted:
    view = message.view
    return {
        "key": _key(message),
        "kind": view.kind,
        "id": view.id,
        "calls": list(view.calls),
        "answers": view.answers,
        "text": message.text,
        "lines": [[label, body] for label, body in message.lines()],
        "plain": message.plain,
        "user": message.user,
        "heard": heard,
    }


def _heard_of(note: Noted) -> Heard:
    lines = tuple((str(label), str(body)) for label, body in note["lines"])
    view = View(note["kind"], note["id"], calls=tuple(note["calls"]), answers=note["answers"])
    return Heard(view, note["text"], lambda: lines, plain=note["plain"], user=note["user"])


@dataclass(frozen=True)
class Unwritten:
    """One hook's messages (the state's, as the write step reads them)
    against the notes the state holds.

    Attributes:
        messages: the state's messages.
        notes: the notes, by key, oldest first (read from the state, or,
            for a thread checkpointed before the notes, made from its
            messages, the first ones up to the legacy last-read id read).
        held: whether the state holds the notes (False: they are to be written).
    """

    messages: Sequence[Heard]
    notes: Mapping[str, Noted]
    held: bool = True

    @classmethod
    def of(cls, messages: Sequence[Heard], state: Mapping[str, Any]) -> Unwritten:
        """The messages against the notes ``state`` holds."""
        held: Optional[Sequence[Noted]] = state.get(UNWRITTEN_KEY)
        if held is not None:
            return cls(messages, {n["key"]: n for n in held})
        legacy = state.get(LEGACY_HEARD_KEY)
        ids = [m.view.id for m in messages]
        upto = ids.index(legacy) + 1 if isinstance(legacy, str) and legacy in ids else 0
        made = {_key(m): _note(m, digest(m.text) if i < upto else None) for i, m in enumerate(messages)}
        return cls(messages, made, held=False)

    def vanished(self) -> list[Heard]:
        """The noted messages no longer in the state (someone else removed
        them before they were written), oldest first."""
        here = {_key(m) for m in self.messages}
        return [_heard_of(n) for k, n in self.notes.items() if k not in here]

    def unheard(self, message: Heard) -> bool:
        """Whether ``message`` is a human message whose standing statements
        were not read, or were read from another text (it was edited since)."""
        if message.view.kind != HUMAN:
            return False
        note = self.notes.get(_key(message))
        return note is None or note["heard"] != digest(message.text)

    def noted(self, *, heard: Collection[int] = (), dropped: Sequence[int] = (), vanished: bool = True) -> list[Noted]:
        """The notes after the hook: each message still in the state but at
        the positions ``dropped`` (written and removed), the human messages
        at the positions ``heard`` marked read; with ``vanished``, the notes
        of the vanished messages first (False: they were written)."""
        here = {_key(m) for m in self.messages}
        out = [n for k, n in self.notes.items() if vanished and k not in here]
        gone = set(dropped)
        for i, message in enumerate(self.messages):
            if i in gone:
                continue
            old = self.notes.get(_key(message))
            read = digest(message.text) if i in heard and message.view.kind == HUMAN else old and old["heard"]
            if old is not None and old["text"] == message.text and old["calls"] == list(message.view.calls):
                out.append(old if old["heard"] == read else {**old, "heard": read})
            else:
                out.append(_note(message, read))
        return out

    def changed(self, notes: Sequence[Noted]) -> bool:
        """Whether ``notes`` differ from the state's."""
        return not self.held or list(self.notes.values()) != list(notes)
