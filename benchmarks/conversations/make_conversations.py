"""Labelled long multi-session conversations, generated (seeded, no files).

    from make_conversations import make_conversations
    conversations = make_conversations(n=8, turns=200, seed=39)

Each conversation is one user working with an assistant on one project over
several sessions (days). A turn is a user message and the assistant's answer,
each with its own id (``c3-u017`` / ``c3-a017``). Woven into ordinary chat on
the project (filler that reuses the same words: lexical distractors):

* **standing instructions**, stated once, early, inside an ordinary message
  ("Always include version numbers when I list dependencies."), one of them in
  a second language in some conversations, and one later instruction that
  contradicts an earlier one ("From now on, answer in British English." then
  "Forget the British spelling, switch back to American English from now on.");
* **preferences** ("I prefer tabs over spaces."), some in Spanish, German or
  Chinese, some as users state them in long conversations: inside a request
  ("..., so I prefer plain SQL over an ORM, how should I structure ...?") or
  as a decision or a priority ("I've chosen to keep releases manual to
  preserve control ...", "I prioritize readable code over ...");
* **facts updated several times** ("The launch is on March 3." -> "The launch
  moved to March 17." -> "The launch is now March 24."), one update sometimes
  inside a pasted log of more than 8,000 characters;
* **contradictions**: a fact stated, later corrected ("Correction: ...");
* **ordinary facts** stated once, some inside a long pasted log, and pairs
  of facts from different sessions that one question needs together;
* assistant answers of typically 800 to 4,000 characters, a few over 8,000
  (the middleware's write gate refuses an evicted turn over 8,000).

Every conversation carries its **probes**, asked once after the whole
conversation, each with its labels: ``evidence`` (message ids),
``key_sentences`` (verbatim substrings of those messages), and for updated
facts and contradictions ``current`` (the value string of the latest
statement) and ``stale`` (the earlier values). The text is this project's
own, written for this benchmark.

Deterministic: the same arguments give the same data (``random.Random(seed)``
only, no hash order, no clock).
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = ["THEMES", "make_conversations", "check_labels"]

START = datetime.datetime(2026, 3, 2, 9, 0, tzinfo=datetime.timezone.utc)
SESSIONS = 8


@dataclass(frozen=True)
class Theme:
    name: str  # the project, as the user calls it
    language: str
    components: Tuple[str, ...]
    nouns: Tuple[str, ...]
    paths: Tuple[str, ...]


THEMES: Tuple[Theme, ...] = (
    Theme(
        "the price scraper",
        "Python",
        ("fetcher", "parser", "scheduler", "proxy rotator", "export job", "rate limiter"),
        ("product pages", "retries", "cookies", "HTML tables", "CSV exports", "robots rules", "timeouts"),
        ("scraper/fetch.py", "scraper/parse.py", "scraper/schedule.py", "scraper/export.py"),
    ),
    Theme(
        "the recipe app",
        "JavaScript",
        ("shopping list screen", "recipe editor", "sync service", "image uploader", "search bar", "login flow"),
        ("ingredients", "offline cache", "push notifications", "thumbnails", "favourites", "serving sizes"),
        ("src/screens/List.js", "src/editor/Recipe.js", "src/sync/queue.js", "src/upload/images.js"),
    ),
    Theme(
        "the sales pipeline",
        "Python",
        ("ingest task", "dedup step", "warehouse loader", "nightly DAG", "quality checks", "backfill job"),
        ("partitions", "late events", "schema changes", "null handling", "row counts", "watermarks"),
        ("dags/nightly.py", "pipeline/dedup.py", "pipeline/load.py", "checks/quality.py"),
    ),
    Theme(
        "the game server",
        "Go",
        ("matchmaker", "lobby service", "replay recorder", "leaderboard", "anti-cheat hook", "session store"),
        ("tick rate", "player ratings", "reconnects", "packet loss", "lobby codes", "seasons"),
        ("cmd/server/main.go", "internal/match/queue.go", "internal/lobby/room.go", "internal/board/rank.go"),
    ),
    Theme(
        "the ops dashboard",
        "TypeScript",
        ("alerts panel", "metrics chart", "incident timeline", "filter sidebar", "export button", "auth guard"),
        ("time ranges", "tooltips", "websocket updates", "pagination", "colour scales", "user roles"),
        ("web/src/panels/Alerts.tsx", "web/src/charts/Metrics.tsx", "web/src/timeline/Incidents.tsx"),
    ),
    Theme(
        "the model service",
        "Python",
        ("inference endpoint", "batching layer", "feature store client", "model registry", "canary router"),
        ("latency", "GPU memory", "request queues", "model versions", "warm-up", "tokenisation"),
        ("service/api.py", "service/batcher.py", "service/registry.py", "service/router.py"),
    ),
    Theme(
        "the checkout service",
        "Java",
        ("cart controller", "payment adapter", "tax calculator", "order events", "refund handler", "coupon rules"),
        ("idempotency keys", "currency rounding", "webhooks", "retries", "order states", "discounts"),
        ("checkout/CartController.java", "checkout/PaymentAdapter.java", "checkout/TaxCalculator.java"),
    ),
    Theme(
        "the sensor gateway",
        "Rust",
        ("firmware updater", "MQTT bridge", "buffer flusher", "device registry", "health reporter"),
        ("readings", "battery levels", "clock drift", "backpressure", "device certificates", "sampling rates"),
        ("gateway/src/bridge.rs", "gateway/src/flush.rs", "gateway/src/registry.rs", "gateway/src/health.rs"),
    ),
)

# -- what the user states once, and the probe it answers ---------------------------------------------------

#: (instruction sentence, probe: a request it applies to, sharing few words with it)
INSTRUCTIONS: Tuple[Tuple[str, str], ...] = (
    ("Always include version numbers when I list dependencies.", "What packages do I need for {project}?"),
    ("Never use semicolons in JavaScript examples.", "Show me a small snippet that debounces the search input."),
    ("Don't suggest paid tools.", "What could I use to watch uptime and get paged at night?"),
    ("Make sure to cite the file path when you point at code.", "Where does the retry handling happen?"),
    ("Always add type hints to functions you write for me.", "Write a helper that reads the settings file."),
    ("Never propose rewriting the project in another language.", "The hot loop is too slow, what are my options?"),
    ("Always end with a one-line summary.", "Walk me through how the release process works."),
)
#: The instruction that a later one contradicts, and the later one.
CONTRADICTED = (
    "From now on, answer in British English.",
    "Forget the British spelling, switch back to American English from now on.",
    "Draft a short announcement about the new colour of the status badges.",
)
#: Instructions in a second language: (sentence, probe in English).
FOREIGN_INSTRUCTIONS: Tuple[Tuple[str, str], ...] = (
    ("Por favor, escribe siempre los mensajes de commit en español.", "Give me a commit message for the fix."),
    ("Bitte nenne bei jedem Vorschlag immer zuerst die Risiken.", "Should we turn on caching for the listings?"),
    ("以后回答时请先给出结论。", "Is it worth splitting the service in two?"),
)
#: (preference sentence, probe)
PREFERENCES: Tuple[Tuple[str, str], ...] = (
    ("I prefer tabs over spaces.", "Set up an editorconfig for the new repo."),
    ("I'd rather use Postgres than MySQL.", "Which database should hold the audit log?"),
    ("I like short answers.", "Explain how cache invalidation works here."),
    ("I dislike dark themes.", "Suggest a colour palette for the status page."),
    ("I prefer pytest over unittest.", "How should I structure the tests for the parser?"),
    ("I'd rather get one good option than a list of five.", "How should I host the docs site?"),
    # as users state them in long conversations: inside a request, or as a decision or a priority
    (
        "I'm trying to keep the service small, so I prefer plain SQL over an ORM, how should I structure the"
        " queries module?",
        "Which library should handle the database access for the new reports?",
    ),
    (
        "I've chosen to keep releases manual to preserve control over what ships, but I'm wondering whether"
        " that slows the team down?",
        "Should we wire the release job to run on every merge?",
    ),
    (
        "I went with SQLite over Postgres for the prototype because it needs no server, can you help me plan"
        " the schema?",
        "Where should the prototype keep its data?",
    ),
    (
        "I prioritize readable code over clever one-liners, so please keep that in mind when you review my parser.",
        "Review the function that flattens the nested config.",
    ),
)
FOREIGN_PREFERENCES: Tuple[Tuple[str, str], ...] = (
    ("Prefiero usar Docker Compose en vez de Kubernetes para el entorno local.", "How do I run everything locally?"),
    ("Ich arbeite lieber mit kleinen Pull Requests als mit großen.", "How should I split up the migration work?"),
    ("我更喜欢用 VS Code 写代码。", "Which editor plugins would help with linting?"),
)

#: Facts updated several times: (subject, sentence templates per value, values, probe)
UPDATED: Tuple[Tuple[str, Tuple[str, str, str], Tuple[str, str, str], str], ...] = (
    (
        "launch",
        ("The launch is on {v}.", "The launch moved to {v}.", "The launch is now {v}."),
        ("March 3", "March 17", "March 24"),
        "When is the launch?",
    ),
    (
        "team",
        ("My team has {v}.", "We hired again, so my team has {v} now.", "After the reorg my team has {v}."),
        ("5 people", "7 people", "9 people"),
        "How big is my team?",
    ),
    (
        "budget",
        (
            "The cloud budget is {v} a month.",
            "Finance raised the cloud budget to {v} a month.",
            "The cloud budget is now {v} a month.",
        ),
        ("$4,000", "$5,500", "$6,200"),
        "How much can we spend on hosting each month?",
    ),
    (
        "demo",
        ("The client demo is on {v}.", "The client demo got pushed to {v}.", "The client demo is now on {v}."),
        ("Tuesday the 10th", "Thursday the 19th", "Monday the 23rd"),
        "When do we show it to the client?",
    ),
    (
        "sprint",
        ("Our sprints are {v} long.", "We changed the sprints to {v}.", "Sprints are {v} again."),
        ("two weeks", "three weeks", "one week"),
        "How long is an iteration for us right now?",
    ),
    (
        "standup",
        ("Standup is at {v}.", "Standup moved to {v}.", "Standup is now at {v}."),
        ("9:15 am", "10:30 am", "11:45 am"),
        "What time is the daily sync?",
    ),
)
#: Contradictions: (first statement, correction, first value, corrected value, probe)
CONTRADICTIONS: Tuple[Tuple[str, str, str, str, str], ...] = (
    (
        "Our API gateway is Kong.",
        "Correction: the gateway is Traefik, not what I said before, I mixed the two projects up.",
        "Kong",
        "Traefik",
        "Which gateway sits in front of the API?",
    ),
    (
        "The staging cluster runs in Frankfurt.",
        "I was wrong earlier, staging actually runs in Dublin.",
        "Frankfurt",
        "Dublin",
        "In which city is the pre-production environment hosted?",
    ),
    (
        "Our on-call rotation is handled by Priya.",
        "Scratch that, the on-call rotation is owned by Mateo.",
        "Priya",
        "Mateo",
        "Who organises who is on call?",
    ),
)
#: Ordinary facts stated once: (sentence, probe)
FACTS: Tuple[Tuple[str, str], ...] = (
    ("The staging database listens on port 5433.", "Which port do I connect to for the staging db?"),
    ("Our self-hosted CI runner is called otter.", "What's the name of the build machine?"),
    ("My manager is Ingrid Halvorsen.", "Who do I report to?"),
    ("The API rate limit is 600 requests per minute.", "How many calls per minute are we allowed?"),
    ("We keep secrets in a vault under the path kv/platform.", "Where are the credentials stored?"),
    ("The design review happens every second Thursday.", "How often do we hold the design review?"),
    ("Our error budget is 0.5 percent per quarter.", "What failure rate can we tolerate?"),
    ("The logo files live in a bucket named brand-assets-eu.", "Where do I find the logo?"),
    ("Backups are kept for 35 days.", "For how long do we retain backups?"),
    ("The legacy endpoint will be switched off in October.", "When does the old endpoint go away?"),
)
#: Facts inside a long pasted log: (sentence, probe)
LOG_FACTS: Tuple[Tuple[str, str], ...] = (
    ("So the connection pool limit is 40.", "What's our connection pool limit?"),
    ("The failing node was worker-17.", "Which machine was the one that failed?"),
    ("It started right after the deploy of build 8812.", "Which build caused the incident?"),
)
#: Two facts from different sessions that one question needs: (first, second, probe)
MULTI: Tuple[Tuple[str, str, str], ...] = (
    (
        "The billing webhook code is in services/billing/hooks.py.",
        "Tomasz rewrote the billing webhook last week.",
        "Who changed the billing webhook, and in which file is it?",
    ),
    (
        "The nightly export writes to a bucket called nightly-dumps.",
        "The nightly export started failing after the permissions change.",
        "What's wrong with the nightly export and where does it write?",
    ),
    (
        "Our mobile beta has 240 testers.",
        "The beta testers asked for a darker onboarding screen.",
        "How many people are in the beta and what did they ask for?",
    ),
)
#: A decision dated by its session: (sentence, probe template naming the day)
TEMPORAL: Tuple[Tuple[str, str], ...] = (
    ("We decided to log everything as JSON lines.", "What did we decide about the log format on {day}?"),
    ("We agreed to freeze the public API until the audit.", "What did we agree about the API on {day}?"),
    ("We chose to retire the old admin panel.", "What did we choose to do with the admin panel on {day}?"),
)

# -- filler ----------------------------------------------------------------------------------------------

USER_FILLER = (
    "How should I handle {noun} in the {component}?",
    "The {component} is slow when {noun} grow, any ideas?",
    "Can you explain how {noun} interact with the {component}?",
    "Let's refactor the {component}. Where do I start?",
    "Write a test for the {component} and its {noun} handling.",
    "I keep getting errors around {noun} in the {component}. What should I check first?",
    "Should the {component} depend on the {other} directly?",
    "The team wants a short write-up of how the {component} works before the launch.",
    "Do we need a new package for {noun}, or is the standard library enough?",
    "What would a cleaner design for the {component} look like?",
    "Review this idea: move {noun} out of the {component} into the {other}.",
    "How do I document the {component} for new people on the team?",
    "We had a hiccup with {noun} yesterday. How do I make the {component} more robust?",
    "Is there a way to measure how the {component} behaves under load?",
    "Can you sketch the config for the {component} in {language}?",
    "What logging should the {component} have around {noun}?",
)
ASSISTANT_OPENERS = (
    "Good question, let's go through it step by step.",
    "Here is how I would approach it.",
    "There are a few moving parts here, so let me take them in order.",
    "Short version first, then the details.",
    "Let's look at what the {component} actually does today.",
)
ASSISTANT_SENTENCES = (
    "In the {component}, {noun} should be validated before they reach the {other}.",
    "A simple approach is to wrap the call in a retry with exponential backoff and a ceiling.",
    "Keep the {component} small: one responsibility, and push {noun} handling to the edges.",
    "If {noun} grow without bound, add a cap and log when the cap is hit.",
    "The {other} should not know how the {component} stores {noun}.",
    "Write the test first: feed the {component} a handful of {noun} and assert on the output.",
    "Measure before changing anything; a profile of the {component} will tell you where the time goes.",
    "Configuration belongs in one place, read once at start-up, not scattered through the {component}.",
    "When {noun} arrive out of order, buffer them briefly and sort by their own timestamp.",
    "Name things after what they mean to the team, not after how they are implemented.",
    "A feature flag lets you ship the new {component} path dark and switch it on gradually.",
    "For {language}, the idiomatic way is to return errors explicitly and handle them close to the cause.",
    "Document the failure modes of the {component} next to the code, where people will read them.",
    "If the {other} is slow, put a timeout on every call into it and surface the timeout clearly.",
    "Batching {noun} usually pays off once you are past a few hundred per second.",
    "Keep an eye on memory: caching {noun} in the {component} trades memory for latency.",
    "Structured logs with a request id make it possible to follow one request through the {component}.",
    "Avoid sharing mutable state between the {component} and the {other}; pass messages instead.",
    "The launch checklist should mention the {component} explicitly, with an owner next to it.",
    "Ask the team to review the change in two passes: the interface first, then the internals.",
    "Pin what you depend on and upgrade deliberately, one dependency at a time.",
    "A dashboard with the error rate and the p95 latency of the {component} is the minimum to watch.",
)
CODE_LINES = (
    "def handle({noun_id}):",
    "    result = fetch({noun_id}, timeout=5)",
    "    if result is None:",
    "        raise ValueError('missing {noun_id}')",
    "    return transform(result)",
    "for item in batch:",
    "    queue.put(item)",
    "config = load_config('settings.toml')",
    "log.info('processed', extra={{'count': len(batch)}})",
)
ACKS = (
    "Understood, I will keep that in mind for everything that follows.",
    "Noted. I will stick to that from here on.",
    "Got it, thanks for telling me.",
    "Thanks, that is useful context.",
)
LOG_LINES = (
    "{ts} INFO  worker-{w:02d} request id={rid} path=/api/v1/items status=200 ms={ms}",
    "{ts} WARN  worker-{w:02d} slow query id={rid} table=orders ms={ms}",
    "{ts} DEBUG worker-{w:02d} cache miss key=item:{rid} ttl=300",
    "{ts} ERROR worker-{w:02d} upstream timeout id={rid} after ms={ms}",
    "{ts} INFO  worker-{w:02d} heartbeat ok queue_depth={q}",
)
GREETINGS = (
    "Hi! I'm starting work on {project} today and would like your help over the next weeks.",
    "Hello again, this is about {project}. Let's pick up a new stretch of work on it.",
)


@dataclass
class _Plan:
    """Where each labelled statement goes: turn index -> sentences to weave in."""

    at: Dict[int, List[str]] = field(default_factory=dict)
    long_user: Dict[int, List[str]] = field(default_factory=dict)  # sentences put inside a pasted log
    long_answer: set = field(default_factory=set)


def _fill(template: str, theme: Theme, rnd: random.Random) -> str:
    component, other = rnd.sample(theme.components, 2)
    return template.format(
        component=component,
        other=other,
        noun=rnd.choice(theme.nouns),
        language=theme.language,
        project=theme.name,
        noun_id=rnd.choice(("item", "record", "event", "page")),
    )


def _answer(theme: Theme, rnd: random.Random, chars: int) -> str:
    """An assistant answer of about ``chars`` characters (paragraphs of
    topic sentences, sometimes a code block)."""
    parts = [_fill(rnd.choice(ASSISTANT_OPENERS), theme, rnd)]
    size = len(parts[0])
    while size < chars:
        if rnd.random() < 0.15:
            block = "```\n" + "\n".join(_fill(line, theme, rnd) for line in rnd.sample(CODE_LINES, 4)) + "\n```"
        else:
            block = " ".join(_fill(s, theme, rnd) for s in rnd.sample(ASSISTANT_SENTENCES, rnd.randint(3, 6)))
        parts.append(block)
        size += len(block) + 2
    return "\n\n".join(parts)


def _log(rnd: random.Random, chars: int, day: datetime.datetime, inside: Sequence[str]) -> str:
    """A pasted log of about ``chars`` characters with ``inside`` (the
    user's own remarks) between its lines."""
    lines, size = [], 0
    stamp = day
    while size < chars:
        stamp += datetime.timedelta(seconds=rnd.randint(1, 20))
        line = rnd.choice(LOG_LINES).format(
            ts=stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
            w=rnd.randint(1, 12),
            rid=rnd.randint(10000, 99999),
            ms=rnd.randint(3, 4000),
            q=rnd.randint(0, 80),
        )
        lines.append(line)
        size += len(line) + 1
    middle = len(lines) // 2
    return (
        "Here's the log from last night, sorry it's long:\n"
        + "\n".join(lines[:middle])
        + "\n\n"
        + " ".join(inside)
        + "\n\n"
        + "\n".join(lines[middle:])
        + "\nWhat do you make of it?"
    )


def _turn_slots(rnd: random.Random, turns: int) -> List[int]:
    """Turns per session (SESSIONS sessions, sizes varying a little)."""
    base = [turns // SESSIONS] * SESSIONS
    for k in range(turns - sum(base)):
        base[k % SESSIONS] += 1
    for _ in range(SESSIONS):  # move a few turns between sessions
        a, b = rnd.sample(range(SESSIONS), 2)
        shift = rnd.randint(0, max(0, base[a] // 4))
        if base[a] - shift >= 4:
            base[a] -= shift
            base[b] += shift
    return base


def _session_of(sizes: Sequence[int]) -> List[int]:
    out: List[int] = []
    for s, size in enumerate(sizes):
        out.extend([s] * size)
    return out


def make_conversation(index: int, turns: int = 200, seed: int = 39) -> Dict[str, Any]:
    """One labelled conversation (see the module docstring)."""
    if turns < 40:
        raise ValueError("a conversation needs at least 40 turns, got %d" % turns)
    rnd = random.Random("%d:%d:%d" % (seed, index, turns))
    theme = THEMES[index % len(THEMES)]
    cid = "c%d" % index
    sizes = _turn_slots(rnd, turns)
    session_of = _session_of(sizes)
    firsts = [sum(sizes[:s]) for s in range(SESSIONS)]
    days: List[datetime.datetime] = []
    day = START + datetime.timedelta(days=index)
    for _ in range(SESSIONS):
        days.append(day)
        day += datetime.timedelta(days=rnd.randint(1, 5))

    def in_session(s: int, lo: float = 0.1, hi: float = 0.9) -> int:
        """A turn inside session ``s`` (never its first: a session opens with a greeting)."""
        first, size = firsts[s], sizes[s]
        return first + max(1, min(size - 1, int(size * rnd.uniform(lo, hi))))

    plan = _Plan()
    used: set = {0}
    probes: List[Dict[str, Any]] = []
    # Each probe's statements: (turn, sentence); filled in once turns are placed.
    wanted: List[Tuple[Dict[str, Any], List[Tuple[int, str]]]] = []

    def place(session: int, lo: float = 0.1, hi: float = 0.9) -> int:
        for _ in range(200):
            t = in_session(session, lo, hi)
            if t not in used:
                used.add(t)
                return t
        # A short conversation: the free turn of the nearest session.
        free = [t for t in range(turns) if t not in used and t not in firsts]
        t = min(free, key=lambda t: (abs(session_of[t] - session), t))
        used.add(t)
        return t

    def add_probe(kind: str, question: str, statements: List[Tuple[int, str]], **labels: Any) -> None:
        probe = {"id": "%s-p%02d" % (cid, len(probes)), "kind": kind, "question": question, **labels}
        probes.append(probe)
        wanted.append((probe, statements))

    # Instructions: two English, sometimes one in another language, in sessions 0-1.
    for sentence, probe in rnd.sample(INSTRUCTIONS, 2):
        t = place(rnd.choice((0, 0, 1)))
        plan.at.setdefault(t, []).append(sentence)
        add_probe("instruction", probe.format(project=theme.name), [(t, sentence)])
    if index % 2 == 1:
        sentence, probe = FOREIGN_INSTRUCTIONS[(index // 2) % len(FOREIGN_INSTRUCTIONS)]
        t = place(1)
        plan.at.setdefault(t, []).append(sentence)
        add_probe("instruction", probe, [(t, sentence)], language="other")
    # The contradicted instruction: stated in session 0, replaced in session 5.
    first, later, probe = CONTRADICTED
    t1, t2 = sorted((place(0), place(5)))
    plan.at.setdefault(t1, []).append(first)
    plan.at.setdefault(t2, []).append(later)
    add_probe(
        "contradiction",
        probe,
        [(t2, later)],
        current=later,
        stale=[first],
        subject="spelling instruction",
        also="instruction",  # counted among the instruction probes too
    )
    # Preferences: two English, one in another language (every conversation but every third).
    for sentence, probe in rnd.sample(PREFERENCES, 2):
        t = place(rnd.choice((0, 1, 1, 2)))
        plan.at.setdefault(t, []).append(sentence)
        add_probe("preference", probe, [(t, sentence)])
    if index % 3 != 2:
        sentence, probe = FOREIGN_PREFERENCES[index % len(FOREIGN_PREFERENCES)]
        t = place(2)
        plan.at.setdefault(t, []).append(sentence)
        add_probe("preference", probe, [(t, sentence)], language="other")
    # Long user messages (pasted logs over 8,000 characters): two per conversation.
    log_turns = [place(3), place(6)]
    log_fact, log_probe = LOG_FACTS[index % len(LOG_FACTS)]
    plan.long_user[log_turns[0]] = [log_fact]
    plan.long_user[log_turns[1]] = []
    add_probe("fact", log_probe, [(log_turns[0], log_fact)])
    # Facts updated several times: two subjects, values in sessions 0-1, 3-4, 6-7.
    for number, (subject, templates, values, probe) in enumerate(rnd.sample(UPDATED, 2)):
        slots = []
        for k, session in enumerate((rnd.choice((0, 1)), rnd.choice((3, 4)), rnd.choice((6, 7)))):
            in_log = k == 1 and number == 0 and index % 2 == 0  # the second value inside the second pasted log
            slots.append((log_turns[1], True) if in_log else (place(session), False))
        statements = []
        # In time order (a short conversation may place a later session's turn early).
        for k, (t, in_log) in enumerate(sorted(slots)):
            sentence = templates[k].format(v=values[k])
            (plan.long_user[t] if in_log else plan.at.setdefault(t, [])).append(sentence)
            statements.append((t, sentence))
        add_probe(
            "updated",
            probe,
            [statements[-1]],
            current=values[2],
            stale=list(values[:2]),
            subject=subject,
            history=[t for t, _ in statements],
        )
    # A contradiction of a fact.
    stated, correction, old, new, probe = CONTRADICTIONS[index % len(CONTRADICTIONS)]
    t1, t2 = sorted((place(1), place(4)))
    plan.at.setdefault(t1, []).append(stated)
    plan.at.setdefault(t2, []).append(correction)
    add_probe("contradiction", probe, [(t2, correction)], current=new, stale=[old], subject=old.lower())
    # Ordinary facts stated once, across sessions.
    for sentence, probe in rnd.sample(FACTS, 4):
        t = place(rnd.randrange(SESSIONS))
        plan.at.setdefault(t, []).append(sentence)
        add_probe("fact", probe, [(t, sentence)])
    # Multi-session: two facts, sessions 1-2 and 5-6.
    first_fact, second_fact, probe = MULTI[index % len(MULTI)]
    t1, t2 = place(rnd.choice((1, 2))), place(rnd.choice((5, 6)))
    plan.at.setdefault(t1, []).append(first_fact)
    plan.at.setdefault(t2, []).append(second_fact)
    add_probe("multi-session", probe, [(t1, first_fact), (t2, second_fact)])
    # Temporal: a decision in session 2, asked by its day.
    sentence, probe = TEMPORAL[index % len(TEMPORAL)]
    t = place(2)
    plan.at.setdefault(t, []).append(sentence)
    add_probe("temporal", probe.format(day=days[2].strftime("%A %B %d").replace(" 0", " ")), [(t, sentence)])

    # A few long answers (over 8,000 characters); the first instruction's turn among them every other conversation.
    candidates = [t for t in range(1, turns) if t not in plan.long_user]
    plan.long_answer = set(rnd.sample(candidates, 3))
    if index % 2 == 0:
        first_instruction = wanted[0][1][0][0]
        plan.long_answer.add(first_instruction)

    messages: List[Dict[str, Any]] = []
    for t in range(turns):
        session = session_of[t]
        if t in firsts:
            user = GREETINGS[0 if session == 0 else 1].format(project=theme.name)
            if t in plan.at:
                user += " " + " ".join(plan.at[t])
        elif t in plan.long_user:
            user = _log(rnd, rnd.randint(8200, 11000), days[session], plan.long_user[t])
        elif t in plan.at:
            lead = _fill(rnd.choice(USER_FILLER), theme, rnd)
            said = " ".join(plan.at[t])
            user = "%s %s" % (said, lead) if rnd.random() < 0.5 else "%s %s" % (lead, said)
        else:
            user = _fill(rnd.choice(USER_FILLER), theme, rnd)
        if t in plan.long_answer:
            chars = rnd.randint(8300, 12000)
        elif rnd.random() < 0.1:
            chars = rnd.randint(200, 700)
        else:
            chars = rnd.randint(800, 4000)
        answer = _answer(theme, rnd, chars)
        if t in plan.at and t not in firsts:
            answer = rnd.choice(ACKS) + "\n\n" + answer
        messages.append(
            {
                "turn": t,
                "session": session,
                "at": (days[session] + datetime.timedelta(minutes=3 * (t - firsts[session]))).isoformat(),
                "user_id": "%s-u%03d" % (cid, t),
                "assistant_id": "%s-a%03d" % (cid, t),
                "user": user,
                "assistant": answer,
            }
        )

    for probe, statements in wanted:
        probe["evidence"] = [messages[t]["user_id"] for t, _ in statements]
        probe["key_sentences"] = [s for _, s in statements]
        if "history" in probe:
            probe["history"] = [messages[t]["user_id"] for t in probe["history"]]
    return {
        "id": cid,
        "project": theme.name,
        "sessions": [{"index": s, "day": days[s].isoformat(), "turns": sizes[s]} for s in range(SESSIONS)],
        "turns": messages,
        "probes": probes,
        "after": (days[-1] + datetime.timedelta(days=1)).isoformat(),
    }


def make_conversations(n: int = 8, turns: int = 200, seed: int = 39) -> List[Dict[str, Any]]:
    """``n`` labelled conversations of ``turns`` turns each."""
    return [make_conversation(k, turns, seed) for k in range(n)]


def _texts(conversation: Dict[str, Any]) -> Dict[str, str]:
    out = {}
    for turn in conversation["turns"]:
        out[turn["user_id"]] = turn["user"]
        out[turn["assistant_id"]] = turn["assistant"]
    return out


def check_labels(conversation: Dict[str, Any]) -> List[str]:
    """What is wrong with a conversation's labels (empty: consistent): every
    key sentence is a verbatim substring of its evidence message; a current
    value is in the last statement and in no earlier message; every stale
    value is in some earlier message; no probe's key sentence is in the first
    user message (the middleware pins a thread's first message)."""
    texts = _texts(conversation)
    order = {mid: k for k, mid in enumerate(texts)}
    first = conversation["turns"][0]["user"]
    problems = []
    for probe in conversation["probes"]:
        for mid, sentence in zip(probe["evidence"], probe["key_sentences"]):
            if sentence not in texts.get(mid, ""):
                problems.append("%s: %r not in %s" % (probe["id"], sentence, mid))
            if sentence in first:
                problems.append("%s: %r in the first message" % (probe["id"], sentence))
        current: Optional[str] = probe.get("current")
        if current is None:
            continue
        last = probe["evidence"][-1]
        if current not in texts[last]:
            problems.append("%s: current %r not in %s" % (probe["id"], current, last))
        earlier = [m for m in texts if order[m] < order[last]]
        if any(current in texts[m] for m in earlier):
            problems.append("%s: current %r already said before %s" % (probe["id"], current, last))
        for stale in probe["stale"]:
            if not any(stale in texts[m] for m in earlier):
                problems.append("%s: stale %r never said before %s" % (probe["id"], stale, last))
            if stale in current or current in stale:
                problems.append("%s: stale %r and current %r overlap" % (probe["id"], stale, current))
    return problems


if __name__ == "__main__":
    data = make_conversations()
    for conv in data:
        sizes = [len(t["user"]) + len(t["assistant"]) for t in conv["turns"]]
        print(
            conv["id"],
            conv["project"],
            "turns %d, probes %d, chars %d, pairs over 8000: %d"
            % (len(conv["turns"]), len(conv["probes"]), sum(sizes), sum(s > 8000 for s in sizes)),
            check_labels(conv) or "labels ok",
        )
