"""The paraphrase case both adapters' wiring tests share (framework-neutral).

With the spec's ``default_scorer`` the fresher note wins: the episode shares
one of the question's seven significant words ("totals", 1/7 = 0.14), under
the 0.15 overlap threshold, so only recency counts. The adapters' default
(``RelevanceScorer``) stems both texts: the episode holds the question's
stems refund, round and total, the note none of them (relevance 0), so the
episode wins on words alone; hashed n-grams see "refund"/"refunded",
"rounding"/"rounded", so an embedding ranks the episode first as well."""

from __future__ import annotations

import datetime
from typing import Dict, List, Tuple

JULY = datetime.datetime(2026, 7, 7, 12)
QUESTION = "fix the refund rounding bug in the totals report for finance"
# (id, text, metadata): the id is also the entry's type.
PARAPHRASE: List[Tuple[str, str, Dict[str, str]]] = [
    ("note", "Checkout review: use the preview URL", {"created": "2026-07-06T00:00:00Z"}),
    ("episode", "Refunded totals were rounded wrong in October", {"created": "2026-06-25T00:00:00Z"}),
]
