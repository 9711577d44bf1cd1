"""Changed statements: how often the write path's rule links a new statement
to an older one it really updates, and how often it links one of another
subject (a false supersede).

    python benchmarks/changes.py [--seed N]

The labelled pairs are the duplicate benchmark's (``facts.labelled_pairs``):
a kept statement against another value of the same subject (an update: the
rule should link it), the negation (an update of polarity: link), the twin
subject with the same value (another fact: never link), the extension
"A and B" (says more, not another value: either), and the re-worded repeats
(the duplicate check keeps those once before this rule is asked: shown for
completeness).

And pairs of **measured quantities** said the way people report progress
(``measured_pairs``, generated here): a duration, size or rate, a count of
something, a date, stated once ("Cut the nightly build from 42 to 30
minutes by caching wheels.", "We have 150 unit tests in the backend suite
so far.", "The beta launch is scheduled to end on May 12.") and later
changed in another style ("... now averaging around 25 minutes", "The
number of unit tests in the backend suite has grown to 165", "The beta
launch now targets completion by May 15"): ``measured`` (link); the twin
quantity with the new value (``measured-twin``: never), and another claim
about the same quantity with a number of another unit (``measured-claim``:
"The nightly build duration is sampled every 5 minutes.": never). The
tuning seed uses the first half of the templates, the held-out seed the
other half, so held-out pairs are phrased in ways the rule was not adjusted
on.

And pairs of **standing instructions and preferences** (``standing_pairs``,
generated here): one said early ("Always answer in British English.") and a
later one that says what it revokes ("Forget the British spelling, use
American English from now on.": ``revoke``, link, by
:func:`poolsplit_adapters.memory.changes.revokes`); the same revoking one
against every other topic's instruction (``revoke-other``: never), and
against the topic's twin, an instruction that shares a word with what is
revoked ("Always write dates in the British format.": ``revoke-twin``, never;
the words alone cannot tell these apart, so this row measures the rule's
known weakness).

Prints, as markdown, the share of pairs of each kind that
:func:`poolsplit_adapters.memory.changes.changes` links, on the tuning seed
and a held-out one, and the false-supersede rate (twins and other claims
linked).
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import docs_tables  # noqa: E402
import facts  # noqa: E402

from poolsplit_adapters.memory.changes import SUBJECT_OVERLAP, WORDING_OVERLAP, changes, revokes  # noqa: E402

#: What the rule should do with each kind of pair (None: either is right).
WANTED: Dict[str, Optional[bool]] = {
    "value": True,
    "negation": True,
    "twin": False,
    "twin-update": False,
    "extension": None,
    "case": None,
    "filler": None,
    "synonym": None,
    "reorder": None,
    "measured": True,
    "measured-twin": False,
    "measured-claim": False,
    "revoke": True,
    "revoke-other": False,
    "revoke-twin": False,
}

# Quantities: (subject, its twin, unit, values in order), said with a number and a unit.
QUANTITIES: Tuple[Tuple[str, str, str, Tuple[str, ...]], ...] = (
    ("dashboard API response time", "search API response time", "ms", ("800", "310", "240", "190")),
    ("nightly build duration", "test suite duration", " minutes", ("42", "30", "25", "18")),
    ("Docker image size", "database dump size", "MB", ("910", "450", "380", "320")),
    ("checkout error rate", "signup error rate", "%", ("4.2", "2.1", "1.6", "0.9")),
    ("cold start time of the worker", "cold start time of the scheduler", "s", ("12", "7", "5", "3")),
)
# Counts: (the counted noun, where, its twin noun).
COUNTS: Tuple[Tuple[str, str, str], ...] = (
    ("unit tests", "in the backend suite", "integration tests"),
    ("commits", "on the release branch", "open issues"),
    ("active users", "on the beta", "paying customers"),
    ("API endpoints", "in the public API", "background jobs"),
    ("contributors", "to the docs repo", "maintainers"),
)
# Dates: (event, its twin, what it is about).
EVENTS: Tuple[Tuple[str, str, str], ...] = (
    ("first sprint", "second sprint", "user registration and login"),
    ("beta launch", "public launch", "the onboarding flow"),
    ("security audit", "load test", "the payment service"),
    ("code freeze", "design review", "the mobile release"),
)
DATES = ("March 29", "March 31", "April 4", "April 11", "May 12", "May 15")
# (old, new) templates of each shape; the first half tunes, the second half is held out.
QUANTITY_OLD = (
    "Reduced the {s} from {a}{u} to {b}{u} by caching results for 60 seconds.",
    "The {s} is {b}{u} after the last round of tuning.",
    "Measured the {s} at {b}{u} this morning, down from {a}{u}.",
    "Brought the {s} down to {b}{u} by trimming dependencies.",
)
QUANTITY_NEW = (
    "The {s} has improved further, now averaging around {c}{u} after more tuning.",
    "Latest numbers: the {s} dropped to {c}{u}.",
    "After another pass, the {s} now sits at {c}{u}.",
    "The {s} is now down to {c}{u}, which is good enough for the release.",
)
QUANTITY_CLAIM = (
    "The {s} is sampled every 5 minutes by the monitoring job.",
    "The {s} is tracked on the team dashboard, refreshed every 30 seconds.",
)
COUNT_OLD = (
    "Wrapped up the week with {n} {noun} {where} and 3 reviewers assigned.",
    "We have {n} {noun} {where} so far.",
    "Finished the cleanup on April 20; there are {n} {noun} {where} now.",
    "Counted {n} {noun} {where} at the end of the sprint.",
)
COUNT_NEW = (
    "The number of {noun} {where} has grown to {m}, reflecting the recent work.",
    "We're now at {m} {noun} {where}.",
    "The count of {noun} {where} went up to {m} this week.",
    "The total number of {noun} {where} now stands at {m}.",
)
EVENT_OLD = (
    "Planned two-week sprints; the {e} ends {d}, focusing on {about}.",
    "The {e} is scheduled to end on {d}.",
    "Set the {e} deadline to {d}, covering {about}.",
    "The {e} wraps up on {d}.",
)
EVENT_NEW = (
    "The {e} now targets completion by {d}, allowing two extra days for testing.",
    "We pushed the {e} to {d} to finish {about}.",
    "The {e} deadline moved to {d}.",
    "The {e} is now expected to end on {d}, after the scope change.",
)


# Standing topics: (the early instruction or preference, what a revoking one names, what it
# asks for instead, the twin: another standing statement sharing a word with what is revoked).
TOPICS: Tuple[Tuple[str, str, str, str], ...] = (
    (
        "From now on, answer in British English.",
        "the British spelling",
        "American English",
        "Always write dates in the British format.",
    ),
    ("Always indent code with tabs.", "tabs", "spaces", "Always put a blank line between code blocks."),
    (
        "Add a few emojis to every answer from now on.",
        "the emojis",
        "plain text",
        "Never use emoji shortcodes in commit messages.",
    ),
    ("Always write the tests with pytest.", "pytest", "unittest", "Always run pytest with the -q flag."),
    ("Always show prices in euros.", "euros", "dollars", "Always round prices to whole numbers."),
    (
        "Put a short summary at the top of every answer.",
        "the summary at the top",
        "a summary at the end",
        "Keep the summary of each pull request under five lines.",
    ),
    ("I prefer dark mode in every editor.", "dark mode", "light themes", "I prefer the dark chocolate ones."),
    (
        "I prefer long, detailed explanations.",
        "the detailed explanations",
        "short answers",
        "I prefer detailed commit messages.",
    ),
    ("Always use metric units.", "metric units", "imperial units", "Always label the units on chart axes."),
    ("Always sign off with my initials.", "the initials", "no sign-off", "Always use my initials in branch names."),
)
REVOKING = (
    "Forget {x}, use {y} from now on.",
    "Stop using {x}; switch to {y} from now on.",
    "Don't use {x} anymore, I want {y}.",
    "From now on use {y} instead of {x}.",
    "No more {x}, please; {y} from now on.",
    "I no longer want {x}; go with {y}.",
    "Drop {x} and use {y} going forward.",
    "Switch from {x} to {y} from now on.",
)


def standing_pairs(seed: int) -> List[Tuple[str, str, str]]:
    """(kept, candidate, kind) pairs of standing statements (see the
    module); seed 0 uses the tuning half of the revoking templates, any
    other seed the held-out half."""
    pairs: List[Tuple[str, str, str]] = []
    for template in _half(REVOKING, seed != 0):
        for number, (early, revoked, instead, twin) in enumerate(TOPICS):
            later = template.format(x=revoked, y=instead)
            later = later[0].upper() + later[1:]
            pairs.append((early, later, "revoke"))
            pairs.append((twin, later, "revoke-twin"))
            pairs.extend((other[0], later, "revoke-other") for n, other in enumerate(TOPICS) if n != number)
    return pairs


def _half(templates: Tuple[str, ...], held_out: bool) -> Tuple[str, ...]:
    half = len(templates) // 2
    return templates[half:] if held_out else templates[:half]


def measured_pairs(seed: int) -> List[Tuple[str, str, str]]:
    """(kept, candidate, kind) pairs of measured quantities (see the
    module); seed 0 uses the tuning templates, any other seed the held-out
    ones."""
    rnd = random.Random(seed)
    held = seed != 0
    pairs: List[Tuple[str, str, str]] = []
    for subject, twin, unit, values in QUANTITIES:
        for old in _half(QUANTITY_OLD, held):
            a, b, c = values[0], values[1], values[rnd.randrange(2, len(values))]
            kept = old.format(s=subject, a=a, b=b, u=unit)
            kept = kept[0].upper() + kept[1:]
            for new in _half(QUANTITY_NEW, held):
                pairs.append((kept, new.format(s=subject, c=c, u=unit), "measured"))
                pairs.append((kept, new.format(s=twin, c=c, u=unit), "measured-twin"))
            pairs.append((kept, rnd.choice(QUANTITY_CLAIM).format(s=subject), "measured-claim"))
    for noun, where, twin in COUNTS:
        for old in _half(COUNT_OLD, held):
            n = rnd.randrange(20, 200)
            kept = old.format(n=n, noun=noun, where=where)
            for new in _half(COUNT_NEW, held):
                m = n + rnd.randrange(3, 40)
                pairs.append((kept, new.format(m=m, noun=noun, where=where), "measured"))
                pairs.append((kept, new.format(m=m, noun=twin, where=where), "measured-twin"))
    for event, twin, about in EVENTS:
        for old in _half(EVENT_OLD, held):
            first = rnd.randrange(len(DATES) - 1)
            kept = old.format(e=event, d=DATES[first], about=about)
            for new in _half(EVENT_NEW, held):
                later = DATES[rnd.randrange(first + 1, len(DATES))]
                pairs.append((kept, new.format(e=event, d=later, about=about), "measured"))
                pairs.append((kept, new.format(e=twin, d=later, about=about), "measured-twin"))
    return pairs


def twin_update_pairs(seed: int) -> List[Tuple[str, str]]:
    """(kept, candidate) pairs of a subject's statement and its twin's with
    another value, in the same phrasing ("Logs are kept for 45 days, the log
    retention period." / "Logs are kept for 180 days, the backup retention
    period."): two facts, each true, that a link would close one of."""
    rnd = random.Random(seed)
    pairs: List[Tuple[str, str]] = []
    for subject in facts.SUBJECTS:
        for vi, value in enumerate(subject.values):
            for phrasing in range(len(subject.phrasings)):
                other = subject.values[(vi + 1 + rnd.randrange(len(subject.values) - 1)) % len(subject.values)]
                kept = facts.state(subject, value, phrasing)
                pairs.append((kept, facts.state(subject, other, phrasing, name=subject.twin)))
    return pairs


def linked_by_kind(seed: int) -> Dict[str, List[bool]]:
    """For each kind of pair, whether the rule linked each pair."""
    out: Dict[str, List[bool]] = collections.defaultdict(list)
    for pair in facts.labelled_pairs(seed):
        out[pair.kind].append(changes(pair.candidate, pair.kept))
    for kept, candidate in twin_update_pairs(seed):
        out["twin-update"].append(changes(candidate, kept))
    for kept, candidate, kind in measured_pairs(seed):
        out[kind].append(changes(candidate, kept))
    for kept, candidate, kind in standing_pairs(seed):
        out[kind].append(changes(candidate, kept) or revokes(candidate, kept))
    return out


def table(seeds: Sequence[int]) -> str:
    lines = [
        "| kind | should link | " + " | ".join("seed %d" % s for s in seeds) + " |",
        "|---|---|" + "---|" * len(seeds),
    ]
    results = [linked_by_kind(s) for s in seeds]
    for kind, wanted in WANTED.items():
        cells = []
        for result in results:
            got = result.get(kind, [])
            cells.append("%d / %d" % (sum(got), len(got)) if got else "-")
        lines.append(
            "| %s | %s | %s |" % (kind, {True: "yes", False: "never", None: "either"}[wanted], " | ".join(cells))
        )
    false = [sum(r["twin"] + r["twin-update"]) / len(r["twin"] + r["twin-update"]) for r in results]
    hits = [sum(r["value"] + r["negation"]) / len(r["value"] + r["negation"]) for r in results]
    never = [r["measured-twin"] + r["measured-claim"] for r in results]
    measured_false = [sum(n) / len(n) for n in never]
    measured_hits = [sum(r["measured"]) / len(r["measured"]) for r in results]
    lines.append("")
    lines.append(
        "False-supersede rate (twins linked, same or another value): %s; updates linked (value and negation): %s "
        "(SUBJECT_OVERLAP %.2f, WORDING_OVERLAP %.2f)."
        % (", ".join("%.3f" % f for f in false), ", ".join("%.3f" % h for h in hits), SUBJECT_OVERLAP, WORDING_OVERLAP)
    )
    lines.append(
        "Measured quantities: false supersedes (twins and other claims linked) %s; updates linked %s."
        % (", ".join("%.3f" % f for f in measured_false), ", ".join("%.3f" % h for h in measured_hits))
    )
    rates = [tuple(sum(r[kind]) / len(r[kind]) for kind in ("revoke", "revoke-other", "revoke-twin")) for r in results]
    lines.append(
        "Standing statements: revocations linked %s; false supersedes of another topic %s, of a twin %s."
        % tuple(", ".join("%.3f" % rate[i] for rate in rates) for i in range(3))
    )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="the tuning seed (the next one is held out)")
    args = parser.parse_args(argv)
    text = table([args.seed, args.seed + 1])
    print(text)
    if argv is None and not sys.argv[1:]:  # the default run is the one the docs show
        docs_tables.write_table("changes", text)
    return text


if __name__ == "__main__":
    main()
