"""A LlamaIndex chat message as the memory blocks read it: the ``messages``
a block is given (checked), a message's text as a line of the conversation,
the last user message a selection is made for (the adapter's memory blocks
and ``PoolSplitMemoryStore`` translate with these)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock

from ...errors import argument_error
from ...memory.turns import block_line, carried_line

__all__ = ["chat_messages", "default_flush_filter", "last_user_text", "message_text"]


def chat_messages(value: Any, name: str = "messages") -> Sequence[ChatMessage]:
    """``value`` when it is a list of ``ChatMessage`` (None: none), else an
    `ArgumentError` naming ``name`` (or the item that is not one). Why: a
    block's ``aget("hello")`` read the string's letters as messages and
    failed inside with ``'str' object has no attribute 'role'``, naming
    neither the argument nor what to pass."""
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise argument_error(name, "a list of ChatMessage", value)
    for position, message in enumerate(value):
        if not isinstance(message, ChatMessage):
            raise argument_error("%s[%d]" % (name, position), "a ChatMessage", message)
    return value


def last_user_text(messages: Any) -> str:
    """The text of the last user message of ``messages`` (checked,
    `chat_messages`), "" when there is none: what a block's selection is for."""
    for message in reversed(chat_messages(messages)):
        if message.role == MessageRole.USER:
            return message_text(message)
    return ""


def message_text(message: ChatMessage) -> str:
    """The text of a chat message (its text blocks, stripped), with a line
    naming each block of a user's (or a tool's) message that is not text
    (`block_line`: an image the user sent, by its web address, never its
    data or its local path), followed by the text such a block carries (a
    citation's cited passage, a citable document's text: `carried_line`,
    quoted, never read as the user's own words), as the agent middleware
    reads a message: a user's message of only an image is flushed as that
    line, not dropped as empty, and a citation as its text, not
    ``[citation]`` alone. The model's own blocks that are not text
    (thinking, tool calls) are not lines of the conversation."""
    text = "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock)).strip()
    if message.role == MessageRole.ASSISTANT:
        return text
    named = [
        carried_line(block_line(str(getattr(b, "block_type", "block")), _address(b)), _carried(b))
        for b in message.blocks
        if not isinstance(b, TextBlock)
    ]
    return "\n".join([t for t in (text, *named) if t])


def _address(block: Any) -> Any:
    """Where a block's content lives: its ``url`` (an image), else its
    ``source`` (a citation's, a citable document's); `block_line` keeps
    a web address only."""
    return getattr(block, "url", None) or getattr(block, "source", None)


def _carried(block: Any) -> str:
    """The text a block that is not a ``TextBlock`` carries: a
    ``CitationBlock``'s ``cited_content``, a ``CitableBlock``'s text
    blocks, a ``ThinkingBlock``'s ``content``; "" for one that carries none
    (an image, audio). Read by attribute, so a block type a later
    llama-index-core adds with the same fields is read the same way."""
    held: Optional[Any] = getattr(block, "cited_content", None) or getattr(block, "content", None)
    parts = held if isinstance(held, list) else [held]
    texts = [part if isinstance(part, str) else getattr(part, "text", None) for part in parts]
    return "\n".join(t.strip() for t in texts if isinstance(t, str) and t.strip())


def default_flush_filter(message: ChatMessage) -> bool:
    """The flushed messages that become candidates when no ``flush_filter``
    is given: user and assistant messages with text."""
    return message.role in (MessageRole.USER, MessageRole.ASSISTANT) and bool(message_text(message))
