"""What a consolidator is asked and how it answers: the prompt, the
`Decider` that answers it, and `MalformedOutput` for an
answer that is no plan.

Its own module because two sides need it: `.consolidate` builds the
prompt and validates the answer, and `.consolidate_models` (the
LangChain and LlamaIndex drivers, imported only when a consolidation runs)
turns a model into a `Decider`. Kept here, below both, each side
imports it and neither imports the other's module to reach it.
`.consolidate` exports these names too: they are part of the
consolidator's documented API.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Protocol, Sequence, Tuple, runtime_checkable

from ..poolsplit import entry_error

__all__ = ["ConsolidationPrompt", "Decider", "MalformedOutput", "SYSTEM_PROMPT", "build_prompt"]


class MalformedOutput(ValueError):
    """The model's output as a whole is not a consolidation plan.

    Attributes:
        output: what the model returned (raw text or message content), for
            the refusal record.
    """

    def __init__(self, message: str, output: Any = None) -> None:
        super().__init__(message)
        self.output = output


SYSTEM_PROMPT = """You maintain an AI agent's long-term memory.
You are shown EXISTING memories and NEW candidate memories, each with a number (its handle).
For each NEW memory choose one operation:
- {"op": "add", "new": N}: it is new information; store it.
- {"op": "update", "new": N, "old": M}: it changes what existing memory M says (a new value for the same thing); M is closed and kept as history.
- {"op": "noop", "new": N, "old": M}: it repeats existing memory M (or use "old": null when it is not worth keeping at all).
An existing memory that is no longer true with nothing to replace it: {"op": "retire", "old": M, "new": N} (N: the new memory that shows it).
You may add "reason": a short explanation. Use only the handles shown. You cannot write or change any text.
Memories marked "locked" are corrections curated by the host: never update or retire them."""


@dataclass(frozen=True)
class ConsolidationPrompt:
    """What the model is shown: the system text and the numbered memories as
    JSON (content escaped by the encoding, so a memory cannot close the list
    it is in).

    Example:
        >>> p = build_prompt([{"id": "n1", "content": "db-9"}], [{"id": "e1", "content": "db-7"}])
        >>> json.loads(p.payload)["new"][0]["handle"]
        2
    """

    system: str
    payload: str
    existing: Tuple[Mapping[str, Any], ...]
    candidates: Tuple[Mapping[str, Any], ...]

    def text(self) -> str:
        """System text and payload as one completion prompt."""
        return "%s\n\n%s" % (self.system, self.payload)


def _shown(entry: Mapping[str, Any], handle: int, locked: bool) -> Dict[str, Any]:
    row: Dict[str, Any] = {"handle": handle, "type": entry.get("type", "note"), "text": entry["content"]}
    created = entry.get("valid_from") or entry.get("created")
    if isinstance(created, str):
        row["since"] = created
    if locked:
        row["locked"] = True
    return row


def check_inputs(candidates: Sequence[Mapping[str, Any]], existing: Sequence[Mapping[str, Any]]) -> None:
    """Every input a mapping with string ``content`` and a non-empty string
    ``id``, no id given twice: what a prompt (handles) and the validation of
    its answer (ids) both rely on.

    Raises:
        EntryError: the first input that is not.
    """
    ids: Dict[str, str] = {}
    for what, rows in (("candidate", candidates), ("existing", existing)):
        for index, entry in enumerate(rows):
            if not isinstance(entry, Mapping):
                raise entry_error(entry, index, None, "is not a mapping (%s %s)" % (what, type(entry).__name__))
            if not isinstance(entry.get("content"), str):
                raise entry_error(entry, index, "content", "must be a string (%s memory)" % what)
            if not isinstance(entry.get("id"), str) or not entry["id"]:
                raise entry_error(entry, index, "id", "must be a non-empty string (%s memory)" % what)
            if entry["id"] in ids:
                # One handle per memory: a memory shown twice could be
                # changed twice, a candidate with a stored id would
                # supersede itself.
                raise entry_error(entry, index, "id", "is given twice (%s and %s memory)" % (ids[entry["id"]], what))
            ids[entry["id"]] = what


def build_prompt(candidates: Sequence[Mapping[str, Any]], existing: Sequence[Mapping[str, Any]]) -> ConsolidationPrompt:
    """The prompt for ``candidates`` beside ``existing`` (handles ``1..n``
    for existing, ``n+1..n+m`` for candidates).

    Raises:
        EntryError: an entry without string ``content`` or ``id``, or an id given twice.
    """
    check_inputs(candidates, existing)
    n = len(existing)
    payload = {
        "existing": [_shown(e, i + 1, e.get("scope") == "always") for i, e in enumerate(existing)],
        "new": [_shown(c, n + i + 1, False) for i, c in enumerate(candidates)],
    }
    return ConsolidationPrompt(
        SYSTEM_PROMPT, json.dumps(payload, ensure_ascii=False, indent=1), tuple(existing), tuple(candidates)
    )


@runtime_checkable
class Decider(Protocol):
    """What drives a consolidation: a prompt in, the parsed operations out.

    The drivers for a LangChain chat model and a LlamaIndex LLM live in
    `consolidate_models`; a host can pass
    any object with these two methods instead (a rules engine, a cache).

    Example:
        ```python
        class AddEverything:
            def decide(self, prompt):
                n = len(prompt.existing)
                return [{"op": "add", "new": n + i + 1} for i in range(len(prompt.candidates))]

            async def adecide(self, prompt):
                return self.decide(prompt)
        ```
    """

    def decide(self, prompt: ConsolidationPrompt) -> Any:
        """The operations (a list of dicts). Raise `MalformedOutput`
        when the model's answer is not a plan."""
        ...

    async def adecide(self, prompt: ConsolidationPrompt) -> Any:
        """Async `decide`."""
        ...
