"""The paraphrase case both adapters' wiring tests share (framework-neutral):
lexically the fresher note wins (one shared word is under the overlap
threshold); hashed n-grams see "refund"/"refunded", "rounding"/"rounded", so
an embedding ranks the episode first."""

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
