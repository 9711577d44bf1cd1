"""Standing instructions and preferences: how many of the user's the write
path's rules (``memory/standing.py``) recognise, and how often they take an
ordinary sentence for one.

    python benchmarks/standing.py

The labelled set is generated here (``random.Random(seed)``, no files): user
sentences from templates filled with topics, actions, output kinds and
pairs of tools. Three kinds:

* **instructions** with a standing scope ("whenever I ask about X, ...",
  "in every example ...", "from now on ...", "can you make sure to ... in all
  answers?", "keep explanations brief");
* **preferences** ("I tend to favor X over Y", "my preference is ...",
  "I usually go with X rather than Y");
* **negatives** that must not be recognised: one-off requests ("Please
  review this code.", "Make sure the test passes before we merge this."),
  questions, statements about oneself ("I have never written ... code in
  this project."), reactions ("I like how this turned out."), refusals
  ("I prefer not to say."), sentences an assistant would say.

The templates come in five disjoint groups, written in turn: ``tuning-1``
(seed 0), which the rules were written on; ``tuning-2``, other phrasings
written at the same time and seen while writing them; ``tuning-3`` and
``tuning-4``, each written after a round of rule changes and measured once
before the next round adjusted on them (their first figures are in the
comments beside them); ``held-out``, written after those changes,
measured once and never adjusted on; ``tuning-5``, choices stated as
decisions and priorities, measured once before the rules learned them;
and ``held-out-2``, written after that, measured once, never adjusted on. Each sentence is measured alone and
inside a long message: context clauses joined by ", and", a fenced code
block whose comments read like instructions (never to be recognised), a
question, and a trailing "->-> n,m" marker.

Prints, per group: recall (instructions and preferences recognised as
either), the share recognised as their own kind, and the false-positive
rate (negatives recognised as an instruction or a preference), for the
sentences alone and inside messages (where anything recognised that is not
the labelled sentence is a false positive).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import docs_tables  # noqa: E402

from poolsplit_adapters.memory.duplicates import normalise_text  # noqa: E402
from poolsplit_adapters.memory.standing import INSTRUCTION, PREFERENCE, RULES, StandingRules, recognise  # noqa: E402

TOPICS = (
    "authentication",
    "deployment",
    "database migrations",
    "caching",
    "the REST API",
    "error handling",
    "testing",
    "logging",
    "Docker",
    "performance tuning",
    "the frontend",
    "state management",
    "background jobs",
    "security",
    "dependencies",
    "the CI pipeline",
)
ACTIONS = (
    "include error handling",
    "add type hints",
    "show the exact commands",
    "include version numbers",
    "explain the trade-offs",
    "use bullet points",
    "cite the official documentation",
    "include a unit test",
    "format code with syntax highlighting",
    "add comments to the code",
    "list the dependencies with their versions",
    "provide security best practices",
    "start with a one-line summary",
    "mention the time complexity",
    "give a minimal working example",
    "point out possible edge cases",
    "note any breaking changes",
)
AVOID = (
    "use deprecated APIs",
    "suggest paid services",
    "skip error handling",
    "use global variables",
    "write more than three paragraphs",
    "leave out the imports",
    "use jQuery",
    "hard-code secrets",
    "assume I'm on Windows",
)
OUTPUTS = (
    ("code examples", "code example"),
    ("examples", "example"),
    ("answers", "answer"),
    ("responses", "response"),
    ("code snippets", "code snippet"),
    ("explanations", "explanation"),
    ("replies", "reply"),
    ("solutions", "solution"),
    ("Python examples", "Python example"),
    ("SQL snippets", "SQL snippet"),
)
STYLES = ("brief", "concise", "short", "focused", "practical", "to the point", "beginner-friendly", "under 200 words")
CHOICES = (
    ("PostgreSQL", "MySQL"),
    ("pytest", "unittest"),
    ("lightweight libraries", "heavy frameworks"),
    ("FastAPI", "Django"),
    ("Vue", "React"),
    ("tabs", "spaces"),
    ("functional components", "class components"),
    ("plain SQL", "an ORM"),
    ("Poetry", "pip"),
    ("VS Code", "PyCharm"),
    ("Tailwind", "Bootstrap"),
    ("composition", "inheritance"),
    ("small pull requests", "large ones"),
    ("REST", "GraphQL"),
    ("async code", "threads"),
    ("minimal dependencies", "feature-rich packages"),
)
GOALS = ("the app lightweight", "the code easy to maintain", "the build fast", "things simple")
FEATURES = ("login", "user registration", "password reset", "search", "checkout", "file upload", "notification")

# Templates: {do} an action, {avoid} a thing not to do, {outs}/{out} an output kind (plural/singular),
# {style}, {topic}, {x}/{y} a choice and its alternative, {goal}, {feature}. {Do}: capitalised.
TUNING: Dict[str, Tuple[str, ...]] = {
    INSTRUCTION: (
        "Always {do} when I ask about {topic}.",
        "Whenever I ask about {topic}, {do}.",
        "When I ask about {topic}, {do}.",
        "Can you make sure to {do} in all {outs}?",
        "Please {do} whenever I ask about {topic}.",
        "From now on, {do}.",
        "Going forward, please {do} in your {outs}.",
        "Every time I ask about {topic}, {do}.",
        "Make sure to {do} in every {out}.",
        "Never {avoid} in your {outs}.",
        "{Do} in every {out} you give me.",
        "Keep {outs} {style}.",
        "I want the {outs} to be {style}.",
        "Could you always {do}?",
        "Don't {avoid} in any {out}.",
        "Please {do} in all {outs}.",
    ),
    PREFERENCE: (
        "I prefer {x} over {y}.",
        "I tend to favor {x} over {y}.",
        "I usually go with {x} rather than {y}.",
        "My preference is to use {x} over {y}.",
        "I generally lean towards {x}.",
        "I like {x} better than {y}.",
        "I'd rather use {x} than {y}.",
        "I prefer {x} to keep {goal}.",
        "I really like working with {x}.",
        "I'm not a fan of {y}.",
    ),
    "": (
        "Can you help me implement {feature}?",
        "Please review this code.",
        "Make sure the test passes before we merge this.",
        "Could you fix the bug in the {feature} handler?",
        "Write a function that parses the config file.",
        "Explain how {topic} works.",
        "What's the difference between {x} and {y}?",
        "Should I always use {x}?",
        "I have never written any {x} code in this project.",
        "I always forget to run the migrations.",
        "I prefer not to say.",
        "Never mind, I figured it out.",
        "Don't worry about the styling for now.",
        "I like how this turned out.",
        "Here's the updated version of the {feature} module.",
        "Sure, I'll always {do} in my examples.",
        "Let me know if you need anything else.",
        "Keep this function as short as possible.",
        "Add error handling to this function.",
        "Always the same error, no matter what I try.",
        "I usually run the tests locally first.",
        "Use the snippet below as a starting point.",
        "Do you always need an index on foreign keys?",
        "The {feature} endpoint now returns a 200 status.",
    ),
}
SEEN: Dict[str, Tuple[str, ...]] = {
    INSTRUCTION: (
        "Each time I bring up {topic}, {do}.",
        "For all future {outs}, {do}.",
        "In all your {outs}, please {do}.",
        "Could you please {do} any time I ask about {topic}?",
        "I'd like you to {do} in every {out} from here on.",
        "Be sure to {do} whenever we discuss {topic}.",
        "Remember to {do} in every {out}.",
        "Moving forward, {do}.",
        "Can you {do} each time I ask about {topic}?",
        "Your {outs} should always be {style}.",
        "{Do} whenever I ask for {outs}.",
        "Please keep your {outs} {style}.",
        "I need the {outs} to be {style}.",
        "If I ask about {topic}, always {do}.",
        "Whenever I mention {topic}, please {do}.",
        "Do not {avoid}, ever.",
    ),
    PREFERENCE: (
        "I typically opt for {x} instead of {y}.",
        "I normally choose {x} over {y}.",
        "For {topic}, I usually prefer {x}.",
        "I lean toward {x} over {y}.",
        "I tend to go for {x}.",
        "Personally, I favour {x} rather than {y}.",
        "I would rather stick with {x}.",
        "I've always preferred {x} over {y}.",
        "I'm partial to {x}.",
        "My go-to choice is {x}.",
        "I generally favor {x} because it keeps {goal}.",
        "I'd go with {x} over {y} any day.",
    ),
    "": (
        "Could you walk me through setting up {topic}?",
        "Please take a look at the error below.",
        "Make sure this migration runs before the deploy.",
        "Can you rewrite the {feature} function using async?",
        "Why does {topic} fail on the staging server?",
        "Is it better to use {x} or {y} here?",
        "I never got the {feature} tests to pass.",
        "I've never used {x} before.",
        "I'd rather not get into that right now.",
        "Don't know why it keeps failing.",
        "I love it, thanks!",
        "I hate that this keeps timing out.",
        "We usually deploy on Fridays.",
        "Great, that works now.",
        "Every time I run the tests, the {feature} suite fails.",
        "Whenever I restart the server, the cache is empty.",
        "Remember when we set up the {topic} config?",
        "Stop, that's not what I meant.",
        "Avoiding global state made the {feature} module easier to test.",
        "I'll make sure to update the README.",
        "Include the stack trace in your next reply.",
        "I want to add a {feature} page to the app.",
        "I prefer to handle that myself this time.",
        "Never had this problem with {x}.",
    ),
}

# Written after the first round of rules (on the two groups above) and measured once as they were
# (recall 0.438, false positives 0.019), then adjusted on: phrasings neither group has.
FRESH: Dict[str, Tuple[str, ...]] = {
    INSTRUCTION: (
        "Whenever you show me code, {do}.",
        "Any time we talk about {topic}, {do}.",
        "Please default to {x} in your {outs}.",
        "Stick to {x} in all {outs}.",
        "Going forward I'd like {outs} that are {style}.",
        "Always assume I'm using {x}.",
        "When you write {outs}, {do}.",
        "Please don't {avoid} in future {outs}.",
        "I'd appreciate it if you always {do}.",
        "Remember that I want you to {do} every time.",
        "Every answer about {topic} should {do}.",
        "Use {x} for every {out} from now on.",
        "Next time I ask about {topic}, {do}.",
        "Make it a habit to {do}.",
        "Let's always {do} when we cover {topic}.",
        "In general, {do} when you answer.",
    ),
    PREFERENCE: (
        "I'm more comfortable with {x} than {y}.",
        "I find {x} much nicer to work with than {y}.",
        "{X} is my first choice for {topic}.",
        "I'd pick {x} over {y} for {topic}.",
        "We favor {x} over {y} on this team.",
        "Given the choice, I go with {x}.",
        "I really don't like {y}.",
        "I'm not keen on {y}.",
        "My team prefers {x} over {y}.",
        "For me, {x} beats {y}.",
        "I usually reach for {x} first.",
        "I have a strong preference for {x}.",
    ),
    "": (
        "Can you show me the {feature} code again?",
        "Please add a docstring to the function above.",
        "Make sure the {feature} form validates the email.",
        "I usually work late on Fridays.",
        "We use {x} in production.",
        "I always thought {x} was faster than {y}.",
        "I never understood how {topic} works.",
        "Don't have time for a full rewrite right now.",
        "Always something with {topic}, isn't it?",
        "Would you prefer {x} or {y} for this?",
        "Do you like {x}?",
        "I'd like to understand {topic} better.",
        "What do you prefer, {x} or {y}?",
        "Use {x} for the {feature} service.",
        "Keep going.",
        "Thanks, that explanation was clear.",
        "The answers you gave earlier were helpful.",
        "Whenever I try to deploy, the build fails with a timeout.",
        "Every time I run it I get a KeyError.",
        "Let me know when you're done.",
        "My preference doesn't matter here, pick whatever works.",
        "I prefer to keep this one short.",
        "Can you always reproduce the bug on staging?",
        "Never tested it on Windows, to be honest.",
    ),
}

# Written after the second round of rules (on the three groups above), measured once as they were
# (recall 0.796, false positives 0.060), then the rules' bugs it showed were mended.
LAST: Dict[str, Tuple[str, ...]] = {
    INSTRUCTION: (
        "For every {out} you send, {do}.",
        "Please, from this point on, {do}.",
        "Can you {do} in the {outs} you give me from now on?",
        "Never {avoid} when I ask about {topic}.",
        "I'd like all {outs} to be {style}.",
        "Whenever {topic} comes up, {do}.",
        "Could you make a point of {do}ing in every {out}?",
        "As a general rule, {do}.",
        "Don't {avoid} when you answer questions about {topic}.",
        "Each {out} should {do}.",
        "Always, and I mean always, {do}.",
        "When we talk about {topic} in the future, {do}.",
        "Try to {do} whenever you can.",
        "If you give me {outs}, {do}.",
    ),
    PREFERENCE: (
        "I gravitate towards {x}.",
        "Honestly, I prefer {x}.",
        "We'd rather use {x} than {y}.",
        "I'm a big fan of {x}.",
        "I generally go for {x} when I have the choice.",
        "I always pick {x} over {y}.",
        "{X} is what I prefer for {topic}.",
        "I like to use {x} rather than {y}.",
        "I find {x} easier to read than {y}.",
        "I'm much happier with {x}.",
        "I don't really like {y} for {topic}.",
        "Our team usually sticks with {x}.",
    ),
    "": (
        "Could you take another look at the {feature} handler?",
        "Please explain the error in the traceback below.",
        "Make sure you saved the file before running it.",
        "I usually get this error after a restart.",
        "We never deployed {x} to production.",
        "Never seen {x} behave like that.",
        "Do you prefer {x} or {y}?",
        "Which one do you like better, {x} or {y}?",
        "I'd like to see an example of {topic} with {x}.",
        "I'd rather you explain it once more, slowly.",
        "Why do you always use {x} in your examples?",
        "Try the second option.",
        "Use version 2 of the API for this request.",
        "The {feature} tests always fail on CI.",
        "I'm not sure whether {x} fits here.",
        "Stop the server and restart it.",
        "Avoid the race condition in the code above.",
        "Let's go with {x} for this feature.",
        "I really appreciate your help.",
        "Keep in mind the deadline is Friday.",
        "Is there a way to make the {feature} page load faster?",
        "Every example in your last answer had a typo.",
        "Whenever you're ready, send the next part.",
        "Remember the bug we fixed yesterday?",
    ),
}

# Written after every rule change, measured once, never adjusted on: the
# rules' held-out figures.
FINAL: Dict[str, Tuple[str, ...]] = {
    INSTRUCTION: (
        "I'm setting up {topic} now, and whenever I ask for help with it, {do}.",
        "Quick note for later: {do} in every {out} about {topic}.",
        "One thing to keep in mind going forward is to {do}.",
        "Please {do} when you answer my questions about {topic}.",
        "Could you {do} for all the {outs} in this project?",
        "Whenever you suggest a library, {do}.",
        "From here on out, {do}.",
        "Never {avoid} in any {out}, please.",
        "Make sure every {out} you write for me is {style}.",
        "Each time we touch {topic}, please {do}.",
        "If I'm asking about {topic}, {do} by default.",
        "For any {out} involving {topic}, {do}.",
    ),
    PREFERENCE: (
        "I've been using {x} for years and I still prefer it to {y}.",
        "When it comes to {topic}, I'd choose {x} over {y}.",
        "I generally stick with {x}.",
        "I'm a huge fan of {x}, and I try to avoid {y} where I can.",
        "My personal preference is {x}.",
        "I typically use {x} rather than {y}.",
        "I'd much rather work with {x}.",
        "We tend to prefer {x} in our projects.",
        "I like keeping things simple, so I prefer {x}.",
        "I really dislike {y}.",
    ),
    "": (
        "I've been trying to get {topic} working all day, and it keeps failing.",
        "Can you explain why the {feature} test is flaky?",
        "Please check whether the {feature} route handles empty input.",
        "Make sure the {feature} endpoint returns JSON here.",
        "I have never used {x} in this project.",
        "I usually test things by hand before writing unit tests.",
        "We switched from {y} to {x} last month.",
        "Should I prefer {x} or {y} for {topic}?",
        "I'd like a quick overview of {topic}.",
        "I don't remember how we configured {topic}.",
        "Always fun when the build breaks on a Friday.",
        "Keep the current schema as it is for now.",
        "Include the fix in the next release.",
        "Thanks, I'll always remember that trick.",
        "The {feature} module now uses {x}.",
        "Every time I deploy, I check the logs first.",
        "Do you usually recommend {x} for {topic}?",
        "I like that you included the tests.",
        "Use a list comprehension in the loop above.",
        "Let's focus on the {feature} bug first.",
    ),
}
# Written after the held-out group, before the rules knew a choice stated as a decision or a
# priority ("I've chosen X to keep Y", "I prioritize X", "I'm focusing on X rather than Y"),
# as users state preferences in long conversations; measured once before the rules were
# adjusted on it: recall 0.149 alone and in a message (its two instruction templates only),
# false positives 0.000.
DECIDED: Dict[str, Tuple[str, ...]] = {
    INSTRUCTION: (
        "Whenever I share a stack trace, {do}.",
        "In all your {outs} about {topic}, {do}.",
    ),
    PREFERENCE: (
        "I've chosen {x} for {topic} because it's easier to maintain.",
        "I chose to go with {x} over {y} to keep {goal}.",
        "I decided to use {x} instead of {y} in my projects.",
        "I've decided on {x} for {topic}, since it fits the way I work.",
        "I prioritize keeping {goal} over adding more features.",
        "I'm focusing on {x} rather than {y}.",
        "I value keeping {goal} more than raw speed.",
        "I opted for {x} to keep {goal}.",
        "I'm sticking with {x} for {topic}.",
        "I went with {x} over {y} because the documentation is better.",
        "For {topic}, I settled on {x} to keep {goal}.",
        "I've chosen to keep {x} for {topic} to preserve consistency.",
    ),
    "": (
        "I chose the wrong branch when I merged yesterday.",
        "I decided to take a break before debugging the {feature} page.",
        "We decided to postpone the {feature} release until Monday.",
        "I went with the quick fix for now.",
        "I'm focusing on the {feature} bug today.",
        "I prioritized the {feature} ticket this sprint.",
        "Which one did you choose for the {feature} page?",
        "I decided to ask you before changing {topic}.",
        "I opted out of the beta program.",
        "I chose {x} last week but it keeps crashing.",
        "Did I decide on {x} or {y} for {topic}?",
        "I value your feedback on the {feature} code.",
    ),
}
# Written after the rules learned tuning-5's decisions and priorities, measured once, never
# adjusted on: the held-out figures of that change.
FINAL_DECIDED: Dict[str, Tuple[str, ...]] = {
    INSTRUCTION: (
        "Any time I paste an error, {do}.",
        "Please remember to {do} in future {outs}.",
        "I'd like you to always {do}.",
        "Stick to {style} {outs} from now on.",
    ),
    PREFERENCE: (
        "I've settled on {x} for {topic} since it's what the team knows.",
        "We opted for {x} rather than {y} for {topic}.",
        "Honestly, I'd go with {x} every time.",
        "I've gone with {x} over {y} for most of my work.",
        "Personally I find {x} more readable than {y}.",
        "I prioritise keeping {goal} when I choose tools.",
        "I'm leaning towards {x} for everything new.",
        "{X} is my go-to for {topic}.",
        "I generally pick {x} over {y}.",
        "I've decided against {y}, so I use {x} instead.",
    ),
    "": (
        "I chose {x} for the prototype but we may change it.",
        "We decided on a date for the {feature} launch.",
        "I've decided to call it a day.",
        "I went with my gut on the {feature} estimate.",
        "I'm using {x} to debug the {feature} page right now.",
        "Which do you prioritize, {x} or {y}?",
        "I picked up {x} last year.",
        "I value the time you spent on this.",
        "I settled the invoice for the {topic} consultant.",
        "I opted to skip lunch to finish the {feature} tests.",
    ),
}
#: The groups, in the order they were written; only the last was never adjusted on.
GROUPS = {
    "tuning-1": (TUNING, 0),
    "tuning-2": (SEEN, 1),
    "tuning-3": (FRESH, 2),
    "tuning-4": (LAST, 3),
    "held-out": (FINAL, 4),
    "tuning-5": (DECIDED, 5),
    "held-out-2": (FINAL_DECIDED, 6),
}

# The long message around a sentence: a context clause, a code block whose comments read like
# instructions, a question, a trailing marker.
CONTEXTS = (
    "I'm working on the {feature} feature of my Flask app",
    "I've been refactoring the {feature} module this week",
    "The {feature} page is mostly done and the tests run in CI",
    "So far I have the models and the routes in place",
)
CODE = (
    "```python\n# Always close the connection before returning.\ndef load(conn):\n"
    "    # make sure to commit first\n    conn.commit()\n    return conn.fetch()\n```",
    "```js\n// Never mutate props directly.\n// From now on use the new client.\n"
    "export const save = (x) => api.post('/save', x);\n```",
    "```\n# I prefer explicit imports here\nfrom app import db  # always import db first\n```",
)
QUESTIONS = ("Can you help me figure out why it returns a 500?", "What am I missing?", "Does this look right?")
PER_TEMPLATE = {INSTRUCTION: 6, PREFERENCE: 6, "": 4}


@dataclass(frozen=True)
class Labelled:
    """One labelled sentence (``kind``: instruction, preference or "" for
    none) and a long user message that holds it."""

    kind: str
    sentence: str
    message: str


def _fill(template: str, rnd: random.Random) -> str:
    plural, singular = rnd.choice(OUTPUTS)
    x, y = rnd.choice(CHOICES)
    do = rnd.choice(ACTIONS)
    X = x[0].upper() + x[1:]
    return template.format(
        do=do,
        Do=do[0].upper() + do[1:],
        avoid=rnd.choice(AVOID),
        outs=plural,
        out=singular,
        style=rnd.choice(STYLES),
        topic=rnd.choice(TOPICS),
        x=x,
        X=X,
        y=y,
        goal=rnd.choice(GOALS),
        feature=rnd.choice(FEATURES),
    )


def _inside(sentence: str, rnd: random.Random) -> str:
    """``sentence`` inside a long message, in one of three shapes."""
    context = rnd.choice(CONTEXTS).format(feature=rnd.choice(FEATURES))
    code, question = rnd.choice(CODE), rnd.choice(QUESTIONS)
    marker = "->-> %d,%d" % (rnd.randrange(1, 9), rnd.randrange(1, 30))
    shape = rnd.randrange(3)
    if shape == 0:  # inside a chain of clauses joined by ", and"
        first = sentence.split()[0]
        lowered = sentence if first in ("I", "I'm", "I'd", "I've") else sentence[0].lower() + sentence[1:]
        return "%s, and %s Here's what I have:\n\n%s\n\n%s %s" % (context, lowered, code, question, marker)
    if shape == 1:  # last, after the code, with the marker on its line
        return "%s.\n\n%s\n\n%s %s" % (context, code, sentence.rstrip("."), marker)
    return "%s %s.\n%s\n%s %s" % (sentence, context, code, question, marker)


def labelled(group: str) -> List[Labelled]:
    """The labelled sentences of one group ("tuning" or "held-out"), each
    once, in a fixed order."""
    templates, seed = GROUPS[group]
    rnd = random.Random(seed)
    out: List[Labelled] = []
    seen: set[str] = set()
    for kind, kind_templates in templates.items():
        for template in kind_templates:
            for _ in range(PER_TEMPLATE[kind]):
                sentence = _fill(template, rnd)
                if sentence not in seen:
                    seen.add(sentence)
                    out.append(Labelled(kind, sentence, _inside(sentence, rnd)))
    return out


def _key(text: str) -> str:
    return normalise_text(text).rstrip(" .!?")


@dataclass(frozen=True)
class Scores:
    """What the rules did on one group."""

    positives: int
    negatives: int
    recall: float  # sentences alone: instructions and preferences recognised as either
    kind_agrees: float  # ... recognised as their own kind
    false_positive: float  # negatives alone recognised as an instruction or a preference
    message_recall: float  # inside a long message
    message_false_positive: float  # messages with anything recognised that is not the labelled sentence
    missed: Tuple[str, ...]
    false: Tuple[str, ...]


def score(group: str, rules: StandingRules = RULES) -> Scores:
    """The rules' recall and false-positive rate on one group."""
    items = labelled(group)
    hits, agrees, falses, message_hits, message_falses = 0, 0, 0, 0, 0
    missed: List[str] = []
    false: List[str] = []
    for item in items:
        alone = [s for s in recognise(item.sentence, rules) if s.kind in (INSTRUCTION, PREFERENCE)]
        inside = [s for s in recognise(item.message, rules) if s.kind in (INSTRUCTION, PREFERENCE)]
        target = _key(item.sentence)
        own = [s for s in inside if target in _key(s.text) or (len(_key(s.text)) > 10 and _key(s.text) in target)]
        if not item.kind:
            own = []  # nothing of a negative message may be recognised
        if item.kind:
            hits += bool(alone)
            agrees += any(s.kind == item.kind for s in alone)
            message_hits += bool(own)
            if not alone:
                missed.append(item.sentence)
        else:
            falses += bool(alone)
            if alone:
                false.append(item.sentence)
        message_falses += len(inside) > len(own)
        if len(inside) > len(own) and item.kind:
            false.extend(s.text for s in inside if s not in own)
    positives = sum(1 for i in items if i.kind)
    negatives = len(items) - positives
    return Scores(
        positives,
        negatives,
        hits / positives,
        agrees / positives,
        falses / negatives,
        message_hits / positives,
        message_falses / len(items),
        tuple(missed),
        tuple(false),
    )


def table(rules: StandingRules = RULES) -> str:
    lines = [
        "| group | sentences (+ / -) | recall | own kind | false positives | in a message: recall "
        "| in a message: false positives |",
        "|---|---|---|---|---|---|---|",
    ]
    for group in GROUPS:
        s = score(group, rules)
        lines.append(
            "| %s | %d / %d | %.3f | %.3f | %.3f | %.3f | %.3f |"
            % (
                group,
                s.positives,
                s.negatives,
                s.recall,
                s.kind_agrees,
                s.false_positive,
                s.message_recall,
                s.message_false_positive,
            )
        )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", choices=list(GROUPS), help="also list the misses and false positives of a group")
    args = parser.parse_args(argv)
    text = table()
    if args.show:
        s = score(args.show)
        text += "\n\nmissed:\n" + "\n".join(s.missed) + "\n\nfalse positives:\n" + "\n".join(s.false)
    print(text)
    if not args.show and argv is None and not sys.argv[1:]:  # the default run is the one the docs show
        docs_tables.write_table("standing", text)
    return text


if __name__ == "__main__":
    main()
