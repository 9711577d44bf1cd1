"""Whole-word, case-insensitive matching: the one rule for task signals and
detail words.

Text is split into words, runs of letters and digits (any script), lower-cased;
everything else (spaces, punctuation, ``_``, ``-``) separates words. A signal
is split the same way and matches when its words occur consecutively. So
``"run_test"`` matches ``"run test"`` and ``"Run-Test"``, ``"fix"`` does not
match ``"prefix"`` or ``"fixing"`` (there is no stemming: list the forms you
want), and ``"pull request"`` matches ``"open a Pull-Request"``.
"""

from __future__ import annotations

from typing import Tuple

# The rule lives in the one tokenizer module; ``words`` is its name here.
from ..relevance.words import lower_words as words

__all__ = ["words", "contains"]


def contains(haystack: Tuple[str, ...], signal: str) -> bool:
    """Whether the words of ``signal`` occur consecutively in ``haystack``.

    A signal with no word at all (``""``, ``"--"``) never matches: it would
    otherwise match every text.
    """
    needle = words(signal)
    if not needle:
        return False
    width = len(needle)
    if width == 1:
        return needle[0] in haystack
    return any(haystack[i : i + width] == needle for i in range(len(haystack) - width + 1))
