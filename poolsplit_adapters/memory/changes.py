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
moved, changed, switched, became, now, ...*, or a colon), in the clause
that holds it and from its last determiner on ("After the reorg my team
has 9 people." -> *team*), or the phrase a changing verb takes ("We
changed the sprints to three weeks." -> *sprints*), without values and
without the words that only say a change happened (*now, moved,
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
labelled pairs (48 of each kind a seed): statements of another subject with
the same value (the twins) linked 0 of 48 on the tuning seed and 0 of 48 on
the held-out one (false supersedes 0.000 / 0.000); real updates (another
value, the negation) linked 0.865 / 0.771. A missed update leaves two active
versions, as before this rule; a false link would close a fact still true,
so the thresholds favour precision. A fact entry the write path derived from
a turn is a view: the user's words stay in the turn's own entry either way.

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
    pushed postponed rescheduled increased decreased grew dropped became becomes went turned
    update correction note fyi btw reminder heads way also""".split()
)
# The relation words: where a statement's subject ends ...
_WORDS = (
    r"\b(?:is|are|was|were|has|have|had|moved|changed|switched|became|becomes|now|will|equals|lives|works|uses"
    r"|use|live|work|serves|runs|run|sits|costs|starts|begins|lasts|got|raised|lowered|increased|decreased"
    r"|reduced|cut|set|pushed|bumped|extended|'m|'re|am)\b|(?:是|在|有|改为|改成|变成)"
)
# A relation word that takes its subject after it: "we changed the sprints to three weeks".
_TRANSITIVE = re.compile(
    r"\b(?:changed|moved|switched|raised|lowered|increased|decreased|reduced|cut|set|pushed|bumped|extended)"
    r" (?:the|my|our|your|their|his|her|its) (.+?) (?:to|from|by|at|for)\b(.*)$"
)
# Where the clause that holds a subject starts: after the last comma or
# conjunction, then at its last determiner ("after the reorg my team" -> "team").
_CLAUSE = re.compile(r".*(?:[,;]| so | and | but | then | because )")
_DETERMINER = re.compile(r".*\b(?:the|my|our|your|their|his|her|its)\b")
_RELATION_WORD = re.compile(_WORDS)
# ... or a colon or an equals sign ("Primary region: eu-west-1").
_RELATION = re.compile(_WORDS + r"|[:=]")


def states(text: str) -> bool:
    """Whether ``text`` states something of a subject with a relation word
    (*is, has, moved, uses, ...*), the shape of a fact (a bare ``key=value``
    or a label is not one)."""
    found = _RELATION_WORD.search(normalise_text(text))
    return found is not None and found.start() > 0


def _words(text: str) -> FrozenSet[str]:
    """A subject's words: content words without values, change words and
    the words that say how (negations, qualifiers)."""
    keys = key_tokens(text)
    return frozenset(
        w for w in content_words(text) if w not in CHANGE_WORDS and w not in keys and not any(c.isdigit() for c in w)
    )


def _split(text: str) -> Optional[Tuple[FrozenSet[str], str]]:
    """(the subject's words, what is said of it), or None. The subject is
    what comes before the first relation word; when that is only a value
    ("Db-7 is the staging database."), the subject is what comes after it,
    and the value is what is said."""
    normal = normalise_text(text)
    # a relation word first: a colon after a leading label ("Update: the launch moved ...") is no relation
    found = _RELATION_WORD.search(normal) or _RELATION.search(normal)
    if found is None or found.start() == 0:
        return None
    before, after = normal[: found.start()], normal[found.start() :]
    transitive = _TRANSITIVE.match(after)
    if transitive is not None and _words(transitive.group(1)):
        return _words(transitive.group(1)), transitive.group(2)
    clause = _CLAUSE.sub("", before)
    words = _words(_DETERMINER.sub("", clause)) or _words(clause)
    if words:
        return words, after
    if value_tokens(before) and _words(after):
        return _words(after), before
    return None


def subject(text: str) -> Optional[FrozenSet[str]]:
    """The words of ``text``'s subject (see the module), or None when it
    names none (no relation word, or nothing before or after it)."""
    parts = _split(text)
    return None if parts is None else parts[0]


def changes(new: str, old: str) -> bool:
    """Whether the statement ``new`` changes ``old`` (see the module)."""
    if normalise_text(new) == normalise_text(old):
        return False
    a, b = _split(new), _split(old)
    if a is not None and b is not None:
        if jaccard(a[0], b[0]) < SUBJECT_OVERLAP:
            return False
        rest_a = content_words(a[1]) - CHANGE_WORDS - a[0]
        rest_b = content_words(b[1]) - CHANGE_WORDS - b[0]
        # another value, polarity or qualifier; or another value in words, sharing none
        # of the old one's ("is nord" / "is solarized dark"; "kept for 30 days, the log
        # retention period" / "..., the backup retention period" share the rest: no change)
        return key_tokens(a[1]) != key_tokens(b[1]) or (swapped(rest_a, rest_b) and not rest_a & rest_b)
    keys_a, keys_b = key_tokens(new), key_tokens(old)
    words_a = content_words(new) - CHANGE_WORDS - keys_a
    words_b = content_words(old) - CHANGE_WORDS - keys_b
    # Polarity and qualifiers only: "deploy 3 went fine" / "deploy 4 went fine" are two deploys.
    guards_a, guards_b = keys_a - set(value_tokens(new)), keys_b - set(value_tokens(old))
    return bool(words_a) and jaccard(words_a, words_b) >= WORDING_OVERLAP and guards_a != guards_b


def changing(entry: Mapping[str, Any]) -> bool:
    """Whether ``entry`` may change a stored statement: a changing type, not
    always-scope (a correction is never superseded by the write path)."""
    return (
        entry.get("type") in CHANGING_TYPES
        and entry.get("scope") != "always"
        # a version that names its place in a history (an import's line) is linked as it says
        and entry.get("supersedes") is None
        and entry.get("superseded_by") is None
    )


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
