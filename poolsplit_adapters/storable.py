"""Text as every store can hold it: the one rule of what a character no
store can hold (NUL, a lone surrogate) becomes when the memory quotes
someone. A leaf module (no imports of the package), so the write gate and
the stores' checks can both use it."""

from __future__ import annotations

import re

__all__ = ["REPLACEMENT", "storable_form"]

#: What `storable_form` writes in place of a character no store can hold.
REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_form(text: str) -> str:
    r"""``text`` with every character no store can hold (NUL, a lone
    surrogate) replaced by U+FFFD, the Unicode replacement character;
    ``text`` itself when it has none.

    Why: the write gate turns what a person or a model said into an entry
    (a demoted turn, a ``remember`` note). Refused there, a turn holding a
    NUL could never be written, and the middleware, which keeps a turn
    until its write succeeds, retried and failed on every later turn of the
    thread. An entry a caller builds is still refused by name
    (`storable_text`,
    `check_storable`): only what the gate
    quotes is rewritten.

    Example:
        >>> storable_form("a\x00b")
        'a\ufffdb'
    """
    return _UNSTORABLE.sub(REPLACEMENT, text) if _UNSTORABLE.search(text) else text
