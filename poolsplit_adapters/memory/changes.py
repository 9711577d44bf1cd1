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
moved, changed, switched, became, now, ends, targets, grew, dropped,
...*, or a colon), in the clause that holds it and from its last
determiner on, unless a preposition comes before that determiner ("After
the reorg my team has 9 people." -> *team*; "The cold start time of the
worker is 7s." -> *cold, start, time, worker*), or the phrase a changing
verb takes ("We changed the sprints to three weeks." -> *sprints*; a
statement logged without its subject: "Reduced the build time from 42 to
30 minutes." -> *build, time*), without values and without the words
that only say a change happened (*now, moved, actually, ...*:
`CHANGE_WORDS`). Subject words are compared by stem ("sprints" /
"sprint"). Two statements change one another when:

* they state another number of the same counted things ("We have 150
  unit tests in the backend suite." / "The number of unit tests in the
  backend suite has grown to 165."): the same counted noun, once in each,
  and each count's place ("in the backend suite") among the other's words;
* or their subjects are the same within `SUBJECT_OVERLAP` (Jaccard), neither
  with a word in the place of one of the other's ("the dashboard API
  response time" / "the search API response time" are two), and what is
  said of them changes: both hold values and the values differ, the first
  of each in the same unit ("The launch is on March 3." / "The launch moved
  to March 17."; "300ms" / "now averaging around 250ms"; not "is 300ms" /
  "is sampled every 5 minutes": a value after *every* is a period, and a
  count's unit is what it counts); or the
  same words with another polarity or qualifier; or a value in words of at
  most `MAX_VALUE_WORDS` words sharing none of the old one's ("is nord"
  / "is solarized dark"). Words added are no change ("... is db-9" / "...
  is db-9 (confirmed)"), nor another claim about the subject ("Refunds are
  rounded half-even." / "Refunds are asynchronous: the provider calls our
  webhook within 24 hours.");
* or, without a relation word (an instruction: "Always use tabs." / "Never
  use tabs."), their content words are the same within
  `WORDING_OVERLAP` and their negations or qualifiers differ (not only
  their values: "deploy 3 went fine" / "deploy 4 went fine" are two deploys);
* or, for an instruction or a preference (`REVOKING_TYPES`), the newer one
  says what it revokes (`revokes`): "Forget the British spelling, switch
  back to American English." / "From now on, answer in British English.";
  "Stop using tabs." / "Always indent with tabs."; "... instead of tabs",
  "I no longer prefer dark mode", "Don't add emojis anymore", "switch from
  pytest to ...", "不要再 / 别再 / 不再 ..."): the last word of what it
  revokes is one of the older one's words, or another of its words is and
  so is a word of what it asks for instead, the words every instruction
  uses (*use, answer, add, ...*: `_FRAME`) counting for neither. A revoking sentence that names
  nothing stored changes nothing; a fact revokes nothing by this rule (a
  fact's "we no longer use Jenkins" is too common a turn of phrase to close
  a fact on).

Never when the subjects are numbered apart ("Version 2 of the app has 30
screens." / "Version 1 of the app has 25 screens.").

Measured by ``python benchmarks/changes.py`` on the duplicate benchmark's
labelled pairs (48 of each kind a seed): statements of another subject with
the same value (the twins) linked 0 of 48 on the tuning seed and 0 of 48 on
the held-out one (false supersedes 0.000 / 0.000); real updates (another
value, the negation) linked 0.865 / 0.771. On its measured quantities (a
duration, size, rate, count or date said once and changed later in another
style, 56 pairs a seed, the held-out seed with templates of its own):
updates linked 1.000 / 1.000 (0.232 / 0.000 before the counts, stems,
logged statements and units), false supersedes (the twin quantity, another
claim of the same one, 66 pairs a seed) 0.000 / 0.000 (0.091 / 0.000
before; the held-out seed, first measured, linked one twin, "the public
launch" to "the beta launch", until qualifiers that name which one were
kept in subjects). A missed update leaves two active
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
    >>> revokes("Stop using tabs.", "Always indent with tabs.")
    True
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import threading
import weakref
from dataclasses import dataclass
from typing import AbstractSet, Any, Collection, Dict, FrozenSet, List, Mapping, Optional, Pattern, Sequence, Tuple

from ..relevance.words import pair_words
from .duplicates import (
    UNITS,
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
    "REVOKING_TYPES",
    "SUBJECT_OVERLAP",
    "WORDING_OVERLAP",
    "batch_updates",
    "changes",
    "changing",
    "revokes",
    "states",
    "subject",
    "updates",
]

#: The entry types whose statements a later statement may change.
CHANGING_TYPES: FrozenSet[str] = frozenset({"fact", "instruction", "preference"})
#: The types whose statements may revoke an older one by naming it (`revokes`).
REVOKING_TYPES: FrozenSet[str] = frozenset({"instruction", "preference"})
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
    r"|reduced|cut|set|pushed|bumped|extended|'m|'re|am|ends|ended|finishes|wraps|targets|averages|stands|sits"
    r"|dropped|fell|rose|grew|went|reached|improved)\b|(?:是|在|有|改为|改成|变成)"
)
# The determiners a subject opens with: "the sprints", "my team".
_DETERMINERS = r"(?:the|my|our|your|their|his|her|its)"
# A relation word that takes its subject after it: "we changed the sprints to three weeks".
_TRANSITIVE = re.compile(
    r"\b(?:changed|moved|switched|raised|lowered|increased|decreased|reduced|cut|set|pushed|bumped|extended) "
    + _DETERMINERS
    + r" (.+?) (?:to|from|by|at|for)\b(.*)$"
)
# Where the clause that holds a subject starts: after the last comma or
# conjunction, then at its last determiner ("after the reorg my team" -> "team"). Each is
# matched once from the start (`_after`), never searched for: a search retried the greedy
# ".*" at every position of a text with none, 4 s for 5,000 characters.
_CLAUSE = re.compile(r".*(?:[,;:]| so | and | but | then | because )")
# (a determiner after a preposition goes on with the subject: "the cold start time of the worker")
_DETERMINER = re.compile(
    r".*\b(?<!of )(?<!in )(?<!on )(?<!for )(?<!into )(?<!to )(?<!from )(?<!with )(?<!at )" + _DETERMINERS + r"\b"
)
# A statement without its subject, as people log their work: "Reduced the build time from 42 to
# 30 minutes ...", "Measured the error rate at 2.1% ...": the subject is what the verb takes.
_LOGGED = re.compile(
    r"^(?:[a-z]+ed|cut|set|brought|got|put|kept|made) (?:the |my |our |your |its |their )?(.+?)"
    r" (?:from|to|at|by|down to|up to)\b(.*)$"
)
# A count: a number and the plural noun it counts ("150 commits", "149 unit tests"); or "the
# number of unit tests ...". The noun: at most three words, the last a plural.
_COUNTED_NOUN = r"((?:[a-z][\w-]* ){0,2}?[a-z][\w-]*[^s's]s)\b"
_COUNTED = re.compile(r"(?<![\w.,-])(\d[\d,]*) " + _COUNTED_NOUN)
_NUMBER_OF = re.compile(r"\b(?:the )?(?:total )?(?:number|count|amount|total) of " + _COUNTED_NOUN)
# Qualifiers that name which one ("the *first* sprint" / "the *second* sprint", "the *public* /
# *beta* launch"): part of a subject, where the other qualifiers ("always", "must") are not.
_NAMING = frozenset("first second third fourth fifth last final next new old public private open closed".split())
# What follows a number as its unit ("250ms", "5 minutes", "2.1%"), one spelling for each.
_UNIT_NAMES = {
    "millisecond": "ms",
    "milliseconds": "ms",
    "msec": "ms",
    "sec": "s",
    "secs": "s",
    "second": "s",
    "seconds": "s",
    "min": "min",
    "mins": "min",
    "minute": "min",
    "minutes": "min",
    "hr": "h",
    "hrs": "h",
    "hour": "h",
    "hours": "h",
    "day": "d",
    "days": "d",
    "week": "w",
    "weeks": "w",
    "percent": "%",
}
_RELATION_WORD = re.compile(_WORDS)
# What a statement revokes: the phrase after a revoking word, up to the end of its clause
# ("forget *the british spelling*, ..."; "switch from *pytest* to ..."; "don't *add emojis* anymore").
_CLAUSE_END = r"(?=[,;:.!?，。；！？]| and | but | so | to |$)"
_REVOKING = re.compile(
    r"\b(?:forget(?: about)?|ignore|disregard|scratch|drop|cancel|no more|no longer|stop|instead of|rather than"
    r"|switch(?:ed)? (?:back )?from)\b (.+?)"
    + _CLAUSE_END
    + r"|\b(?:don['’]?t|do not) (.+?) any ?more\b"
    + r"|(?:不要再|别再|不再|不用再|忘掉|忘记|取消)(.+?)(?=[，。；！？,.;!?]|$)"
)
# The words of an instruction's frame, not of what it is about: a revoked phrase's words
# besides these must be the older statement's ("stop using *answers* that are long" names no
# "always use type hints in answers").
_FRAME = frozenset(
    """use using used answer answers answering reply replies respond write writing add adding include including
    give giving make making put putting say saying prefer preferring like liking always never anymore more back
    from now instruction instructions rule rules request said earlier previous what that thing things please want
    forget ignore disregard scratch drop cancel stop switch instead rather longer going forward 回答 以后""".split()
)
# ... or a colon or an equals sign ("Primary region: eu-west-1").
_RELATION = re.compile(_WORDS + r"|[:=]")


def states(text: str) -> bool:
    """Whether ``text`` states something of a subject with a relation word
    (*is, has, moved, uses, ...*), the shape of a fact (a bare ``key=value``
    or a label is not one), or logs a change of one without saying who
    made it ("Reduced the build time from 42 to 30 minutes.")."""
    normal = normalise_text(text)
    found = _RELATION_WORD.search(normal)
    return (found is not None and found.start() > 0) or _LOGGED.match(normal) is not None


def _words(text: str) -> FrozenSet[str]:
    """A subject's words: content words without values, change words and
    the words that say how (negations, qualifiers)."""
    keys = key_tokens(text) - _NAMING
    return frozenset(
        w for w in content_words(text) if w not in CHANGE_WORDS and w not in keys and not any(c.isdigit() for c in w)
    )


def _stem(word: str) -> str:
    """The form two words of one stem are compared in ("sprints" and
    "sprint", "branches" and "branch", "policies" and "policy"): "-ies" to
    "-y", then a final "s" (not of "-ss", "-us", "-is") and a final "e"
    dropped. Not a word, only the same key for both forms."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def _stems(words: Collection[str]) -> FrozenSet[str]:
    return frozenset(_stem(w) for w in words)


def _split(text: str) -> Optional[Tuple[FrozenSet[str], str, FrozenSet[str]]]:
    """(the subject's words, what is said of it, the values in the
    subject's own words: "version *2* of the app"), or None. The subject is
    what comes before the first relation word; when that is only a value
    ("Db-7 is the staging database."), the subject is what comes after it,
    and the value is what is said."""
    normal = normalise_text(text)
    logged = _LOGGED.match(normal)
    if logged is not None and _words(logged.group(1)):
        return _words(logged.group(1)), logged.group(2), _naming(logged.group(1))
    # a relation word first: a colon after a leading label ("Update: the launch moved ...") is no relation
    found = _RELATION_WORD.search(normal) or _RELATION.search(normal)
    if found is None or found.start() == 0:
        return None
    before, after = normal[: found.start()], normal[found.start() :]
    transitive = _TRANSITIVE.match(after)
    if transitive is not None and _words(transitive.group(1)):
        return _words(transitive.group(1)), transitive.group(2), _naming(transitive.group(1))
    clause = _after(_CLAUSE, before)
    named = _after(_DETERMINER, clause)
    words = _words(named)
    if not words:
        named = clause
        words = _words(clause)
    if words:
        return words, after, _naming(named)
    if value_tokens(before) and _words(after):
        return _words(after), before, _NONE
    return None


def _after(last: Pattern[str], text: str) -> str:
    """``text`` after the longest match of ``last`` (a ``.*`` pattern: up to
    the last of what it names) from its start, or all of it when none.
    Normalised text holds no line break, so a match anywhere is one from
    the start, and the rest holds no other: one linear match."""
    found = last.match(text)
    return text if found is None else text[found.end() :]


def _naming(part: str) -> FrozenSet[str]:
    """The values that name which thing a subject is: a token of letters
    and digits ("db-7", "v2") or a number right after a content word
    ("version 2", "deploy 3"); not a number after a preposition ("the
    standup time at 08:45" is a time said, not a name)."""
    out = {v for v in value_tokens(part) if not re.fullmatch(r"[\d.,:]+", v)}
    for word, number in re.findall(r"([^\W\d_][\w-]*) (\d[\d.,]*)\b", part):
        if word in content_words(word):
            out.add(number)
    return frozenset(out)


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
    stems: FrozenSet[str]  # the subject's words, stemmed (`_stem`)
    naming: FrozenSet[str]  # the values in the subject's words ("version 2 of the app")
    unit: str  # the unit of the first value said of the subject ("" for none)
    counts: Tuple[Tuple[FrozenSet[str], str, FrozenSet[str]], ...]  # (counted noun, number, where), stemmed
    context: FrozenSet[str]  # every content word, stemmed


_NONE: FrozenSet[str] = frozenset()
_PREPOSITIONS = frozenset("in on to for of at into from across under within".split())
_NUMBER = re.compile(r"(?<![\w.,-])(\d[\d,]*(?:\.\d+)?)(?![\w.,-]*\w)")
_NON_SPACE = re.compile(r"\S+")


def _unit(value: str) -> str:
    """The unit written after a value's last digit ("250ms" -> "ms", "5
    minutes" -> "min", "2.1%" -> "%"; "db-7", "v2.3", "29" -> "")."""
    match = re.search(r"\d([^\d]*)$", value)
    unit = match.group(1).strip(" .,") if match else ""
    return _UNIT_NAMES.get(unit, unit)


def _first_unit(said: str, values: Sequence[str]) -> str:
    """The unit of the first value said of a subject that is not a period
    ("refreshed every 30 seconds" says how often, not how much: its unit is
    ``"every"``, which no other value's is)."""
    for value in values:
        if re.search(r"\b(?:every|per|each) (?:other )?%s" % re.escape(value), said):
            continue
        counted = re.search(r"(?<![\w.,-])%s ((?:[a-z][\w-]* ){0,2}?[a-z][\w-]*[^s's]s)\b" % re.escape(value), said)
        phrase = counted.group(1).split() if counted and re.fullmatch(r"[\d.,]+", value) else []
        head = phrase[-1] if phrase and all(w in content_words(w) for w in phrase) else ""
        if head and head not in UNITS and head not in _UNIT_NAMES:
            return "#" + _stem(head)  # a count's unit is what it counts: "40 endpoints", "3 million requests"
        return _unit(value)
    return "every" if values else ""


def _where(text: str, start: int = 0) -> FrozenSet[str]:
    """The stemmed words of the phrase a preposition opens right at
    ``start`` in ``text`` ("in the backend suite ..." -> backend, suite),
    the place of a count. Only its first five words are read: a text of
    thousands of counts is read once, not once a count."""
    words = [found.group() for found in itertools.islice(_NON_SPACE.finditer(text, start), 5)]
    if not words or words[0] not in _PREPOSITIONS:
        return _NONE
    place: List[str] = []
    for word in words[1:5]:
        bare = word.strip(".,;:!?()")
        if bare in ("the", "a", "an", "my", "our", "your", "their", "its") and not place:
            continue
        if bare not in content_words(bare) or bare in CHANGE_WORDS:
            break  # the place ends at its first word that is no content word ("... suite so far")
        place.append(_stem(bare))
        if bare != word:
            break  # ... or at a punctuation mark
    return frozenset(place)


def _counts(normal: str) -> Tuple[Tuple[FrozenSet[str], str, FrozenSet[str]], ...]:
    """The counts a text states: a number and the plural noun it counts
    ("150 commits", "149 unit tests in the backend suite"), or "the number
    of X ... N" (the first number after it); each with its place
    (`_where`). Not a number with a unit ("30 minutes")."""
    out = []
    for match in _COUNTED.finditer(normal):
        head = match.group(2).split()
        if head[0] in UNITS or head[0] in _UNIT_NAMES or head[-1] in UNITS or head[-1] in _UNIT_NAMES:
            continue
        out.append((_stems(head), match.group(1), _where(normal, match.end())))
    of = _NUMBER_OF.search(normal)
    if of is not None:
        number = _NUMBER.search(normal, of.end())
        if number is not None:
            out.append((_stems(of.group(1).split()), number.group(1), _where(normal, of.end())))
    return tuple(out)


@functools.lru_cache(maxsize=1 << 16)
def _parsed(text: str) -> _Parsed:
    split = _split(text)
    keys = key_tokens(text)
    subject_words: Optional[FrozenSet[str]] = None
    rest, rest_values, rest_guards, unit, naming = _NONE, _NONE, _NONE, "", _NONE
    if split is not None:
        subject_words, naming = split[0], split[2]
        rest = frozenset(content_words(split[1]) - CHANGE_WORDS - subject_words)
        ordered = value_tokens(split[1])
        rest_values = frozenset(ordered)
        rest_guards = frozenset(key_tokens(split[1]) - rest_values)
        unit = _first_unit(split[1], ordered)
    normal = normalise_text(text)
    return _Parsed(
        normal,
        subject_words,
        rest,
        rest_values,
        rest_guards,
        frozenset(content_words(text) - CHANGE_WORDS - keys),
        frozenset(keys - set(value_tokens(text))),
        _stems(subject_words or _NONE),
        naming,
        unit,
        _counts(normal),
        _stems(content_words(text)),
    )


def _recounts(a: _Parsed, b: _Parsed) -> bool:
    """Whether ``a`` states another number of a thing ``b`` counted: the
    same counted noun, once in each, another number, and each count's place
    among the other's words ("We're now at 165 unit tests in the backend
    suite." / "Wrapped up with 150 unit tests in the backend suite.")."""
    old = _counted_once(b.counts)
    for noun, (number, where) in _counted_once(a.counts).items():
        if noun not in old:
            continue
        old_number, old_where = old[noun]
        if number != old_number and where <= b.context and old_where <= a.context:
            return True
    return False


def _counted_once(
    counts: Sequence[Tuple[FrozenSet[str], str, FrozenSet[str]]],
) -> Dict[FrozenSet[str], Tuple[str, FrozenSet[str]]]:
    """The counts of the nouns counted once, by noun (number, place), in
    one pass: comparing each count with every other took a second for a
    text of 2,000 counts."""
    seen: Dict[FrozenSet[str], int] = {}
    for noun, _, _ in counts:
        seen[noun] = seen.get(noun, 0) + 1
    return {noun: (number, where) for noun, number, where in counts if seen[noun] == 1}


def _named_apart(a: _Parsed, b: _Parsed) -> bool:
    """Whether one statement names its subject again after its value with
    a word the other has in its place ("kept for 45 days, the log retention
    period" / "..., the backup retention period"): the words besides the
    values differ by a swap, and a word of the swap is one of its own
    subject's (a value said of two things). A swap of words that are the
    values themselves ("Tuesday" / "Thursday") is no such naming."""
    values = {word for value in a.rest_values | b.rest_values for word in value.split()}
    left, right = a.rest - values, b.rest - values
    if not (left - right and right - left):
        return False
    return bool(_stems(left - right) & a.stems) or bool(_stems(right - left) & b.stems)


def changes(new: str, old: str) -> bool:
    """Whether the statement ``new`` changes ``old`` (see the module)."""
    a, b = _parsed(new), _parsed(old)
    if a.normal == b.normal:
        return False
    if a.naming and b.naming and a.naming != b.naming:
        return False  # two things numbered alike: "version 2 of the app" / "version 1 of the app"
    if _recounts(a, b):
        return True  # another number of the same things: "150 commits" / "the number of commits ... 165"
    if a.subject is not None and b.subject is not None:
        if jaccard(a.stems, b.stems) < SUBJECT_OVERLAP or (a.stems - b.stems and b.stems - a.stems):
            return False  # another subject, or one of the same words with another in its place
        if a.rest_values and b.rest_values and a.rest_values != b.rest_values:
            # another value, of the same unit: "March 3" / "March 17", "300ms" / "250ms"; not
            # "is 300ms" / "is sampled every 5 minutes", nor of another thing named after the
            # value: "kept for 45 days, the log retention period" / "..., the backup retention period"
            return not (a.unit and b.unit and a.unit != b.unit) and not _named_apart(a, b)
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


@dataclass(frozen=True)
class _Revoked:
    """What a statement revokes (`revokes`): the heads of the phrases it
    revokes, all their words, and the words of the rest (what it asks for
    instead), stemmed, without an instruction's frame."""

    heads: FrozenSet[str]
    words: FrozenSet[str]
    instead: FrozenSet[str]


@functools.lru_cache(maxsize=1 << 12)
def _revoked(text: str) -> Optional[_Revoked]:
    """What ``text`` revokes (see `revokes`), None for nothing."""
    heads: set[str] = set()
    words: set[str] = set()
    normal = normalise_text(text)
    for found in _REVOKING.finditer(normal):
        phrase = next(group for group in found.groups() if group is not None)
        named = [_stem(w) for w in pair_words(phrase) if w in content_words(w) and w not in _FRAME]
        if named:
            heads.add(named[-1])  # the phrase's last word: "the british *spelling*", "dark *mode*"
            words.update(named)
    if not heads:
        return None
    instead = _stems(content_words(normal) - _FRAME - CHANGE_WORDS) - words
    return _Revoked(frozenset(heads), frozenset(words), instead)


def revokes(new: str, old: str) -> bool:
    """Whether the standing statement ``new`` revokes ``old`` by naming it
    (see the module): the head of what ``new`` says to forget, stop, drop
    or no longer do is a word of ``old``'s ("Stop using *tabs*" / "Always
    indent with tabs"), or another of its words is and so is a word of what
    ``new`` asks for instead ("Forget the *British* spelling, switch back to
    American *English*" / "answer in British English"). An instruction's
    frame (*use, answer, add, ...*) counts for neither. Applied to
    `REVOKING_TYPES` only."""
    revoked = _revoked(new)
    if revoked is None or normalise_text(new) == normalise_text(old):
        return False
    said = _parsed(old).context
    return bool(revoked.heads & said) or bool(revoked.words & said and revoked.instead & said)


def _revoking(entry: Mapping[str, Any], text: str) -> bool:
    """Whether ``entry`` (its ``text``) revokes what it names (`revokes`):
    its candidates are every stored statement of its bucket, not only those
    sharing a word of its own subject."""
    return entry.get("type") in REVOKING_TYPES and _revoked(text) is not None


def _changes(entry: Mapping[str, Any], text: str, old: str) -> bool:
    """The one rule both `updates` and `batch_updates` link by: ``text``
    (of ``entry``) `changes` ``old``, or revokes it (an instruction's or a
    preference's `revokes`)."""
    return changes(text, old) or (entry.get("type") in REVOKING_TYPES and revokes(text, old))


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
    # the batch's own entries are no targets; one that repeats a stored entry under its id is
    # that entry, which stays one (a re-sent line, then a change of it, in one write)
    own = {str(e.get("id")) for n, e in enumerate(entries) if n not in skip}
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
            if _revoking(entry, text):
                seqs = sorted(live, reverse=True)
            for seq in seqs:
                kept = finder.kept_entry(seq)
                kept_id = str(kept.get("id"))
                if kept_id in own or kept_id in taken or kept.get("scope") == "always":
                    continue
                if _changes(entry, text, str(kept.get("content", ""))):
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
    placed: Dict[Any, List[int]] = {}  # the positions of each bucket, for a revoking statement
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
            if _revoking(entry, text):
                found = set(placed.get(place, ()))
            for earlier in sorted(found - taken, reverse=True):
                if _changes(entry, text, str(entries[earlier].get("content", ""))):
                    out[position] = earlier
                    taken.add(earlier)
                    break
        for word in words:
            posts.setdefault((place, word), []).append(position)
        placed.setdefault(place, []).append(position)
    return out
