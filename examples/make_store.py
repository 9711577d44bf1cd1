"""Regenerate the bundled example memory store (package data:
poolsplit_adapters/data/memory.jsonl; examples/memory.jsonl links to it).

A coding agent's long-term memory after a few months on two projects
(``checkout`` and ``pipeline``) plus general knowledge. Deterministic: the
same file every run. Run ``python examples/make_store.py`` after editing.
"""

from __future__ import annotations

import datetime
import json
import pathlib
import random

OUT = pathlib.Path(__file__).resolve().parent.parent / "poolsplit_adapters" / "data" / "memory.jsonl"
NOW = datetime.datetime(2026, 11, 20, 9, 0, 0)

CORRECTIONS = [
    (
        "Never claim a file was written or a test passed without reading the tool output that proves it.",
        None,
        ["honesty", "tools"],
    ),
    ("Do not force-push to main or any shared branch; open a pull request instead.", None, ["git"]),
    (
        "Ask before running database migrations against staging; the user owns that step.",
        "checkout",
        ["db", "migrations"],
    ),
    (
        "Quote amounts in cents in the checkout code; floats for money caused the rounding incident.",
        "checkout",
        ["money", "payments"],
    ),
    ("When a test is flaky, report it as flaky; never mark it skipped to get a green run.", None, ["tests"]),
    ("Keep pipeline jobs idempotent: re-running a day must not duplicate rows.", "pipeline", ["etl", "idempotency"]),
    (
        "Do not paste secrets or tokens into chat, logs or commit messages, even redacted-looking ones.",
        None,
        ["security"],
    ),
    (
        "Answer in the user's language; they switched to German in October and asked to stay there.",
        None,
        ["communication"],
    ),
    ("Run the linter before proposing a diff; the user rejected three unlinted patches.", None, ["review", "lint"]),
    (
        "Never delete a Parquet partition to fix a bad load; quarantine it under /quarantine first.",
        "pipeline",
        ["etl", "storage"],
    ),
]

TASKS = [
    ("Migrate the checkout service from Flask to FastAPI, route by route.", "checkout", ["migration", "api"], 8),
    ("Add retry with exponential backoff to the payment provider client.", "checkout", ["payments", "retry"], 8),
    ("Write contract tests for the refunds endpoint.", "checkout", ["tests", "payments"], 7),
    ("Fix the race in cart merging when a guest logs in on two tabs.", "checkout", ["cart", "bug"], 9),
    ("Replace the hand-rolled currency table with the ISO 4217 package.", "checkout", ["money"], 6),
    ("Cut p95 latency of /checkout/confirm below 300 ms.", "checkout", ["performance", "api"], 8),
    ("Move session storage from Memcached to Redis.", "checkout", ["cache", "redis"], 6),
    ("Backfill the orders_daily table for September after the schema change.", "pipeline", ["etl", "backfill"], 8),
    ("Partition the events table by day and drop the old monthly partitions.", "pipeline", ["storage", "etl"], 7),
    ("Add data-quality checks for null customer ids in the ingest step.", "pipeline", ["quality", "etl"], 8),
    ("Upgrade the Airflow deployment to 2.10 and fix deprecated operators.", "pipeline", ["airflow", "upgrade"], 6),
    ("Document the pipeline's SLA and the on-call runbook.", "pipeline", ["docs", "oncall"], 5),
    ("Speed up the dedupe job; it takes 40 minutes on Mondays.", "pipeline", ["performance", "etl"], 7),
    ("Set up the weekly dependency update bot for both repositories.", None, ["maintenance"], 5),
    ("Write the postmortem for the October rounding incident.", "checkout", ["incident", "money"], 7),
]

FACTS = [
    (
        "The checkout service runs on Python 3.11 behind an nginx ingress with 4 replicas.",
        "checkout",
        ["deploy", "infra"],
    ),
    (
        "Staging database is Postgres 15; migrations use Alembic with one revision per PR.",
        "checkout",
        ["db", "migrations"],
    ),
    (
        "The payment provider rate-limits at 100 requests per second per merchant key.",
        "checkout",
        ["payments", "limits"],
    ),
    ("Refunds are asynchronous: the provider calls our webhook within 24 hours.", "checkout", ["payments", "webhooks"]),
    ("Cart ids are UUIDv7, so they sort by creation time.", "checkout", ["cart"]),
    ("The user reviews pull requests in the morning, Berlin time.", None, ["communication", "review"]),
    ("CI for checkout takes about 11 minutes; the slowest job is the end-to-end suite.", "checkout", ["ci", "tests"]),
    ("Feature flags live in LaunchDarkly; flag names are kebab-case with a team prefix.", "checkout", ["flags"]),
    (
        "The pipeline reads from Kafka topic events.v3 and writes Parquet to S3, partitioned by day.",
        "pipeline",
        ["etl", "storage"],
    ),
    ("Airflow DAGs are in the dags/ folder; one DAG per source system.", "pipeline", ["airflow"]),
    ("The warehouse is Snowflake; the loader role cannot create schemas.", "pipeline", ["warehouse", "permissions"]),
    ("Orders arrive up to 3 days late from the marketplace feed.", "pipeline", ["etl", "late-data"]),
    (
        "The dedupe key for events is (source, event_id); event_id alone collides across sources.",
        "pipeline",
        ["etl", "dedupe"],
    ),
    ("On-call rotation for the pipeline changes every Monday at 10:00.", "pipeline", ["oncall"]),
    ("Both repositories use ruff and mypy in strict mode; pre-commit runs them.", None, ["lint", "tooling"]),
    ("The user prefers small pull requests under 300 changed lines.", None, ["review"]),
    ("Redis in production is a managed cluster with 3 shards and no persistence.", "checkout", ["redis", "infra"]),
    ("The staging environment is reset every Sunday night from an anonymised snapshot.", None, ["staging"]),
    ("Monetary amounts are stored as integer cents with an ISO currency code.", "checkout", ["money"]),
    (
        "The events table holds about 2 billion rows; full scans take over an hour.",
        "pipeline",
        ["storage", "performance"],
    ),
]

EPISODES = [
    (
        "Tried upgrading SQLAlchemy to 2.0 in checkout; 14 tests failed on implicit autocommit. Reverted.",
        "checkout",
        ["db", "upgrade"],
    ),
    (
        "The October rounding incident: float multiplication lost a cent on 3% of orders with discounts.",
        "checkout",
        ["incident", "money"],
    ),
    ("Backoff with jitter fixed the provider 429 storm during the sale.", "checkout", ["payments", "retry"]),
    (
        "A migration locked the orders table for 9 minutes on staging; we split it into batches.",
        "checkout",
        ["db", "migrations"],
    ),
    ("The guest-cart race reproduced with two browser tabs and a 50 ms delay on merge.", "checkout", ["cart", "bug"]),
    ("Profiling /checkout/confirm showed 180 ms in synchronous tax lookup.", "checkout", ["performance"]),
    (
        "The Monday dedupe job slowed because the late-data window scanned 30 days instead of 3.",
        "pipeline",
        ["etl", "performance"],
    ),
    (
        "A bad load on 12 September wrote duplicate rows; the quarantine procedure recovered it in an hour.",
        "pipeline",
        ["etl", "incident"],
    ),
    (
        "Airflow 2.9 upgrade broke the S3 sensor; pinned the provider package to fix it.",
        "pipeline",
        ["airflow", "upgrade"],
    ),
    ("Null customer ids came from the marketplace feed's test orders.", "pipeline", ["quality"]),
    (
        "The user asked for German replies after a long English thread; they found the switch tiring.",
        None,
        ["communication"],
    ),
    (
        "A patch was rejected for formatting noise; running ruff format first fixed the review.",
        None,
        ["review", "lint"],
    ),
    (
        "Skipping a flaky end-to-end test hid a real bug in the refunds webhook for a week.",
        "checkout",
        ["tests", "incident"],
    ),
]

SKILLS = [
    (
        "To reproduce a race, add a sleep at the suspected interleaving and run both paths concurrently.",
        None,
        ["debugging"],
    ),
    ("grep for the symbol before reading a large file; read only the functions that use it.", None, ["navigation"]),
    ("Bisect a regression with git bisect run and the failing test as the predicate.", None, ["git", "debugging"]),
    (
        "Write Alembic migrations that add nullable columns first, backfill, then add constraints.",
        "checkout",
        ["db", "migrations"],
    ),
    ("Backfill a partitioned table one day at a time with an idempotent MERGE.", "pipeline", ["etl", "backfill"]),
    ("Use EXPLAIN ANALYZE with BUFFERS to find sequential scans in Postgres.", None, ["db", "performance"]),
    ("Profile a FastAPI endpoint with pyinstrument middleware on one request.", "checkout", ["performance", "api"]),
    ("Test money code with property tests that check totals in cents add up.", "checkout", ["money", "tests"]),
    ("Quarantine a bad partition: move it, rerun the day, compare row counts.", "pipeline", ["etl", "storage"]),
    ("Read Airflow task logs from the S3 log bucket when the UI times out.", "pipeline", ["airflow"]),
    ("Summarise a long review thread as decisions, open questions and owners.", None, ["communication"]),
    ("Use pytest -x --lf to iterate on the last failing tests only.", None, ["tests"]),
]

GROWTH = [
    (
        "I jump to code before asking what done looks like; asking first saved a day on the refunds work.",
        None,
        ["planning"],
    ),
    (
        "My estimates for migrations are low by about half; budget for the backfill step.",
        None,
        ["planning", "migrations"],
    ),
    ("I over-explain in reviews; the user prefers three bullet points.", None, ["communication", "review"]),
    (
        "When stuck for 20 minutes, writing down the hypothesis list unblocks me faster than reading more code.",
        None,
        ["debugging"],
    ),
    (
        "I forget late-arriving data in pipeline designs; check the 3-day window every time.",
        "pipeline",
        ["etl", "late-data"],
    ),
    (
        "Checking the tool output before reporting success has removed every false claim since August.",
        None,
        ["honesty", "tools"],
    ),
]


def stamp(days_ago: float) -> str:
    return (NOW - datetime.timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def main() -> None:
    rnd = random.Random(20261120)
    rows = []

    def add(kind, prefix, n, content, project, tags, **extra):
        rows.append(
            {
                "id": "%s-%03d" % (prefix, n),
                "type": kind,
                "content": content,
                "tags": tags,
                "project": project,
                "created": stamp(extra.pop("age", rnd.uniform(0, 150))),
                "source": extra.pop("source", "session:%s" % stamp(rnd.uniform(0, 150))[:10]),
                **extra,
            }
        )

    for n, (text, project, tags) in enumerate(CORRECTIONS, 1):
        add(
            "correction",
            "fix",
            n,
            text,
            project,
            tags,
            scope="always",
            base_priority=10,
            age=rnd.uniform(60, 200),
            source="user-feedback",
        )
    for n, (text, project, tags, prio) in enumerate(TASKS, 1):
        add("task", "task", n, text, project, tags, base_priority=prio, age=rnd.uniform(0, 40))
    for n, (text, project, tags) in enumerate(FACTS, 1):
        add("fact", "fact", n, text, project, tags, base_priority=6)
    for n, (text, project, tags) in enumerate(EPISODES, 1):
        add("episode", "ep", n, text, project, tags, base_priority=5)
    for n, (text, project, tags) in enumerate(SKILLS, 1):
        add("skill", "skill", n, text, project, tags, base_priority=3, age=rnd.uniform(30, 200))
    for n, (text, project, tags) in enumerate(GROWTH, 1):
        add("growth", "grow", n, text, project, tags, base_priority=2, age=rnd.uniform(30, 200))

    # A busy agent's recent notes: fresh, high-priority, many. This flood is
    # what crowds corrections and low-priority types out of a single budget.
    topics = [
        ("checkout", ["api", "migration"], "Ported route {r} to FastAPI; {n} tests green, response schema unchanged."),
        ("checkout", ["payments"], "Provider sandbox returned {n} errors of type {r} during the retry test."),
        ("pipeline", ["etl"], "Ingest for {r} finished in {n} minutes with no late rows."),
        ("pipeline", ["quality"], "Data-quality check on {r}: {n} null customer ids quarantined."),
        (None, ["review"], "Review note on PR {n}: {r} needs a docstring and a test."),
    ]
    routes = [
        "/cart",
        "/cart/merge",
        "/checkout/confirm",
        "/refunds",
        "/orders",
        "/webhooks/provider",
        "/tax",
        "/health",
    ]
    notes_written = set()
    for n in range(1, 101):
        project, tags, template = topics[n % len(topics)]
        add(
            "note",
            "note",
            n,
            template.format(r=rnd.choice(routes), n=rnd.randint(2, 90)),
            project,
            tags,
            base_priority=7,
            age=rnd.uniform(0, 6),
        )
        # A note that repeats an earlier one word for word (note-033 drew
        # note-028's route and count) is left out, its number unused: the
        # store must import without a duplicate warning. Dropped after it
        # was drawn, so every later entry keeps its random draws.
        if rows[-1]["content"] in notes_written:
            rows.pop()
        else:
            notes_written.add(rows[-1]["content"])

    # Retired entries: present in the store, never loaded.
    add(
        "fact",
        "fact",
        90,
        "Checkout CI takes about 25 minutes.",
        "checkout",
        ["ci"],
        base_priority=6,
        superseded_by="fact-007",
    )
    add(
        "task",
        "task",
        90,
        "Evaluate moving sessions to DynamoDB.",
        "checkout",
        ["cache"],
        base_priority=6,
        status="abandoned",
    )

    with OUT.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    print("wrote %d entries to %s" % (len(rows), OUT))


if __name__ == "__main__":
    main()
