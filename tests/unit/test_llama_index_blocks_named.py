"""A LlamaIndex flush writes a user's message of blocks that are not text
(an image the user sent) as lines naming them, as the agent middleware does:
never dropped as empty, never with the image's data."""

from __future__ import annotations

from llama_index.core.base.llms.types import ChatMessage, ImageBlock, MessageRole, TextBlock, ThinkingBlock

from poolsplit_adapters import Pool
from poolsplit_adapters.llama_index import message_text, poolsplit_memory_blocks
from poolsplit_adapters.memory.turns import block_line

POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("standing", 256, 20, ("instruction", "preference")),
    Pool("episodes", 300, 3, ("episode", "fact")),
]


def test_a_flushed_image_only_user_message_is_stored_as_the_line_naming_it():
    store = poolsplit_memory_blocks([], POOLS)[0].store
    sent = [
        ChatMessage(role=MessageRole.USER, blocks=[ImageBlock(url="https://example.com/diagram.png")]),
        ChatMessage(role=MessageRole.ASSISTANT, content="A sequence diagram of the login flow."),
        ChatMessage(role=MessageRole.USER, blocks=[ImageBlock(image=b"\x89PNG inline bytes")]),
    ]
    store.flush(sent)
    contents = sorted(e["content"] for e in store.index.entries)
    assert contents == [
        "assistant: A sequence diagram of the login flow.",
        "user: [image: https://example.com/diagram.png]",
        "user: [image]",
    ]


def test_message_text_names_a_users_blocks_and_keeps_the_models_text_only():
    said = ChatMessage(
        role=MessageRole.USER,
        blocks=[TextBlock(text="What is wrong here?"), ImageBlock(url="https://example.com/a.png")],
    )
    answer = ChatMessage(
        role=MessageRole.ASSISTANT, blocks=[ThinkingBlock(content="let me look"), TextBlock(text="The port.")]
    )
    assert message_text(said) == "What is wrong here?\n[image: https://example.com/a.png]"
    assert message_text(answer) == "The port."
    assert block_line("image", "file:///home/ana/secret.png") == "[image]"  # a local path is never stored
