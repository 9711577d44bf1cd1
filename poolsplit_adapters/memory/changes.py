"""The current value first: a statement that changes a stored one supersedes it.

"The launch is on March 3." is stored; weeks later the user says "The launch
moved to March 17." Stored side by side, the two compete on equal terms, and
when only one fits the budget it is as often the stale one. So when a write
brings a statement of a **changing type** (:data:`CHANGING_TYPES`: a fact,
an instruction, a preference) that changes an active stored one of the same
namespace, type and session, the store links them
(:func:`~poolsplit_adapters.memory.validity.supersede`): the older version is
closed (``superseded_by``, ``valid_until``), kept in ``history`` and for
``as_of`` reads, and the newer loads in its place. Never across namespaces
or types (the duplicate finder's bucket), never an always-scope entry (a
correction is the host's), never a repeat (the duplicate check runs first).

The rule (:func:`changes`) is deterministic. A statement names a **subject**,
the content words before its first relation word (*is, are, was, has,
moved, changed, switched, became, now, ...*, or a colon), without values
and without the words that only say a change happened (*now, moved,
actually, ...*: :data:`CHANGE_WORDS`). Two statements change one another
when:

* their subjects are the same within :data:`SUBJECT_OVERLAP` (Jaccard), and
  what follows differs: another value, another polarity or qualifier, or a
  word swapped for another, not only words added ("The launch is on March
  3." / "The launch moved to March 17."; "... is db-9" / "... is db-9
  (confirmed)" is no change);
* or, without a relation word (an instruction: "Always use tabs." / "Never
  use tabs."), their content words are the same within
  :data:`WORDING_OVERLAP` and their negations or qualifiers differ (not only
  their values: "deploy 3 went fine" / "deploy 4 went fine" are two deploys).

Measured by ``python benchmarks/changes.py`` on the duplicate benchmark's
labelled pairs: see its output for the false-supersede rate on statements of
another subject (the twins) and the share of real updates it links.

Example::

    >>> changes("The launch moved to March 17.", "The launch is on March 3.")
    True
    >>> changes("The release date is March 3.", "The launch is on March 3.")
    False
    >>> changes("Never use tabs.", "Always use tabs.")
    True
"""

from __future__ import annotations

import re
from typing import Any, Collection, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from .duplicates import (
    DuplicateFinder,
    content_words,
    jaccard,
    key_tokens,
    normalise_text,
    swapped,
    value_tokens,
)

__all__ = [
    "CHANGE_WORDS",
    "CHANGING_TYPES",
    "SUBJECT_OVERLAP",
    "WORDING_OVERLAP",
    "changes",
    "changing",
    "states",
    "subject",
    "updates",
]

#: The entry types whose statements a later statement may change.
CHANGING_TYPES: FrozenSet[str] = frozenset({"fact", "instruction", "preference"})
#: Subjects at least this similar (Jaccard of their words) are the same
#: subject. At 0.5 "the billing API version" and "the search API version"
#: (2 of 4 words) would be one; at 0.6 they are two.
SUBJECT_OVERLAP = 0.6
#: Without a relation word, the two texts' content words at least this
#: similar, and a value, negation or qualifier that differs.
WORDING_OVERLAP = 0.8
#: Words that say a change happened, not what changed.
CHANGE_WORDS: FrozenSet[str] = frozenset(
    """now actually currently moved changed switched updated instead anymore longer latest still again
    pushed postponed rescheduled increased decreased grew dropped became becomes went turned""".split()
)
# The relation words: where a statement's subject ends ...
_WORDS = (
    r"\b(?:is|are|was|were|has|have|had|moved|changed|switched|became|becomes|now|will|equals|lives|works|uses"
    r"|use|live|work|'s|'m|'re|am)\b|(?:是|在|有|改为|改成|变成)"
)
_RELATION_WORD = re.compile(_WORDS)
# ... or a colon or an equals sign ("Primary region: eu-west-1").
_RELATION = re.compile(_WORDS + r"|[:=]")


def states(text: str) -> bool:
    """Whether ``text`` states something of a subject with a relation word
    (*is, has, moved, uses, ...*), the shape of a fact (a bare ``key=value``
    or a label is not one)."""
    found = _RELATION_WORD.search(normalise_text(text))
    return found is not None and found.start() > 0


def _split(text: str) -> Optional[Tuple[str, str]]:
    normal = normalise_text(text)
    found = _RELATION.search(normal)
    if found is None or found.start() == 0:
        return None
    return normal[: found.start()], normal[found.start() :]


def subject(text: str) -> Optional[FrozenSet[str]]:
    """The words of ``text``'s subject (see the module), or None when it
    names none (no relation word, or nothing before it)."""
    parts = _split(text)
    if parts is None:
        return None
    keys = key_tokens(parts[0])
    words = frozenset(
        w
        for w in content_words(parts[0])
        if w not in CHANGE_WORDS and w not in keys and not any(c.isdigit() for c in w)
    )
    return words or None


def changes(new: str, old: str) -> bool:
    """Whether the statement ``new`` changes ``old`` (see the module)."""
    if normalise_text(new) == normalise_text(old):
        return False
    a, b = _split(new), _split(old)
    subject_a, subject_b = subject(new), subject(old)
    if a is not None and b is not None and subject_a is not None and subject_b is not None:
        if jaccard(subject_a, subject_b) < SUBJECT_OVERLAP:
            return False
        rest_a = content_words(a[1]) - CHANGE_WORDS
        rest_b = content_words(b[1]) - CHANGE_WORDS
        # another value, polarity or qualifier, or other words (not only more of them: "(confirmed)")
        return key_tokens(a[1]) != key_tokens(b[1]) or swapped(rest_a, rest_b)
    keys_a, keys_b = key_tokens(new), key_tokens(old)
    words_a = content_words(new) - CHANGE_WORDS - keys_a
    words_b = content_words(old) - CHANGE_WORDS - keys_b
    # Polarity and qualifiers only: "deploy 3 went fine" / "deploy 4 went fine" are two deploys.
    guards_a, guards_b = keys_a - set(value_tokens(new)), keys_b - set(value_tokens(old))
    return bool(words_a) and jaccard(words_a, words_b) >= WORDING_OVERLAP and guards_a != guards_b


def changing(entry: Mapping[str, Any]) -> bool:
    """Whether ``entry`` may change a stored statement: a changing type, not
    always-scope (a correction is never superseded by the write path)."""
    return entry.get("type") in CHANGING_TYPES and entry.get("scope") != "always"


def updates(
    finder: DuplicateFinder, entries: Sequence[Mapping[str, Any]], skip: Collection[int] = ()
) -> List[Optional[str]]:
    """For each entry (in order), the id of the stored statement it
    changes, or None: among ``finder``'s kept entries of its bucket, the
    ones it :func:`changes`, the newest (the last kept) first. The entries
    themselves and those at positions ``skip`` (repeats) change nothing;
    an entry of the batch is never a target (only stored versions are),
    and no stored entry is changed twice by one batch."""
    own = {str(e.get("id")) for e in entries}
    taken: set[str] = set()
    out: List[Optional[str]] = []
    for position, entry in enumerate(entries):
        found = None
        if position not in skip and changing(entry):
            text = str(entry.get("content", ""))
            for kept in reversed(finder.kept_like(entry)):
                kept_id = str(kept.get("id"))
                if kept_id in own or kept_id in taken or kept.get("scope") == "always":
                    continue
                if changes(text, str(kept.get("content", ""))):
                    found = kept_id
                    taken.add(kept_id)
                    break
        out.append(found)
    return out
