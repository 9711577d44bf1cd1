"""Write examples/memory_with_summaries.jsonl: the bundled store with a
``summary`` on every entry but the corrections.

    python examples/make_summaries.py

A summary is written the way an index line is (seed 003's layer 1): it names
what the entry is about, in a few words, and leaves the specifics (figures,
causes, the steps of a procedure) to the content. That is the honest case for
progressive loading: the summary tells the model that the memory exists and
what it covers, and the full text is one expand call away. Corrections get no
summary: they always load in full.

The summaries of the curated entries are written by hand below; the notes
come from five templates (examples/make_store.py), so theirs are derived from
the template. Deterministic; examples/memory.jsonl is read, never rewritten.
"""

from __future__ import annotations

import json
import pathlib
import re

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE / "memory.jsonl"
OUT = HERE / "memory_with_summaries.jsonl"

SUMMARIES = {
    "task-001": "Checkout Flask-to-FastAPI migration",
    "task-002": "Retry for the payment provider client",
    "task-003": "Contract tests for refunds",
    "task-004": "Cart-merge race for guests",
    "task-005": "Replace the currency table",
    "task-006": "Checkout confirm latency target",
    "task-007": "Move session storage",
    "task-008": "Backfill orders_daily for September",
    "task-009": "Partition the events table",
    "task-010": "Data-quality checks in ingest",
    "task-011": "Airflow upgrade",
    "task-012": "Pipeline SLA and runbook docs",
    "task-013": "Speed up the dedupe job",
    "task-014": "Dependency update bot",
    "task-015": "Rounding incident postmortem",
    "task-090": "Sessions on DynamoDB",
    "fact-001": "Checkout service runtime and deployment",
    "fact-002": "Staging database and migrations",
    "fact-003": "Payment provider rate limit",
    "fact-004": "How refunds complete",
    "fact-005": "Cart id format",
    "fact-006": "When the user reviews",
    "fact-007": "Checkout CI duration",
    "fact-008": "Feature flag conventions",
    "fact-009": "Pipeline source and sink",
    "fact-010": "Where Airflow DAGs live",
    "fact-011": "Warehouse and loader permissions",
    "fact-012": "Late orders from the marketplace",
    "fact-013": "Event dedupe key",
    "fact-014": "Pipeline on-call rotation",
    "fact-015": "Lint and type tooling",
    "fact-016": "Preferred pull request size",
    "fact-017": "Production Redis setup",
    "fact-018": "Staging reset schedule",
    "fact-019": "How money is stored",
    "fact-020": "Size of the events table",
    "fact-090": "Checkout CI duration (old)",
    "ep-001": "Failed SQLAlchemy 2.0 upgrade",
    "ep-002": "The October rounding incident",
    "ep-003": "Provider 429 storm during the sale",
    "ep-004": "Migration locked the orders table",
    "ep-005": "Reproducing the guest-cart race",
    "ep-006": "Profiling checkout confirm",
    "ep-007": "Why the Monday dedupe job slowed",
    "ep-008": "Duplicate rows from a bad load",
    "ep-009": "Airflow 2.9 upgrade broke a sensor",
    "ep-010": "Source of null customer ids",
    "ep-011": "User asked for German replies",
    "ep-012": "Patch rejected for formatting",
    "ep-013": "Skipped flaky test hid a bug",
    "skill-001": "Reproducing a race condition",
    "skill-002": "Reading large files efficiently",
    "skill-003": "Bisecting a regression",
    "skill-004": "Safe Alembic migrations",
    "skill-005": "Backfilling a partitioned table",
    "skill-006": "Finding slow Postgres scans",
    "skill-007": "Profiling a FastAPI endpoint",
    "skill-008": "Testing money code",
    "skill-009": "Quarantining a bad partition",
    "skill-010": "Reading Airflow logs without the UI",
    "skill-011": "Summarising a review thread",
    "skill-012": "Iterating on failing tests",
    "grow-001": "Asking what done looks like",
    "grow-002": "Migration estimates run low",
    "grow-003": "Over-explaining in reviews",
    "grow-004": "Getting unstuck",
    "grow-005": "Forgetting late-arriving data",
    "grow-006": "Checking tool output before claiming success",
}

NOTE_TEMPLATES = [
    (re.compile(r"^Ported route (\S+) to FastAPI;"), "FastAPI port of {0}"),
    (
        re.compile(r"^Provider sandbox returned \d+ errors of type \S+ during the retry test\.$"),
        "Sandbox errors in the retry test",
    ),
    (re.compile(r"^Ingest for (\S+) finished"), "Ingest run for {0}"),
    (re.compile(r"^Data-quality check on (\S+):"), "Data-quality check on {0}"),
    (re.compile(r"^Review note on PR (\d+):"), "Review note on PR {0}"),
]


def summary_for(entry: dict) -> str:
    if entry["id"] in SUMMARIES:
        return SUMMARIES[entry["id"]]
    for pattern, template in NOTE_TEMPLATES:
        match = pattern.match(entry["content"])
        if match:
            return template.format(*match.groups())
    raise SystemExit("no summary for %s: add one to SUMMARIES" % entry["id"])


def main() -> None:
    rows = []
    for line in SOURCE.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("scope") != "always":
            entry["summary"] = summary_for(entry)
        rows.append(entry)
    OUT.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    print("wrote %d entries (%d with a summary) to %s" % (len(rows), sum("summary" in r for r in rows), OUT))


if __name__ == "__main__":
    main()
