"""The consolidator's drivers: a LangChain chat model or a LlamaIndex LLM.

Both ask for the same structured output, `ConsolidationPlan` (a list
of `PlannedOperation`), so the model sees one JSON schema whatever
the framework:

* LangChain: ``chat_model.with_structured_output(ConsolidationPlan,
  include_raw=True)``, i.e. a forced tool call on models that support tools.
  A parse failure comes back as ``parsing_error`` instead of an exception,
  and is reported as a malformed output.
* LlamaIndex: ``llm.structured_predict(ConsolidationPlan, prompt)``
  (function calling where the LLM supports it, else JSON parsed out of the
  completion); a failure to parse is reported the same way.

The schema keeps unknown keys (``extra="allow"``) so the validator sees
them and refuses the operation: a model that says ``"scope": "always"`` or
``"content": "..."`` is refused, not silently trimmed. Handles are strict
integers (``"3"`` or ``true`` is not a handle).

Needs pydantic (both frameworks depend on it) and the framework of the model
in use; this module is imported only when a consolidation runs.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, List, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from .consolidate_prompt import ConsolidationPrompt, Decider, MalformedOutput

__all__ = ["PlannedOperation", "ConsolidationPlan", "LangChainDecider", "LlamaIndexDecider", "decider_for"]


class PlannedOperation(BaseModel):
    """One operation on the memory, by handles only.

    Example:
        >>> PlannedOperation(op="update", new=3, old=1).model_dump(exclude_none=True)
        {'op': 'update', 'new': 3, 'old': 1}
    """

    model_config = ConfigDict(extra="allow")

    op: str = Field(description='One of "add", "update", "retire", "noop".')
    new: Optional[StrictInt] = Field(default=None, description="Handle of a NEW memory.")
    old: Optional[StrictInt] = Field(default=None, description="Handle of an EXISTING memory.")
    reason: Optional[str] = Field(default=None, description="A short explanation (for logs).")


class ConsolidationPlan(BaseModel):
    """Operations on the agent's long-term memory, one per new memory (plus
    any retirements), naming memories by their handles."""

    operations: List[PlannedOperation] = Field(description="The operations, in order.")


def _operations(plan: Any) -> List[dict[str, Any]]:
    if not isinstance(plan, ConsolidationPlan):
        raise MalformedOutput("the model gave no consolidation plan (got %s)" % type(plan).__name__, _loggable(plan))
    return [op.model_dump(exclude_none=True) for op in plan.operations]


def _loggable(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool, list, dict)):
        return value
    return repr(value)[:500]


def _framework_object(value: Any, kind: type, who: str, what: str) -> Any:
    """``value`` when it is a ``kind``, else the one TypeError both drivers raise."""
    if not isinstance(value, kind):
        raise TypeError("%s needs %s, got %s" % (who, what, type(value).__name__))
    return value


class LangChainDecider:
    """Drives a consolidation with a LangChain chat model's structured output.

    Args:
        model: a ``BaseChatModel`` whose ``with_structured_output`` works
            (it implements ``bind_tools``).

    Example:
        ```python
        from langchain_openai import ChatOpenAI
        result = consolidate(candidates, existing, model=ChatOpenAI(model="gpt-4.1-mini"))
        # or, explicitly: model=LangChainDecider(ChatOpenAI(...))
        ```
    """

    def __init__(self, model: Any) -> None:
        from langchain_core.language_models import BaseChatModel

        self.model = _framework_object(model, BaseChatModel, "LangChainDecider", "a BaseChatModel")
        self._structured = model.with_structured_output(ConsolidationPlan, include_raw=True)

    @staticmethod
    def _messages(prompt: ConsolidationPrompt) -> List[Any]:
        from langchain_core.messages import HumanMessage, SystemMessage

        return [SystemMessage(prompt.system), HumanMessage(prompt.payload)]

    @staticmethod
    def _said(raw: Any) -> Any:
        """What the model said, for the refusal record: its tool calls'
        arguments, else its text."""
        from langchain_core.messages import AIMessage

        if isinstance(raw, AIMessage):
            return [call["args"] for call in raw.tool_calls] if raw.tool_calls else raw.content
        return _loggable(raw)

    def _read(self, out: Any) -> List[dict[str, Any]]:
        if not isinstance(out, dict):
            raise MalformedOutput("structured output returned %s" % type(out).__name__, _loggable(out))
        error = out.get("parsing_error")
        if error is not None:
            raise MalformedOutput("the output does not parse as a plan: %s" % error, self._said(out.get("raw")))
        if out.get("parsed") is None:
            raise MalformedOutput("the model answered without a plan", self._said(out.get("raw")))
        return _operations(out["parsed"])

    def decide(self, prompt: ConsolidationPrompt) -> List[dict[str, Any]]:
        return self._read(self._structured.invoke(self._messages(prompt)))

    async def adecide(self, prompt: ConsolidationPrompt) -> List[dict[str, Any]]:
        return self._read(await self._structured.ainvoke(self._messages(prompt)))


class LlamaIndexDecider:
    """Drives a consolidation with a LlamaIndex LLM's ``structured_predict``
    (``llm``: any ``llama_index.core.llms.LLM``; the memories go in as
    template *values*, so braces in their text are never read as fields).

    Example:
        ```python
        from llama_index.llms.openai import OpenAI
        result = consolidate(candidates, existing, model=LlamaIndexDecider(OpenAI(model="gpt-4.1-mini")))
        ```
    """

    def __init__(self, llm: Any) -> None:
        from llama_index.core.llms import LLM
        from llama_index.core.prompts import PromptTemplate

        self.llm = _framework_object(llm, LLM, "LlamaIndexDecider", "a llama_index LLM")
        self._template = PromptTemplate("{system}\n\n{payload}")

    def decide(self, prompt: ConsolidationPrompt) -> List[dict[str, Any]]:
        with _parsing():
            plan = self.llm.structured_predict(
                ConsolidationPlan, self._template, system=prompt.system, payload=prompt.payload
            )
        return _operations(plan)

    async def adecide(self, prompt: ConsolidationPrompt) -> List[dict[str, Any]]:
        with _parsing():
            plan = await self.llm.astructured_predict(
                ConsolidationPlan, self._template, system=prompt.system, payload=prompt.payload
            )
        return _operations(plan)


@contextlib.contextmanager
def _parsing() -> Iterator[None]:
    """A structured prediction's parse failure (no JSON, or not the schema)
    as a `MalformedOutput`, reported like any malformed answer."""
    try:
        yield
    except (ValueError, ValidationError) as err:
        raise MalformedOutput("the output does not parse as a plan: %s" % err) from err


def decider_for(model: Any) -> Decider:
    """The driver for ``model``: a LangChain chat model, a LlamaIndex LLM,
    or a `Decider` as is.

    Raises:
        TypeError: none of these.
    """
    try:
        from langchain_core.language_models import BaseChatModel
    except ImportError:  # pragma: no cover - the langchain extra is not installed
        pass
    else:
        if isinstance(model, BaseChatModel):
            return LangChainDecider(model)
    try:
        from llama_index.core.llms import LLM
    except ImportError:  # pragma: no cover - the llama-index extra is not installed
        pass
    else:
        if isinstance(model, LLM):
            return LlamaIndexDecider(model)
    if isinstance(model, Decider):
        return model
    raise TypeError(
        "consolidate needs a LangChain BaseChatModel, a LlamaIndex LLM or a Decider (decide/adecide), got %s"
        % type(model).__name__
    )
