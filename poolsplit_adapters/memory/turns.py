"""From a conversation to entries: the write path's one shape for what was said.

Both frameworks' write paths (the agent middleware's demoted turns,
LlamaIndex's flushed chat) hand over messages and get back the gate's
proposals from here, so a turn is stored the same way wherever it was said:

* **each side of an exchange is its own entry**: the user's message
  (``role: "user"``, content ``"user: ..."``) and the answer with its tool
  calls and results (``role: "assistant"``), linked by one ``exchange`` id.
  The user's words carry the instructions, preferences and facts, and are
  short; stored together with a long answer they would cost as much as the
  answer and compete with it for one budget.
* **a long side is split, never refused** (`split_text`):
  parts of at most [`WriteGate.part_chars`][]
   characters
  on paragraph, line, sentence or word boundaries, each with the turn's
  provenance, its ``exchange``, and ``part`` / ``parts`` (1-based position
  and count). The working set lets a turn go only after every part is
  written, so a turn is never in neither place.
* **standing instructions and preferences** the user stated
  (`standing`) are entries of their own,
  ``type`` ``instruction`` or ``preference``, the sentence verbatim, with
  the user's provenance (``said_by: "user"``) and the ``exchange``: only for
  the user's side, never for the model's or a tool's.

A side of an exchange is a record of what was said: it is stored once only
when the very same text was stored (an exact repeat), never folded into a
text with the same words in another order ("should A depend on B" is not
"should B depend on A"); see `verbatim`.

Example:
    >>> from poolsplit_adapters.memory import WriteGate
    >>> from poolsplit_adapters.memory.turns import Provenance, Said, exchange_proposals
    >>> gate = WriteGate(part_chars=60)
    >>> where = Provenance("thread:t1", "memories.u1", "2026-07-01T00:00:00Z", exchange="x1")
    >>> props = exchange_proposals(gate, [Said("user", "Always answer briefly. What is 2+2?"),
    ...                                   Said("assistant", "4. " + "It is four. " * 6)], "episode", where)
    >>> [(p.entry["type"], p.entry.get("role"), p.entry.get("part")) for p in props]
    [('episode', 'user', None), ('instruction', None, None), ('episode', 'assistant', 1), ('episode', 'assistant', 2)]
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import argument_error
from ..relevance.words import fold
from ..storable import storable_form
from .parts import split_text
from .standing import FACT, INSTRUCTION, PREFERENCE, recognise
from .write_gate import Proposal, WriteGate, blank, hashed_id

__all__ = [
    "ASSISTANT",
    "USER",
    "USER_TYPES",
    "Provenance",
    "block_line",
    "block_lines",
    "carried_line",
    "content_text",
    "Said",
    "check_written_type",
    "exchange_id",
    "exchange_proposals",
    "standing_proposals",
]

USER = "user"
ASSISTANT = "assistant"

#: The types the write path gives only to what the user said (`standing`):
#: loaded from a pool of their own as the user's standing orders and facts.
USER_TYPES: Tuple[str, ...] = (INSTRUCTION, PREFERENCE, FACT)


def block_line(kind: str, address: Any = None) -> str:
    """The line that names a block of a message that is not text (an image
    the user sent, a file, audio): ``[image: https://...]``, or ``[image]``
    without a web address. Without it a turn of only an image would be
    written as nothing (an empty side) and leave the working set as
    nothing. A web address (``http``/``https``, its first 300 characters) is
    kept; inline data and local paths never are. The one rule of both
    frameworks' write paths.

    Example:
        >>> block_line("image", "https://example.org/cat.png")
        '[image: https://example.org/cat.png]'
        >>> block_line("image", "data:image/png;base64,iVBOR")
        '[image]'
    """
    place = str(address) if address is not None else ""
    shown = place[:300] if place.startswith(("http://", "https://")) else ""
    return "[%s%s]" % (kind, ": " + shown if shown else "")


def carried_line(line: str, text: str) -> str:
    """``line`` (a block named by `block_line`) followed by the text the
    block carries, each of its lines quoted (``"> "``): a passage the user
    cited, a document's text, a tool's answer pasted into the user's turn.
    Kept, so the turn is stored with what it showed, and quoted, because
    it is not the user's own words: the standing rules never read a quoted
    line (`standing.prose`), so "Always answer in French." inside a cited
    page is stored with the turn, never as the user's standing instruction.

    Example:
        >>> carried_line("[citation: https://example.org/a]", "Refunds round half-even.\\nAlways cite.")
        '[citation: https://example.org/a]\\n> Refunds round half-even.\\n> Always cite.'
        >>> carried_line("[image]", "")
        '[image]'
    """
    return "\n".join([line, *("> " + t.strip() for t in text.splitlines() if t.strip())])


def block_lines(blocks: Sequence[Any]) -> List[str]:
    """The lines of a message's content blocks that are not plain text (a
    LangChain message's list of dicts): each named by `block_line`, and
    followed by the text a block carries itself, quoted (`carried_line`: a
    ``tool_result`` a user message holds, in Anthropic's form: its
    ``content``, a string or text blocks). Without that text a tool's answer
    pasted into the user's turn was stored as ``[tool_result]`` alone;
    unquoted, its "Always answer in French." was stored as the user's own
    standing instruction. A block whose ``type`` is not a
    string is named ``[block]``, and a text block whose ``text`` is not a
    string ``[text]``: never dropped. The plain text blocks are the
    message's own text (`content_text`), not repeated here.

    Example:
        >>> block_lines([{"type": "text", "text": "hi"}, {"type": "tool_result", "content": "42 rows"}])
        ['[tool_result]\\n> 42 rows']
        >>> block_lines([{"type": "image", "url": "https://example.org/a.png"}, {"type": 7}])
        ['[image: https://example.org/a.png]', '[block]']
    """
    lines = []
    for block in blocks:
        if not isinstance(block, dict):
            continue  # a plain string block is part of the message's text
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), (str, type(None))):
            continue  # text (or an empty block): the message's own text
        name = kind if isinstance(kind, str) and kind.strip() else "block"
        url = block.get("url") or block.get("image_url")  # LangChain's v1 blocks, OpenAI's image_url
        line = block_line(name, url.get("url") if isinstance(url, dict) else url)
        lines.append(carried_line(line, _carried_text(block.get("content"))))
    return lines


def content_text(blocks: Sequence[Any]) -> str:
    """The text of a message's content blocks (a LangChain message's list):
    each text block (a ``text`` dict or a plain string) on a line of its
    own, then the lines of the others (`block_lines`).

    Why not the framework's ``message.text``: it joins the text blocks with
    nothing between them, so "Always use tabs." and "I prefer Perl." sent as
    two blocks read as one sentence, "Always use tabs.I prefer Perl.", one
    instruction, and the preference was lost.

    Example:
        >>> content_text([{"type": "text", "text": "Always use tabs."}, "I prefer Perl.", {"type": "image"}])
        'Always use tabs.\\nI prefer Perl.\\n[image]'
    """
    texts = [b.get("text") if isinstance(b, dict) else b for b in blocks if _is_text(b)]
    return "\n".join([t.strip() for t in texts if isinstance(t, str) and t.strip()] + block_lines(blocks))


def _is_text(block: Any) -> bool:
    """Whether a content block is text: a plain string, or a ``text`` dict
    (one whose text is not a string is named by `block_lines`)."""
    return isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")


def _carried_text(content: Any) -> str:
    """The text a non-text block carries in its ``content``: a string, or
    the ``text`` of the text blocks of a list."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(t.strip() for t in texts if isinstance(t, str) and t.strip())
    return ""


def check_written_type(value: Any, name: str) -> str:
    """A type a write path stamps on what anyone said (``episode_type``, a
    flushed line's; ``note_type``, the model's notes): a string that shows a
    word, and none of `USER_TYPES`, even up to case, spaces or invisible
    characters. Stamped on the model's answers, a tool's output or the
    model's notes, such a type would store them as the user's own standing
    instructions, preferences or facts.

    Raises:
        ArgumentError: naming ``name``.
    """
    if not isinstance(value, str) or not fold(value).strip():
        raise argument_error(name, "a non-empty string", value)
    if fold(value).strip() in USER_TYPES:
        raise argument_error(
            name,
            "none of %s (the types only the user's own statements are stored as: the model's answers, "
            "a tool's output and its notes would be stored as the user's)" % ", ".join(USER_TYPES),
            value,
        )
    return value


@dataclass(frozen=True)
class Said:
    """One side of an exchange: who said it (``"user"``, ``"assistant"``, or
    another role), and the text. ``labelled``: the text already carries its
    speakers' labels line by line (an answer with its tool calls), so no
    ``"<role>: "`` is put before it."""

    role: str
    text: str
    labelled: bool = False
    #: For a labelled text: its lines as (label, body) pairs, the text being
    #: their ``label + body`` joined by line breaks. A part cut inside a line
    #: is labelled with that line's label, never with words of the body
    #: that happen to read like one (a tool's output "user: never ..." is
    #: not the user's). Without them a labelled text is one line.
    lines: Tuple[Tuple[str, str], ...] = ()

    @classmethod
    def transcript(cls, role: str, lines: Sequence[Tuple[str, str]]) -> Said:
        """A labelled side from its (label, body) lines (e.g. ``("tool
        lookup: ", "...")``, ``("assistant called ", "f({...})")``)."""
        held = tuple((str(label), str(body)) for label, body in lines)
        return cls(role, "\n".join(label + body for label, body in held), labelled=True, lines=held)


def _continued(head: str, label: str, part_chars: int) -> str:
    """The label of a part cut inside a line labelled ``head``: the line's
    own when it names a speaker (``"tool lookup: "``), else the side's
    (``"assistant: "`` for ``"assistant called "``, or for a head too long
    to leave room in a part)."""
    return head if head.endswith(": ") and len(head) <= part_chars // 4 else label


def exchange_id(namespace: Optional[str], *parts: str) -> str:
    """The id linking the entries of one exchange (stable: a retried write
    gives the same)."""
    return hashed_id("exchange", (namespace or "", *parts))


@dataclass(frozen=True)
class Provenance:
    """Where and when one exchange was said, stamped on every entry of it:
    the harness's ``source``, the writer's ``namespace``, ``created``, the
    ``exchange`` id linking its entries, and the chat session that owns them
    (``owner``, part of each content key; None: none)."""

    source: str
    namespace: Optional[str]
    created: Optional[str]
    exchange: Optional[str] = None
    owner: Optional[str] = None

    def propose(self, gate: WriteGate, text: str, type: str, fields: Dict[str, Any], owner: Optional[str]) -> Proposal:
        """The gate's proposal of ``text``, with ``fields`` (and the exchange) stamped on it."""
        proposal = gate.propose(
            text, type=type, source=self.source, namespace=self.namespace, created=self.created, owner=owner
        )
        linked = {**fields, **({"exchange": self.exchange} if self.exchange else {})}
        return replace(proposal, entry={**proposal.entry, **linked})


def standing_proposals(gate: WriteGate, text: str, where: Provenance) -> List[Proposal]:
    """The instructions and preferences the user stated in ``text`` (the
    gate's [`standing`][poolsplit_adapters.memory.WriteGate.standing]
    rules; none when they are off), one proposal each."""
    if gate.standing is None:
        return []
    # no ``role``: a recognised statement is a claim, matched as claims are (near repeats
    # too), while a side of an exchange is a record of what was said, repeated only exactly
    return [
        where.propose(gate, found.text, found.kind, {"said_by": USER}, where.owner)
        for found in recognise(text, gate.standing)
    ]


def side_proposals(gate: WriteGate, said: Said, type: str, where: Provenance) -> List[Proposal]:
    """One side of an exchange as proposals: one entry, or its parts when it
    is longer than the gate's ``part_chars`` (each labelled with its role; a
    side a reader sees nothing of, `blank` once stored, is one proposal of
    its bare text, which the gate refuses as empty: with its label it was
    written as "user: " and the invisible rest)."""
    if blank(storable_form(said.text)):  # judged without its label: "user: " alone is not a line
        return [where.propose(gate, said.text, type, {"role": said.role}, where.owner)]
    label = "%s: " % said.role
    lines = said.lines or (("", said.text),)
    # where each line starts in the text, and what a part cut inside it is labelled with
    starts, at = [], 0
    for head, body in lines:
        starts.append(at)
        at += len(head) + len(body) + 1
    inner = [_continued(head, label, gate.part_chars) for head, _ in lines] if said.labelled else [label]
    pieces = split_text(said.text, max(1, gate.part_chars - max(len(x) for x in inner))) or [said.text]
    out, cursor = [], 0
    for n, piece in enumerate(pieces, 1):
        fields: Dict[str, Any] = {"role": said.role}
        key_owner = where.owner
        if len(pieces) > 1:
            fields.update(part=n, parts=len(pieces))
            # a part's key holds its place: two parts with the same text are two pieces of the message
            key_owner = "%s\x00%s\x00%d" % (where.owner or "", where.exchange or "", n)
        # every part says who spoke: a labelled text's part that starts a line keeps the line's
        # own label; one cut inside a line is labelled with that line's speaker
        offset = said.text.find(piece, cursor)
        cursor = offset + len(piece)
        line = bisect.bisect_right(starts, offset) - 1
        if said.labelled and offset == starts[line] and (lines[line][0] or not said.lines):
            text = piece
        else:
            text = inner[line] + piece
        out.append(where.propose(gate, text, type, fields, key_owner))
    return out


def exchange_proposals(
    gate: WriteGate, sides: Sequence[Said], type: str, where: Provenance, *, standing: bool = True
) -> List[Proposal]:
    """Every proposal of one exchange, in order: each side's entry or parts,
    and after a user's side the instructions and preferences it stated
    (``standing=False``: the caller recognised them already)."""
    out: List[Proposal] = []
    for said in sides:
        out.extend(side_proposals(gate, said, type, where))
        if standing and said.role == USER:
            out.extend(standing_proposals(gate, said.text, where))
    return out
