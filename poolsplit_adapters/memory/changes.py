"""The current value first: a statement that changes a stored one supersedes it.

"The launch is on March 3." is stored; weeks later the user says "The launch
moved to March 17." Stored side by side, the two compete on equal terms, and
when only one fits the budget it is as often the stale one. So when a write
brings a statement of a **changing type** (`CHANGING_TYPES`: a fact,
an instruction, a preference) that changes an active stored one of the same
namespace, type and session, the store links them
([`supersede`][]): the older version is
closed (``superseded_by``, ``valid_until``), kept in ``history`` and for
``as_of`` reads, and the newer loads in its place; when both come in one
write (a flush of many lines), the newer is linked to the older of the same
write (`batch_updates`). Never across namespaces
or types (the duplicate finder's bucket), never an always-scope entry (a
correction is the host's), never a repeat (the duplicate check runs first).

The rule (`changes`) is deterministic. A statement names a **subject**,
the content words before its first relation word (*is, are, was, has,
moved, changed, switched, became, now, ...*, or a colon), in the clause
that holds it and from its last determiner on ("After the reorg my team
has 9 people." -> *team*), or the phrase a changing verb takes ("We
changed the sprints to three weeks." -> *sprints*), without values and
without the words that only say a change happened (*now, moved,
actually, ...*: `CHANGE_WORDS`). Two statements change one another
when:

* their subjects are the same within `SUBJECT_OVERLAP` (Jaccard), and
  what is said of them changes: both hold values and the values differ
  ("The launch is on March 3." / "The launch moved to March 17."); or the
  same words with another polarity or qualifier; or a value in words of at
  most `MAX_VALUE_WORDS` words sharing none of the old one's ("is nord"
  / "is solarized dark"). Words added are no change ("... is db-9" / "...
  is db-9 (confirmed)"), nor another claim about the subject ("Refunds are
  rounded half-even." / "Refunds are asynchronous: the provider calls our
  webhook within 24 hours.");
* or, without a relation word (an instruction: "Always use tabs." / "Never
  use tabs."), their content words are the same within
  `WORDING_OVERLAP` and their negations or qualifiers differ (not only
  their values: "deploy 3 went fine" / "deploy 4 went fine" are two deploys).

Measured by ``python benchmarks/changes.py`` on the duplicate benchmark's
labelled pairs (48 of each kind a seed): statements of another subject with
the same value (the twins) linked 0 of 48 on the tuning seed and 0 of 48 on
the held-out one (false supersedes 0.000 / 0.000); real updates (another
value, the negation) linked 0.865 / 0.771. A missed update leaves two active
versions, as before this rule; a false link would close a fact still true,
so the thresholds favour precision. A fact entry the write path derived from
a turn is a view: the user's words stay in the turn's own entry either way.

Example:
    >>> changes("The launch moved to March 17.", "The launch is on March 3.")
    True
    >>> changes("The release date is March 3.", "The launch is on March 3.")
    False
    >>> changes("Never use tabs.", "Always use tabs.")
    True
"""

from __future__ import annotations

import functools
import math
import re
import threading
import weakref
from dataclasses import dataclass
from typing import AbstractSet, Any, Collection, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from .duplicates import (
    DuplicateFinder,
    bucket,
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
    "MAX_VALUE_WORDS",
    "SUBJECT_OVERLAP",
    "WORDING_OVERLAP",
    "batch_updates",
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
#: A value in words ("nord", "solarized dark", "three weeks") is at most this
#: many content words; a longer rest is another claim about the subject.
MAX_VALUE_WORDS = 3
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


@dataclass(frozen=True)
class _Parsed:
    """What `changes` compares of one text, read once (cached)."""

    normal: str
    subject: Optional[FrozenSet[str]]
    rest: FrozenSet[str]
    rest_values: FrozenSet[str]
    rest_guards: FrozenSet[str]
    words: FrozenSet[str]
    guards: FrozenSet[str]


_NONE: FrozenSet[str] = frozenset()


@functools.lru_cache(maxsize=1 << 16)
def _parsed(text: str) -> _Parsed:
    split = _split(text)
    keys = key_tokens(text)
    subject_words: Optional[FrozenSet[str]] = None
    rest, rest_values, rest_guards = _NONE, _NONE, _NONE
    if split is not None:
        subject_words = split[0]
        rest = frozenset(content_words(split[1]) - CHANGE_WORDS - subject_words)
        rest_values = frozenset(value_tokens(split[1]))
        rest_guards = frozenset(key_tokens(split[1]) - rest_values)
    return _Parsed(
        normalise_text(text),
        subject_words,
        rest,
        rest_values,
        rest_guards,
        frozenset(content_words(text) - CHANGE_WORDS - keys),
        frozenset(keys - set(value_tokens(text))),
    )


def changes(new: str, old: str) -> bool:
    """Whether the statement ``new`` changes ``old`` (see the module)."""
    a, b = _parsed(new), _parsed(old)
    if a.normal == b.normal:
        return False
    if a.subject is not None and b.subject is not None:
        if jaccard(a.subject, b.subject) < SUBJECT_OVERLAP:
            return False
        if a.rest_values and b.rest_values and a.rest_values != b.rest_values:
            return True  # another value: "March 3" / "March 17"
        if a.rest_guards != b.rest_guards and (a.rest & b.rest or a.rest_values & b.rest_values):
            return True  # the same claim, another polarity: "is db-7" / "is not db-7"
        if a.rest_values and b.rest_values:
            return False
        # another value in words, short and sharing none of the old one's ("is nord" / "is
        # solarized dark"); not another claim of the subject ("are rounded half-even" / "are
        # asynchronous: the provider calls our webhook")
        return (
            swapped(a.rest, b.rest)
            and not a.rest & b.rest
            and max(len(a.rest), len(b.rest)) <= MAX_VALUE_WORDS
            and not (a.rest_values or b.rest_values)
        )
    # Polarity and qualifiers only: "deploy 3 went fine" / "deploy 4 went fine" are two deploys.
    return bool(a.words) and jaccard(a.words, b.words) >= WORDING_OVERLAP and a.guards != b.guards


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


class _Index:
    """The statements of one bucket of a finder, by the words that can make
    two of them one subject, and by polarity: which of them one statement
    could change, without comparing it with all (kept in step with the
    finder's live positions on every call)."""

    def __init__(self) -> None:
        self.seqs: set[int] = set()
        self.posts: Dict[str, set[int]] = {}
        self.guards: Dict[FrozenSet[str], set[int]] = {}
        self.parsed: Dict[int, Tuple[str, _Parsed]] = {}

    def sync(self, finder: DuplicateFinder, live: AbstractSet[int]) -> None:
        for seq in self.seqs - live:
            text, parsed = self.parsed.pop(seq)
            for word in parsed.subject or parsed.words:
                self.posts[word].discard(seq)
            self.guards[parsed.guards].discard(seq)
        for seq in live - self.seqs:
            text = str(finder.kept_entry(seq).get("content", ""))
            parsed = _parsed(text)
            self.parsed[seq] = (text, parsed)
            for word in parsed.subject or parsed.words:
                self.posts.setdefault(word, set()).add(seq)
            self.guards.setdefault(parsed.guards, set()).add(seq)
        self.seqs = set(live)

    def candidates(self, parsed: _Parsed) -> List[int]:
        """The positions a statement could change, newest first: those
        sharing one of the rarest of its subject's words (Jaccard at the
        threshold needs that many shared: prefix filtering); without a
        subject, only those of another polarity or qualifier."""
        words = parsed.subject or parsed.words
        threshold = SUBJECT_OVERLAP if parsed.subject else WORDING_OVERLAP
        if not words:
            return []
        need = math.ceil(threshold * len(words))
        rare = sorted(words, key=lambda w: (len(self.posts.get(w, ())), w))[: len(words) - need + 1]
        found = set().union(*(self.posts.get(w, set()) for w in rare))
        if parsed.subject is None:
            found -= self.guards.get(parsed.guards, set())
        return sorted(found, reverse=True)


_INDEXES: weakref.WeakKeyDictionary[DuplicateFinder, Dict[Any, _Index]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def updates(
    finder: DuplicateFinder, entries: Sequence[Mapping[str, Any]], skip: Collection[int] = ()
) -> List[Optional[str]]:
    """For each entry (in order), the id of the stored statement it
    changes, or None: among ``finder``'s kept entries of its bucket, the
    ones it `changes`, the newest (the last kept) first. The entries
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
            live = finder.kept_in(entry)
            with _LOCK:
                index = _INDEXES.setdefault(finder, {}).setdefault(bucket(entry), _Index())
                index.sync(finder, live)
                seqs = index.candidates(_parsed(text))
            for seq in seqs:
                kept = finder.kept_entry(seq)
                kept_id = str(kept.get("id"))
                if kept_id in own or kept_id in taken or kept.get("scope") == "always":
                    continue
                if changes(text, str(kept.get("content", ""))):
                    found = kept_id
                    taken.add(kept_id)
                    break
        out.append(found)
    return out


def batch_updates(
    entries: Sequence[Mapping[str, Any]], skip: Collection[int] = (), stored: Optional[Sequence[Optional[str]]] = None
) -> List[Optional[int]]:
    """For each entry (in order), the position of an earlier entry of the
    same batch that it changes, or None: a flushed chat or an agent's step
    can say "The launch is on March 3." and, a few lines later, "The launch
    moved to March 17."; written together, both stayed active, since only
    stored versions are `updates`' targets. The same rule (`changes`, the
    same bucket, never an always-scope entry), the latest earlier statement
    first; an entry that repeats one (``skip``) or changes a stored one
    (``stored[n]`` not None) is no changer here, and no entry is changed
    twice. Candidates share a word of the subject (or of the wording), so a
    large import is not compared pair by pair."""
    out: List[Optional[int]] = [None] * len(entries)
    posts: Dict[Tuple[Any, str], List[int]] = {}
    taken: set[int] = set()
    for position, entry in enumerate(entries):
        if position in skip or not changing(entry):
            continue
        text = str(entry.get("content", ""))
        parsed = _parsed(text)
        words = parsed.subject or parsed.words
        place = bucket(entry)
        if stored is None or stored[position] is None:
            found = {i for w in words for i in posts.get((place, w), ())}
            for earlier in sorted(found - taken, reverse=True):
                if changes(text, str(entries[earlier].get("content", ""))):
                    out[position] = earlier
                    taken.add(earlier)
                    break
        for word in words:
            posts.setdefault((place, word), []).append(position)
    return out
