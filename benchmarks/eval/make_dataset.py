"""Regenerate the labelled evaluation set (entries.jsonl, queries.jsonl).

    python benchmarks/eval/make_dataset.py

How it is made (also in README.md):

* **Topics, hand-written.** Each topic is one thing an agent on a software
  team would remember, written as up to six entries of different types
  (fact, task, note, episode, skill, growth), plus one or two queries. The
  entries of a topic are the relevant ids of its queries.
* **Paraphrase queries, hand-written** to say the same need in other words:
  the script refuses a paraphrase that shares a content word or word stem
  with any of its relevant entries (``dataset.shared_content``).
* **Keyword queries** reuse the topic's own words, the case lexical
  matching was built for.
* **Templates** add what a real store also holds: unrelated stand-up and
  meeting notes (the high-priority bulk that crowds out other types) and
  always-scope corrections. Ages, priorities and ids come from a seeded
  random generator, so the files are the same on every run.

Priorities follow the bundled example store (examples/memory.jsonl): notes 7,
tasks 5-9, facts 6, episodes 5, skills 3, growth 2, corrections 10 and
always-scope.
"""

from __future__ import annotations

import datetime
import json
import random
import sys
from typing import Any, Dict, List, Optional, Tuple

from dataset import ENTRIES, NOW, QUERIES, shared_content

#: (key, project, tags, {type: text}, keyword query or None, paraphrase query)
Topic = Tuple[str, str, List[str], Dict[str, str], Optional[str], str]

TOPICS: List[Topic] = [
    (
        "refund-rounding",
        "checkout",
        ["money", "bug"],
        {
            "fact": "Refund totals are computed in integer cents since the October fix.",
            "task": "Add a regression test for refund rounding on discounted orders.",
            "note": "Finance flagged three refunds that were a cent short last month.",
            "episode": "The October rounding incident: float multiplication lost a cent on 3% of discounted refunds.",
            "skill": "To debug rounding of amounts, replay the order through Decimal with ROUND_HALF_EVEN and diff the cents.",
            "growth": "I now check currency arithmetic for floats before trusting a total.",
        },
        "refund rounding bug on discounted orders",
        "why do reimbursements sometimes come back a penny low",
    ),
    (
        "staging-gate",
        "infra",
        ["deploy", "release"],
        {
            "fact": "Every deploy must pass the staging gate: smoke tests plus a 30 minute soak.",
            "task": "Automate the staging soak check so deploys stop waiting on a human.",
            "note": "Release train this week is blocked on the staging gate for the search service.",
            "episode": "We skipped the staging soak once in May and shipped a config typo to production.",
            "skill": "To promote a build, tag it, watch the staging dashboards for 30 minutes, then press promote.",
        },
        None,
        "can my change reach customers immediately, or does something happen beforehand",
    ),
    (
        "migration-locks",
        "checkout",
        ["db", "migrations"],
        {
            "fact": "Adding a column with a default rewrites the whole orders table on our Postgres version.",
            "task": "Split the pending orders migration into batches of 10k rows.",
            "episode": "A migration locked the orders table for 9 minutes on staging; we split it into batches.",
            "skill": "Write schema migrations as add-nullable, backfill in batches, then set the constraint.",
            "growth": "I learned to estimate table rewrite time before running any migration.",
        },
        "orders table migration lock",
        "restructuring stored records froze everything and purchases hung",
    ),
    (
        "provider-429",
        "payments",
        ["payments", "retry"],
        {
            "fact": "The card provider allows 100 requests per second per merchant account.",
            "task": "Add jitter to the capture retry loop before the holiday sale.",
            "note": "Provider status page showed degraded capture latency on Tuesday.",
            "episode": "Backoff with jitter fixed the provider 429 storm during the spring sale.",
            "skill": "On HTTP 429, honour Retry-After, back off exponentially with jitter, cap at five attempts.",
        },
        "provider 429 retry backoff",
        "the payment processor keeps telling us to slow down when traffic spikes",
    ),
    (
        "flaky-timezone-test",
        "ci",
        ["tests", "ci"],
        {
            "fact": "CI runners use UTC while developer laptops use local time.",
            "task": "Fix the flaky invoice date test that fails between midnight and 1am UTC.",
            "note": "The invoice date test failed twice this week, both runs right after midnight.",
            "episode": "Freezing the clock with a fixed timestamp made the invoice date test stable.",
            "skill": "When a test depends on dates, inject the clock instead of calling now().",
            "growth": "I stopped rerunning red builds and started reading the failure times.",
        },
        "flaky invoice date test midnight",
        "a check in our pipeline only breaks late at night",
    ),
    (
        "concise-answers",
        "assistant",
        ["preferences", "style"],
        {
            "fact": "The user prefers short answers: the result first, details only when asked.",
            "note": "User said long explanations before the answer waste their time.",
            "episode": "A five-paragraph reply about a one-line fix annoyed the user on Monday.",
            "growth": "I lead with the outcome now and offer the reasoning afterwards.",
        },
        None,
        "how verbose should my replies be",
    ),
    (
        "secret-rotation",
        "security",
        ["security", "secrets"],
        {
            "fact": "API keys are rotated every 90 days through the vault rotation job.",
            "task": "Rotate the analytics warehouse key that leaked into a CI log.",
            "note": "Security asked for a list of every key older than 90 days.",
            "episode": "A test printed the warehouse credentials into the CI log; we rotated them within the hour.",
            "skill": "To rotate a credential, mint the new one, deploy it, verify traffic, then revoke the old one.",
        },
        "rotate leaked key vault",
        "a password got exposed in build output, what now",
    ),
    (
        "search-reindex",
        "search",
        ["search", "index"],
        {
            "fact": "A full search reindex of the catalog takes about four hours.",
            "task": "Make the reindex job resumable after a crash.",
            "note": "Product titles with accents are missing from search results again.",
            "episode": "The reindex died at 80% during the May deploy and had to restart from zero.",
            "skill": "Reindex into a new alias, compare document counts, then swap the alias atomically.",
        },
        "search reindex resumable",
        "items that were just added cannot be found by shoppers typing their name",
    ),
    (
        "feature-flags",
        "web",
        ["flags", "cleanup"],
        {
            "fact": "There are 140 feature flags in the web app; 60 have been fully on for over a year.",
            "task": "Remove the stale checkout redesign flag and its dead code path.",
            "note": "Team agreed every flag gets an owner and an expiry date.",
            "skill": "To retire a flag, hardcode the winning branch, delete the flag, then remove dead tests.",
            "growth": "I now add an expiry date whenever I create a feature flag.",
        },
        "stale feature flag cleanup",
        "old toggles that are always switched on clutter the codebase",
    ),
    (
        "worker-memory-leak",
        "worker",
        ["memory", "bug"],
        {
            "fact": "Image workers are restarted by the supervisor when RSS passes 2 GB.",
            "task": "Profile the thumbnail worker heap growth over a full day.",
            "note": "Thumbnail workers were OOM-killed 14 times overnight.",
            "episode": "The leak came from a module-level cache of decoded images that never evicted.",
            "skill": "Use tracemalloc snapshots an hour apart and diff them by traceback to find a leak.",
        },
        "thumbnail worker memory leak",
        "the picture resizing process keeps growing until the machine kills it",
    ),
    (
        "sqlalchemy-upgrade",
        "checkout",
        ["db", "upgrade"],
        {
            "fact": "The checkout service pins SQLAlchemy 1.4 because of implicit autocommit usage.",
            "task": "Replace implicit autocommit calls so SQLAlchemy 2.0 can be adopted.",
            "episode": "Tried upgrading SQLAlchemy to 2.0 in checkout; 14 tests failed on implicit autocommit. Reverted.",
            "skill": "Turn on SQLALCHEMY_WARN_20 and fix every RemovedIn20Warning before bumping the major version.",
        },
        "SQLAlchemy 2.0 upgrade autocommit",
        "moving our ORM dependency to its newest release broke things",
    ),
    (
        "oncall-handoff",
        "ops",
        ["oncall", "process"],
        {
            "fact": "On-call rotates every Monday at 10:00 local time.",
            "task": "Write the handoff summary for the incoming on-call engineer.",
            "note": "Handoff doc template now has an open incidents section.",
            "episode": "An alert was ignored for two hours because the handoff never mentioned the muted pager.",
            "growth": "I write the handoff note before my last shift ends, not after.",
        },
        None,
        "what should I brief my replacement about as I go off duty",
    ),
    (
        "log-costs",
        "infra",
        ["logging", "cost"],
        {
            "fact": "Log ingestion is 38% of the monthly observability bill.",
            "task": "Drop debug logs from the request path in production.",
            "note": "Finance asked why the observability invoice doubled in September.",
            "episode": "A debug flag left on in the gateway produced 2 TB of logs in one weekend.",
            "skill": "Sample noisy log lines at the source and keep full logs only for errors.",
        },
        "log ingestion cost",
        "our monitoring spend jumped, where is that money going",
    ),
    (
        "contrast-accessibility",
        "web",
        ["a11y", "ui"],
        {
            "fact": "Body text must meet a contrast ratio of 4.5:1 against its background.",
            "task": "Darken the grey helper text on the payment form.",
            "note": "Audit found 23 contrast failures, mostly placeholder text.",
            "skill": "Check colour pairs with the contrast checker in devtools before merging UI changes.",
            "growth": "I review new components with a screen reader before calling them done.",
        },
        "contrast ratio helper text",
        "people with poor eyesight struggle to read the faint labels",
    ),
    (
        "email-bounces",
        "notifications",
        ["email", "deliverability"],
        {
            "fact": "Receipts are sent from a dedicated subdomain with its own SPF and DKIM records.",
            "task": "Suppress addresses after two hard bounces.",
            "note": "Bounce rate on receipts crossed 4% after the domain change.",
            "episode": "A missing DKIM record after the DNS migration sent receipts to spam for a day.",
            "skill": "After any DNS change, send a test receipt to a seed list and inspect the headers.",
        },
        "receipt email bounce DKIM",
        "customers say our order confirmations land in junk",
    ),
    (
        "report-timezones",
        "analytics",
        ["time", "reports"],
        {
            "fact": "Daily revenue reports cut days at midnight UTC, not at the merchant's local midnight.",
            "task": "Let merchants choose the timezone of their daily report.",
            "note": "An Australian merchant asked why Monday sales show up under Sunday.",
            "skill": "Store timestamps in UTC and convert to the viewer's zone only when rendering.",
        },
        None,
        "shops abroad see takings filed against the wrong weekday",
    ),
    (
        "price-cache",
        "catalog",
        ["cache", "prices"],
        {
            "fact": "Product prices are cached for 10 minutes at the CDN edge.",
            "task": "Purge the CDN price cache whenever a price changes.",
            "note": "Support reported customers seeing an old price during the flash sale.",
            "episode": "Stale cached prices let 40 orders through at the pre-sale amount.",
            "skill": "Version cache keys by price revision so an update never needs a purge.",
            "growth": "I ask how data gets invalidated before I add any cache.",
        },
        "stale price cache CDN purge",
        "shoppers were charged what an item cost yesterday",
    ),
    (
        "image-size",
        "infra",
        ["docker", "build"],
        {
            "fact": "The API container image is 2.1 GB, mostly build toolchains.",
            "task": "Move the API image to a multi-stage build with a slim runtime base.",
            "note": "Cold starts on the autoscaler take 90 seconds pulling the API image.",
            "skill": "Use multi-stage Dockerfiles: compile in a builder stage, copy only artifacts.",
        },
        "docker image size multi-stage",
        "fresh servers need ages to boot because the packaged app is huge",
    ),
    (
        "api-deprecation",
        "api",
        ["api", "versioning"],
        {
            "fact": "API v1 is deprecated and will be switched off on 1 March.",
            "task": "Email the 12 integrators still calling API v1.",
            "note": "Partner Acme still sends 30% of its traffic to v1 endpoints.",
            "skill": "Announce deprecations with a Sunset header, docs banner and two reminder emails.",
        },
        "API v1 deprecation sunset",
        "a few companies built against our interface rely on retired routes we plan to disable",
    ),
    (
        "guest-cart-race",
        "checkout",
        ["cart", "bug"],
        {
            "fact": "Guest carts are merged into the account cart at login.",
            "task": "Make the guest cart merge idempotent.",
            "note": "Duplicate line items appear when shoppers log in from two tabs.",
            "episode": "The guest-cart race reproduced with two browser tabs and a 50 ms delay on merge.",
            "growth": "I try concurrent requests early when a bug only shows up sometimes.",
        },
        "guest cart merge duplicate items",
        "signing in doubles what somebody was about to buy",
    ),
    (
        "gdpr-export",
        "privacy",
        ["privacy", "compliance"],
        {
            "fact": "Data export requests must be answered within 30 days.",
            "task": "Include support chat transcripts in the personal data export.",
            "note": "Legal reviewed the export format and asked for a readme file in the archive.",
            "skill": "Build exports from the data inventory, not by grepping tables one by one.",
        },
        "personal data export request",
        "a user wants a copy of everything we hold about them",
    ),
    (
        "sale-load-test",
        "perf",
        ["load", "capacity"],
        {
            "fact": "Peak sale traffic last year was 8x a normal Saturday.",
            "task": "Run a load test at 10x normal traffic two weeks before the sale.",
            "note": "The load test environment still uses last year's product catalogue.",
            "episode": "The load test found the session store saturating at 6x; we added replicas.",
            "skill": "Ramp load in steps, hold each step ten minutes, and record p99 latency per step.",
        },
        "load test before sale",
        "will the site survive the holiday rush",
    ),
    (
        "review-etiquette",
        "team",
        ["review", "team"],
        {
            "fact": "Pull requests need one approval and green CI before merge.",
            "note": "The team asked reviewers to label comments as blocking or nit.",
            "skill": "Review in two passes: design first, then line-level comments.",
            "growth": "I mark my review comments as nit or blocking so authors know what matters.",
        },
        "code review comments nit blocking",
        "how should I give feedback on colleagues' patches",
    ),
    (
        "mobile-startup-crash",
        "mobile",
        ["mobile", "crash"],
        {
            "fact": "The Android app supports versions 8 and above.",
            "task": "Fix the startup crash on Android 8 devices with no SD card.",
            "note": "Crash reports spiked after release 4.2 on older Samsung phones.",
            "episode": "Release 4.2 crashed at launch because the cache directory was null on Android 8.",
        },
        "android startup crash release 4.2",
        "our mobile program quits instantly when people open it on aging handsets",
    ),
    (
        "backup-drill",
        "ops",
        ["backup", "dr"],
        {
            "fact": "Database backups are taken every six hours and kept for 35 days.",
            "task": "Schedule the quarterly restore drill for the orders database.",
            "note": "Last restore drill took 3 hours, over the 2 hour target.",
            "episode": "A restore drill revealed that backups of the audit schema had been empty for weeks.",
            "skill": "Restore into a scratch instance and run row-count checks against production.",
            "growth": "I verify a backup by restoring it, never by its file size.",
        },
        "database restore drill backups",
        "if we lost the data tonight could we get it back",
    ),
    (
        "localisation",
        "web",
        ["i18n", "ui"],
        {
            "fact": "Translations live in JSON catalogues, one per locale.",
            "task": "Extract the hardcoded strings from the checkout page into the catalogue.",
            "note": "German labels overflow the buttons on the payment form.",
            "skill": "Test layouts with pseudo-localised strings 40% longer than English.",
        },
        "translation strings German locale",
        "foreign-language versions of the site look broken",
    ),
    (
        "orders-pagination",
        "api",
        ["api", "bug"],
        {
            "fact": "The orders endpoint paginates with offset and limit, default 50.",
            "task": "Switch the orders endpoint to cursor pagination.",
            "note": "A partner reported missing orders when paging during heavy writes.",
            "episode": "Offset paging skipped rows when new orders were inserted between page requests.",
            "skill": "Use a stable cursor on (created, id) so inserts cannot shift pages.",
        },
        "orders endpoint pagination cursor",
        "a client walking through purchases in chunks misses a few of them",
    ),
    (
        "dashboard-slow-query",
        "analytics",
        ["db", "performance"],
        {
            "fact": "The merchant dashboard runs twelve queries per page load.",
            "task": "Add a composite index on (merchant_id, created) to the payments table.",
            "note": "Dashboard p95 load time is 9 seconds for large merchants.",
            "episode": "EXPLAIN showed a sequential scan of 40M payments rows for the revenue chart.",
            "skill": "Run EXPLAIN ANALYZE on the slowest query before adding any index.",
        },
        "slow dashboard query index",
        "big sellers wait ages for their statistics screen to appear",
    ),
    (
        "webhook-signatures",
        "payments",
        ["security", "webhooks"],
        {
            "fact": "Provider webhooks are signed with HMAC-SHA256 over the raw request body.",
            "task": "Reject webhooks older than five minutes to stop replays.",
            "episode": "Signature checks failed after a framework upgrade parsed the body before verification.",
            "skill": "Verify webhook signatures on the raw bytes, before any JSON parsing.",
        },
        "webhook signature verification",
        "how do we know incoming callbacks really come from the card company",
    ),
    (
        "password-reset",
        "auth",
        ["auth", "security"],
        {
            "fact": "Password reset tokens expire after 30 minutes and work once.",
            "task": "Invalidate outstanding reset tokens when the email address changes.",
            "note": "Support sees reset links reported as expired by users on slow mail servers.",
            "episode": "A reset token stayed valid after use because the flag was set in a rolled-back transaction.",
        },
        "password reset token expiry",
        "the message to recover a forgotten login claims it has lapsed",
    ),
    (
        "sso-clock-skew",
        "auth",
        ["auth", "sso"],
        {
            "fact": "SAML assertions are rejected when the clocks differ by more than two minutes.",
            "task": "Allow 90 seconds of clock skew in SAML validation.",
            "note": "Enterprise customer Globex cannot sign in through their identity provider.",
            "episode": "Globex's identity provider clock ran three minutes fast, so every SAML assertion looked expired.",
            "skill": "Log the assertion NotBefore and NotOnOrAfter with server time when SSO fails.",
        },
        "SAML SSO clock skew",
        "a corporate client's staff are refused entry via the company portal",
    ),
    (
        "invoice-pdf-fonts",
        "billing",
        ["billing", "pdf"],
        {
            "fact": "Invoice PDFs are rendered with WeasyPrint on the billing workers.",
            "task": "Embed a font with Cyrillic glyphs in the invoice template.",
            "note": "Russian customer names show as empty boxes on invoices.",
            "skill": "Ship fonts with the template and reference them by file path, never by system name.",
        },
        "invoice PDF font glyphs",
        "people whose surname uses a non-Latin alphabet see squares on receipts we send",
    ),
    (
        "vat-by-region",
        "billing",
        ["tax", "billing"],
        {
            "fact": "EU VAT is charged at the buyer's country rate for digital goods.",
            "task": "Update the VAT table for the Irish rate change in January.",
            "note": "Accountant asked for a report of VAT collected per country.",
            "episode": "A stale VAT table charged Irish buyers the old rate for two weeks.",
            "skill": "Keep tax rates in dated rows so a rate change is data, not a deploy.",
        },
        "EU VAT rate table",
        "shoppers in one EU member state paid an outdated levy percentage",
    ),
    (
        "upload-limits",
        "media",
        ["uploads", "media"],
        {
            "fact": "Product photos are limited to 10 MB and 4000 pixels on the long side.",
            "task": "Show the upload limit before the file picker opens.",
            "note": "Merchants complain uploads fail silently for large photos.",
            "skill": "Resize oversized photos in the browser before uploading.",
        },
        "photo upload size limit",
        "sellers cannot attach big pictures and get no explanation",
    ),
    (
        "queue-backlog",
        "worker",
        ["queue", "performance"],
        {
            "fact": "The fulfilment queue is consumed by eight workers with prefetch 20.",
            "task": "Autoscale fulfilment consumers on queue depth.",
            "note": "Queue depth alert fired at 50k messages on Friday evening.",
            "episode": "One poison message was redelivered forever and stalled a consumer.",
            "skill": "Send messages that fail three times to a dead-letter queue with the error attached.",
            "growth": "I look at consumer lag before blaming the producers.",
        },
        "queue backlog consumer lag",
        "jobs pile up and shipments go out hours late",
    ),
    (
        "branch-hygiene",
        "team",
        ["git", "process"],
        {
            "fact": "Branches are deleted automatically after their pull request merges.",
            "task": "Archive the 300 stale branches older than six months.",
            "note": "Nobody knows who owns the release-hotfix branches from last year.",
            "growth": "I rebase small branches daily instead of merging main into them.",
        },
        "stale git branches cleanup",
        "our repository is littered with forgotten work in progress",
    ),
    (
        "onboarding-docs",
        "team",
        ["docs", "onboarding"],
        {
            "fact": "New engineers get a buddy and a starter ticket in week one.",
            "task": "Update the onboarding guide for the new laptop setup script.",
            "note": "Two new hires lost a day because the setup guide pointed at a retired VPN.",
            "growth": "I write down every setup problem I hit, for the next person.",
        },
        "onboarding guide new hires setup",
        "what does a recently joined colleague need on their first morning",
    ),
    (
        "ab-test-peeking",
        "analytics",
        ["experiments", "stats"],
        {
            "fact": "Experiments run for a fixed two weeks, decided before launch.",
            "task": "Add a sequential testing correction to the experiment dashboard.",
            "note": "Marketing wants to stop the banner experiment early because it looks like a win.",
            "episode": "Stopping the pricing experiment on day three picked a variant that lost over the full period.",
            "skill": "Fix the sample size up front and only read significance at the planned end.",
        },
        "stop experiment early peeking",
        "can we call the winner of a split trial after just a few days",
    ),
    (
        "fraud-false-positives",
        "payments",
        ["fraud", "risk"],
        {
            "fact": "Orders with a fraud score above 80 are held for manual review.",
            "task": "Lower the weight of the new-device signal in the fraud score.",
            "note": "Review queue has 600 held orders, mostly genuine returning customers.",
            "episode": "A rule change flagged every order from a new phone and held 2,000 genuine orders.",
            "skill": "Backtest a fraud rule on last month's labelled orders before enabling it.",
        },
        "fraud rule false positives",
        "honest shoppers keep getting blocked by our scam filter",
    ),
    (
        "tls-renewal",
        "infra",
        ["tls", "dns"],
        {
            "fact": "Certificates are renewed automatically 30 days before expiry.",
            "task": "Move the legacy status page certificate to automatic renewal.",
            "note": "Status page certificate expires in eleven days.",
            "episode": "The status page went dark because its manually issued certificate expired.",
            "skill": "Alert on certificate expiry at 21 and 7 days for every public hostname.",
        },
        "certificate expiry renewal",
        "browsers warned visitors that our site was unsafe",
    ),
    (
        "carrier-outage",
        "fulfillment",
        ["shipping", "outage"],
        {
            "fact": "Shipping labels come from the carrier API with a 5 second timeout.",
            "task": "Queue label requests and retry when the carrier API is down.",
            "note": "Carrier API returned 503 for an hour on Wednesday morning.",
            "episode": "During the carrier outage, warehouse staff hand-wrote 300 labels.",
            "skill": "Wrap third-party calls in a circuit breaker with a queued fallback.",
        },
        "carrier API outage labels",
        "the parcel company's service collapsed and packages could not be dispatched",
    ),
    (
        "oversell",
        "catalog",
        ["inventory", "bug"],
        {
            "fact": "Stock is decremented when payment captures, not when the cart is created.",
            "task": "Reserve stock for ten minutes when checkout starts.",
            "note": "We sold 25 more units of the limited sneaker than we had.",
            "episode": "Two warehouses reported the same units, doubling available stock for a day.",
            "growth": "I question every number that two systems both claim to own.",
        },
        "inventory oversell stock reservation",
        "we took money for goods that were already gone",
    ),
    (
        "push-opt-in",
        "mobile",
        ["mobile", "notifications"],
        {
            "fact": "Only 31% of iOS users allow push notifications.",
            "task": "Ask for push permission after the first order, not at install.",
            "note": "Growth team wants a pre-permission screen explaining order updates.",
            "skill": "Ask for a permission at the moment its value is obvious to the user.",
        },
        "push notification permission prompt",
        "few iPhone owners agree to receive alerts from us",
    ),
    (
        "python-upgrade",
        "platform",
        ["python", "upgrade"],
        {
            "fact": "Services run Python 3.10; 3.12 is approved for new services.",
            "task": "Move the worker service to Python 3.12 and rerun the benchmarks.",
            "episode": "The 3.12 upgrade of the API failed on a C extension that had no wheel yet.",
            "skill": "Check every compiled dependency for wheels of the target interpreter before upgrading.",
            "growth": "I read the changelog of the interpreter before an upgrade, not after a failure.",
        },
        "Python 3.12 upgrade wheels",
        "switching our language runtime to its latest release",
    ),
    (
        "public-api-abuse",
        "api",
        ["api", "abuse"],
        {
            "fact": "The public API allows 600 requests per minute per key.",
            "task": "Add per-key throttling to the product search endpoint.",
            "note": "One key made 2 million product search calls on Sunday, scraping prices.",
            "episode": "A scraper hammered the search endpoint until the database fell over.",
            "skill": "Throttle by key with a token bucket and return 429 with Retry-After.",
        },
        "API throttling per key scraping",
        "a bot copying our catalogue is overwhelming the servers",
    ),
    (
        "etl-duplicates",
        "pipeline",
        ["etl", "idempotency"],
        {
            "fact": "The nightly ETL job loads yesterday's orders into the warehouse.",
            "task": "Make the nightly ETL load idempotent with a delete-then-insert per day.",
            "note": "Revenue in the warehouse was double for 12 March.",
            "episode": "The scheduler retried a timed-out ETL run and loaded the same day twice.",
            "skill": "Key every load by partition date so a rerun replaces rather than appends.",
            "growth": "I design every batch job assuming it will run twice.",
        },
        "nightly ETL duplicate rows rerun",
        "analysts saw figures counted two times after a hiccup in overnight processing",
    ),
    (
        "support-macros",
        "support",
        ["support", "process"],
        {
            "fact": "Support agents answer 70% of tickets with saved reply macros.",
            "task": "Update the shipping delay macro with the new carrier cut-off times.",
            "note": "Agents asked for a macro explaining partial refunds.",
            "skill": "Write macros with placeholders for order number and customer name.",
        },
        "support reply macros tickets",
        "canned responses our helpdesk staff paste for common questions",
    ),
    (
        "storage-lifecycle",
        "infra",
        ["storage", "cost"],
        {
            "fact": "Raw upload originals are kept forever in the standard storage class.",
            "task": "Add a lifecycle rule moving originals to archive storage after 90 days.",
            "note": "Object storage is the second largest line on the cloud bill.",
            "skill": "Tag buckets with an owner and a retention period when creating them.",
        },
        "storage lifecycle archive originals",
        "files nobody opens anymore are costing us a fortune each month",
    ),
    (
        "code-style-preference",
        "assistant",
        ["preferences", "python"],
        {
            "fact": "The user wants Python code with type hints, formatted with ruff.",
            "note": "User rejected a patch because it mixed tabs and spaces.",
            "episode": "The user rewrote my untyped helper functions by hand last sprint.",
            "growth": "I run the formatter and type checker before proposing code.",
        },
        "Python type hints ruff formatting",
        "what conventions does this person expect in programs I write for them",
    ),
    (
        "log-retention",
        "privacy",
        ["privacy", "logging"],
        {
            "fact": "Application logs containing IP addresses are deleted after 30 days.",
            "task": "Mask IP addresses in access logs before they are shipped to the log store.",
            "note": "The privacy review found IP addresses in debug logs kept for a year.",
            "skill": "Scrub personal data at the logger, not in the log pipeline.",
        },
        "IP addresses in logs retention",
        "how long may we keep records that identify visitors' network location",
    ),
]

CORRECTIONS = [
    "Never claim a file was written or a test passed without reading the tool output that proves it.",
    "Do not force-push to main or any shared branch; open a pull request instead.",
    "Ask before running database migrations against staging; the user owns that step.",
    "Quote amounts in integer cents in checkout code; never use floats for money.",
    "When a test is flaky, report it as flaky; never mark it skipped to get a green run.",
    "Do not paste secrets or tokens into chat, logs or commit messages.",
    "Never deploy on Friday afternoon without the on-call engineer's agreement.",
    "Do not email customers directly; draft the message for support to send.",
    "Keep answers short: result first, then details if asked.",
    "Never delete a branch you did not create.",
]

# Templates for the unrelated bulk of a store: many fresh, high-priority notes.
PEOPLE = ["Ana", "Bo", "Chen", "Dara", "Eli", "Farah", "Gus", "Hana", "Ivo", "Jun"]
ACTIVITIES = [
    "on holiday until Thursday",
    "pairing with the design team on the new header",
    "interviewing backend candidates this week",
    "out sick today",
    "moving desks to the third floor",
    "presenting at the internal demo day",
    "working from the Lisbon office",
    "preparing the quarterly planning slides",
]
MEETINGS = [
    "Planning meeting moved to Wednesday 14:00.",
    "Retro notes: celebrate the quiet week, keep the Friday demo.",
    "Coffee machine on floor two is fixed.",
    "All-hands on Thursday covers the new office plan.",
    "Design review for the loyalty page is next Tuesday.",
    "Offsite dates confirmed for the second week of March.",
    "The team lunch budget resets at the start of each quarter.",
    "Demo day sign-up sheet is open until Monday.",
    "Parking permits for next year are available from reception.",
    "Quarterly goals draft is in the shared folder for comments.",
    "Fire drill on Wednesday at 11:00; meet outside the main entrance.",
    "New monitors arrive next week for the second floor.",
    "Book club picks a novel for November.",
    "Bike storage moved to the basement.",
]
FILLER_FACTS = [
    "The company wiki moved to a new domain in June.",
    "Office wifi password rotates on the first day of each month.",
    "Expense reports are due by the fifth working day.",
    "The design system uses an eight pixel spacing grid.",
    "Team calendar invites come from the shared scheduling account.",
    "Holiday requests go through the HR portal, two weeks ahead.",
]

PRIORITY = {"note": 7, "fact": 6, "episode": 5, "skill": 3, "growth": 2}
TYPES_ORDER = ["fact", "task", "note", "episode", "skill", "growth"]


def stamp(rnd: random.Random, max_days: int) -> str:
    moment = NOW - datetime.timedelta(days=rnd.uniform(0, max_days), seconds=rnd.randint(0, 86399))
    return moment.replace(microsecond=0).isoformat() + "Z"


def build() -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    rnd = random.Random(2026)
    problems: List[str] = []
    entries: List[Dict[str, Any]] = []
    queries: List[Dict[str, Any]] = []
    for number, text in enumerate(CORRECTIONS, 1):
        entries.append(
            {
                "id": "fix-%02d" % number,
                "type": "correction",
                "scope": "always",
                "content": text,
                "created": stamp(rnd, 200),
                "base_priority": 10,
                "source": "user-feedback",
            }
        )
    for key, project, tags, texts, keyword, paraphrase in TOPICS:
        ids = []
        for kind in TYPES_ORDER:
            text = texts.get(kind)
            if text is None:
                continue
            entry_id = "%s-%s" % (key, kind)
            ids.append(entry_id)
            entries.append(
                {
                    "id": entry_id,
                    "type": kind,
                    "content": text,
                    "tags": tags,
                    "project": project,
                    "created": stamp(rnd, 150),
                    "base_priority": rnd.randint(5, 9) if kind == "task" else PRIORITY[kind],
                    "source": "session",
                }
            )
        relevant = [texts[k] for k in TYPES_ORDER if k in texts]
        overlap = shared_content(paraphrase, relevant)
        if overlap:
            problems.append("paraphrase of %r shares %s with its entries: rewrite it" % (key, overlap))
        queries.append({"id": "%s-para" % key, "message": paraphrase, "paraphrase": True, "relevant": ids})
        if keyword is not None:
            if not shared_content(keyword, relevant):
                problems.append("keyword query of %r shares no word with its entries" % key)
            queries.append({"id": "%s-kw" % key, "message": keyword, "paraphrase": False, "relevant": ids})
    if problems:
        sys.exit("\n".join(problems))
    filler = [("note", "%s is %s." % (p, a)) for p in PEOPLE for a in rnd.sample(ACTIVITIES, 4)]
    filler += [("note", m) for m in MEETINGS] + [("fact", f) for f in FILLER_FACTS]
    for number, (kind, text) in enumerate(filler, 1):
        entries.append(
            {
                "id": "misc-%03d" % number,
                "type": kind,
                "content": text,
                "tags": ["team"],
                "project": None,
                "created": stamp(rnd, 30),  # fresh: the bulk that crowds a single budget
                "base_priority": PRIORITY[kind],
                "source": "standup",
            }
        )
    return entries, queries


def main() -> None:
    entries, queries = build()
    with ENTRIES.open("w", encoding="utf-8") as handle:
        for entry in entries:
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    with QUERIES.open("w", encoding="utf-8") as handle:
        for query in queries:
            handle.write(json.dumps(query, ensure_ascii=False) + "\n")
    paraphrases = sum(q["paraphrase"] for q in queries)
    print("%d entries, %d queries (%d paraphrases)" % (len(entries), len(queries), paraphrases))


if __name__ == "__main__":
    main()
