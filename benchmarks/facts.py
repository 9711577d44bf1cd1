"""Deterministic facts that repeat and change, for the duplicate and
consolidation benchmarks.

Each *subject* ("the staging database") has a twin subject that reads almost
the same ("the production database"), several phrasings and several values
over time. From them come:

* **repeats** of a statement: the same words re-cased and re-punctuated,
  wrapped in filler ("Note: ...", "... as of today"), re-ordered, or with one
  word swapped for a synonym (the hard case for word overlap);
* **distinct-but-similar** statements: the same subject with another value
  (an update), the twin subject with the same value, the negation.

No randomness outside ``random.Random(seed)``: the same seed gives the same
set on every machine.
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass
from typing import List, Sequence, Tuple


@dataclass(frozen=True)
class Subject:
    name: str
    twin: str
    phrasings: Tuple[str, ...]  # with {s} (subject) and {v} (value)
    values: Tuple[str, ...]
    negation: str  # with {s} and {v}
    question: str  # with {s}


SUBJECTS: Tuple[Subject, ...] = (
    Subject(
        "staging database",
        "production database",
        ("The {s} is {v}.", "{v} is the {s}.", "{S}: {v}."),
        ("db-7", "db-9", "db-12", "db-15"),
        "The {s} is not {v}.",
        "Which host is the {s}?",
    ),
    Subject(
        "deploy window",
        "maintenance window",
        ("The {s} is {v}.", "We use {v} as the {s}.", "{S}: {v}."),
        ("Tuesday 10:00", "Thursday 14:00", "Friday 09:00", "Monday 16:00"),
        "The {s} is never {v}.",
        "When is the {s}?",
    ),
    Subject(
        "release manager",
        "incident manager",
        ("The {s} is {v}.", "{v} acts as {s}.", "{S} this quarter: {v}."),
        ("Alice Moreau", "Bashir Khan", "Chen Wei", "Dana Ortiz"),
        "{v} is not the {s}.",
        "Who is the {s}?",
    ),
    Subject(
        "billing API version",
        "search API version",
        ("The {s} is {v}.", "We call {v} of the {s}.", "{S}: {v}."),
        ("v2.3", "v2.4", "v3.0", "v3.1"),
        "The {s} is not {v}.",
        "What is the {s}?",
    ),
    Subject(
        "user's preferred editor theme",
        "user's preferred terminal theme",
        ("The {s} is {v}.", "For the {s} they chose {v}.", "{S}: {v}."),
        ("solarized dark", "nord", "gruvbox light", "dracula"),
        "The {s} is no longer {v}.",
        "What is the {s}?",
    ),
    Subject(
        "on-call rotation length",
        "sprint length",
        ("The {s} is {v}.", "We run a {s} of {v}.", "{S}: {v}."),
        ("7 days", "10 days", "14 days", "21 days"),
        "The {s} is not {v}.",
        "How long is the {s}?",
    ),
    Subject(
        "log retention period",
        "backup retention period",
        ("The {s} is {v}.", "Logs are kept for {v}, the {s}.", "{S}: {v}."),
        ("30 days", "45 days", "90 days", "180 days"),
        "The {s} is not {v}.",
        "What is the {s}?",
    ),
    Subject(
        "primary region",
        "failover region",
        ("The {s} is {v}.", "{v} serves as the {s}.", "{S}: {v}."),
        ("eu-west-1", "eu-central-1", "us-east-2", "ap-south-1"),
        "The {s} is not {v}.",
        "Which is the {s}?",
    ),
    Subject(
        "team standup time",
        "team retro time",
        ("The {s} is {v}.", "We hold the {s} at {v}.", "{S}: {v}."),
        ("09:30", "10:00", "11:15", "08:45"),
        "The {s} is not {v}.",
        "When is the {s}?",
    ),
    Subject(
        "customer's contract tier",
        "partner's contract tier",
        ("The {s} is {v}.", "They are on {v}, the {s}.", "{S}: {v}."),
        ("Gold", "Platinum", "Silver", "Enterprise Plus"),
        "The {s} is not {v}.",
        "What is the {s}?",
    ),
    Subject(
        "test runner",
        "lint runner",
        ("The {s} is {v}.", "We use {v} as the {s}.", "{S}: {v}."),
        ("pytest with xdist", "nox sessions", "tox environments", "make targets"),
        "The {s} is never {v}.",
        "What is the {s}?",
    ),
    Subject(
        "frontend framework",
        "mobile framework",
        ("The {s} is {v}.", "The team builds the {s} layer with {v}.", "{S}: {v}."),
        ("React", "Svelte", "Vue", "Solid"),
        "The {s} is not {v}.",
        "What is the {s}?",
    ),
)

#: The first write's time; each later write is one hour after the previous.
START = datetime.datetime(2026, 1, 1)

FILLER_BEFORE = ("Note: ", "Reminder: ", "FYI, ", "As discussed, ", "Remember that ", "Again: ")
FILLER_AFTER = (" (confirmed)", ", as of today", " for now", " again", " - noted", " as agreed")
#: One-word swaps a repeat may make (the hard positives for word overlap).
SYNONYMS = (("database", "DB"), ("window", "slot"), ("manager", "lead"), ("is", "remains"), ("preferred", "favourite"))


def state(subject: Subject, value: str, phrasing: int = 0, name: str = "") -> str:
    """A statement of ``subject`` (or ``name``) having ``value``."""
    who = name or subject.name
    text = subject.phrasings[phrasing].format(s=who, S=who[0].upper() + who[1:], v=value)
    return text[0].upper() + text[1:]


def repeat(text: str, rnd: random.Random, kind: str) -> str:
    """A re-wording of ``text`` that says the same (``kind``: case, filler,
    synonym)."""
    body = text.rstrip(".")
    if kind == "case":
        return rnd.choice((body.lower(), body.upper(), "  " + body + "!  ", body + " ."))
    if kind == "filler":
        if rnd.random() < 0.5:
            return rnd.choice(FILLER_BEFORE) + body[0].lower() + body[1:] + "."
        return body + rnd.choice(FILLER_AFTER) + "."
    if kind == "synonym":
        for word, other in rnd.sample(SYNONYMS, len(SYNONYMS)):
            if (" %s " % word) in (" %s " % body):
                return (" %s " % body).replace(" %s " % word, " %s " % other, 1).strip() + "."
        return body + "."
    raise ValueError(kind)


@dataclass(frozen=True)
class Pair:
    kept: str
    candidate: str
    duplicate: bool
    kind: str  # case / filler / synonym / reorder (repeats); value / twin / extension / negation (distinct)


def labelled_pairs(seed: int = 0) -> List[Pair]:
    """Repeats and distinct-but-similar statements, one kept text each."""
    rnd = random.Random(seed)
    pairs: List[Pair] = []
    for subject in SUBJECTS:
        for vi, value in enumerate(subject.values):
            phrasing = rnd.randrange(len(subject.phrasings))
            kept = state(subject, value, phrasing)
            for kind in ("case", "filler", "synonym"):
                pairs.append(Pair(kept, repeat(kept, rnd, kind), True, kind))
            other_phrasing = (phrasing + 1) % len(subject.phrasings)
            if subject.phrasings[other_phrasing].count("{") == 2 and "{S}" not in subject.phrasings[other_phrasing]:
                pairs.append(Pair(kept, state(subject, value, other_phrasing), True, "reorder"))
            other = subject.values[(vi + 1) % len(subject.values)]
            pairs.append(Pair(kept, state(subject, other, phrasing), False, "value"))
            pairs.append(Pair(kept, state(subject, value, phrasing, name=subject.twin), False, "twin"))
            pairs.append(Pair(kept, state(subject, value + " and " + other, phrasing), False, "extension"))
            negated = subject.negation.format(s=subject.name, v=value)
            pairs.append(Pair(kept, negated[0].upper() + negated[1:], False, "negation"))
    return pairs


@dataclass(frozen=True)
class Write:
    """One write of the timeline: a statement about a subject at a time."""

    at: str
    subject: int
    value: int  # index into the subject's values
    text: str
    source: str
    repeat: bool  # re-states the current value


def timeline(seed: int = 0, *, updates: int = 3, repeats: int = 2) -> List[Write]:
    """Writes over time: every subject (and its twin, as a separate fact)
    starts at its first value and changes ``updates`` times; after each
    value is stated, ``repeats`` re-wordings of it follow from other threads.
    Interleaved across subjects, in time order."""
    rnd = random.Random(seed)
    streams: List[List[Tuple[int, int, str, bool]]] = []
    facts = [(i, s, s.name) for i, s in enumerate(SUBJECTS)] + [
        (len(SUBJECTS) + i, s, s.twin) for i, s in enumerate(SUBJECTS)
    ]
    for fact, subject, name in facts:
        stream = []
        offset = rnd.randrange(len(subject.values))
        for step in range(updates + 1):
            value = (offset + step) % len(subject.values)
            text = state(subject, subject.values[value], rnd.randrange(len(subject.phrasings)), name=name)
            stream.append((fact, value, text, False))
            for _ in range(repeats):
                stream.append(
                    (fact, value, repeat(text, rnd, rnd.choice(("case", "filler", "filler", "synonym"))), True)
                )
        streams.append(stream)
    writes: List[Write] = []
    cursors = [0] * len(streams)
    minute = 0
    while any(c < len(s) for c, s in zip(cursors, streams)):
        live = [i for i, (c, s) in enumerate(zip(cursors, streams)) if c < len(s)]
        pick = rnd.choice(live)
        fact, value, text, is_repeat = streams[pick][cursors[pick]]
        cursors[pick] += 1
        minute += 1
        at = (START + datetime.timedelta(hours=minute)).isoformat() + "Z"
        writes.append(Write(at, fact, value, text, "thread:%d" % rnd.randrange(1000), is_repeat))
    return writes


def fact_subject(fact: int) -> Tuple[Subject, str]:
    """The subject of fact number ``fact`` and the name it goes by."""
    subject = SUBJECTS[fact % len(SUBJECTS)]
    return subject, (subject.name if fact < len(SUBJECTS) else subject.twin)


def questions() -> Sequence[Tuple[int, str]]:
    """(fact, question) for every fact."""
    out = []
    for fact in range(2 * len(SUBJECTS)):
        subject, name = fact_subject(fact)
        out.append((fact, subject.question.format(s=name)))
    return out


#: Hard cases the subject set does not hold: two statements that differ in
#: one small token that word overlap cannot see (a sign, a decimal, a unit
#: written apart, a stopword that carries meaning), by kind. Each gives one
#: distinct pair and, for both statements, two repeats (filler, re-cased).
EDGE_CASES: Tuple[Tuple[str, str, str], ...] = (
    ("sign", "Set the request timeout to 5 seconds.", "Set the request timeout to -5 seconds."),
    ("sign", "The freezer room is kept at -18 °C.", "The freezer room is kept at 18 °C."),
    ("sign", "Clock offset for the build agents is +2 hours.", "Clock offset for the build agents is -2 hours."),
    ("decimal", "Set the sampling rate for traces to 1.5 percent.", "Set the sampling rate for traces to 15 percent."),
    (
        "decimal",
        "The error budget for checkout is 0.1% per month.",
        "The error budget for checkout is 0.01% per month.",
    ),
    (
        "version",
        "Pin the payments client library at version 1.2.3.",
        "Pin the payments client library at version 1.2.4.",
    ),
    (
        "version",
        "The billing worker runs Python 3.11 in production.",
        "The billing worker runs Python 3.1.1 in production.",
    ),
    ("unit", "Retry delay for the payment gateway is 5ms.", "Retry delay for the payment gateway is 50ms."),
    ("unit", "Retry delay for the payment gateway is 5 ms.", "Retry delay for the payment gateway is 5 s."),
    ("unit", "The nightly report job starts at 9 am sharp.", "The nightly report job starts at 9 pm sharp."),
    (
        "unit",
        "Keep uploaded invoices in the archive bucket for 30 days.",
        "Keep uploaded invoices in the archive bucket for 30 weeks.",
    ),
    ("unit", "The cache for product images holds 512 mb.", "The cache for product images holds 512 gb."),
    (
        "identifier",
        "The primary region is us-east-1 for the orders service.",
        "The primary region is eu-east-1 for the orders service.",
    ),
    ("frequency", "Always use tabs for indentation in Go files.", "Never use tabs for indentation in Go files."),
    (
        "frequency",
        "Always run the full integration suite before merging a change to the main branch of the billing repository.",
        "Sometimes run the full integration suite before merging a change to the main branch of the billing repository.",
    ),
    ("negation", "Deploy the billing service on Fridays.", "Do not deploy the billing service on Fridays."),
    ("negation", "You can deploy the billing service on Fridays.", "You can't deploy the billing service on Fridays."),
    (
        "negation",
        "The nightly build has passed on the release branch.",
        "The nightly build hasn't passed on the release branch.",
    ),
    (
        "modality",
        "Reviewers must approve schema migrations for the orders database.",
        "Reviewers may approve schema migrations for the orders database.",
    ),
    (
        "quantity",
        "Delete all debug logs older than a week in the staging cluster.",
        "Delete some debug logs older than a week in the staging cluster.",
    ),
    (
        "quantity",
        "Keep two replicas of the orders database in the staging cluster.",
        "Keep one replica of the orders database in the staging cluster.",
    ),
    (
        "polarity",
        "Turn the response cache off for the checkout service in staging.",
        "Turn the response cache on for the checkout service in staging.",
    ),
    (
        "polarity",
        "Scale the search workers up during the nightly reindex job.",
        "Scale the search workers down during the nightly reindex job.",
    ),
    (
        "polarity",
        "Route payment webhooks to the new ingestion endpoint in production.",
        "Route payment webhooks to the old ingestion endpoint in production.",
    ),
)


def edge_pairs() -> List[Pair]:
    """The :data:`EDGE_CASES` as labelled pairs: per case one distinct pair
    (kind ``<kind>``) and four repeats (kind ``repeat``): each statement
    wrapped in filler and re-cased. Fixed, no seed."""
    pairs: List[Pair] = []
    for kind, kept, other in EDGE_CASES:
        pairs.append(Pair(kept, other, False, kind))
        for text in (kept, other):
            body = text.rstrip(".")
            pairs.append(Pair(text, "Note: " + body[0].lower() + body[1:] + ".", True, "repeat"))
            pairs.append(Pair(text, body.upper() + "!", True, "repeat"))
    return pairs
