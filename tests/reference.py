"""A straightforward implementation of the poolsplit spec (seed 001).

Written directly from the spec's numbered steps with no caching and no
shortcuts: every pool re-filters and re-scores the whole store. It is the
baseline the benchmarks measure against and the oracle the differential tests
compare every fast path with. It deliberately does no input validation.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, List, Optional, Sequence

STOP = frozenset(
    """the and for are but not you all can her was one our out day has had his
    how man new now old see two way who did its let put say she too use that
    this with from they them then than have will your what when were been into
    some more very just over only""".split()
)


def words(text: str) -> frozenset:
    return frozenset(w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in STOP)


def age_days(created: str, now: datetime.datetime) -> float:
    if not created:
        return 0.0
    try:
        stamp = datetime.datetime.fromisoformat(created.rstrip("Z"))
    except ValueError:
        return 0.0
    stamp = stamp.replace(tzinfo=None)
    return max(0.0, (now.replace(tzinfo=None) - stamp).total_seconds() / 86400.0)


def score(entry: Dict[str, Any], context: Optional[Dict[str, Any]], now: Optional[datetime.datetime]) -> float:
    context = context or {}
    now = now or datetime.datetime.now(datetime.timezone.utc)
    value = float(entry.get("base_priority", 5))
    value *= max(0.3, 1.0 - (age_days(entry.get("created") or "", now) / 90.0) * 0.7)
    tags = set(entry.get("tags") or [])
    if tags:
        value *= 1.0 + (len(tags & set(context.get("tags") or [])) / len(tags)) * 0.5
    project = entry.get("project")
    if project is not None:
        value *= 1.5 if project == context.get("project") else 0.5
    message = context.get("message") or ""
    if message:
        asked = words(message)
        have = words(str(entry.get("content", "")))
        if asked and have:
            overlap = len(asked & have) / len(asked)
            if overlap > 0.15:
                value *= 1.0 + overlap * 1.5
    return value


def relevance(entry: Dict[str, Any], context: Optional[Dict[str, Any]]) -> float:
    """The share of the message's significant words in the content: what
    ``Pool.min_relevance`` compares for the default scorer."""
    asked = words((context or {}).get("message") or "")
    if not asked:
        return 0.0
    return len(asked & words(str(entry.get("content", "")))) / len(asked)


def cost(entry: Dict[str, Any]) -> int:
    count = entry.get("token_count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return count
    return max(1, len(str(entry.get("content", ""))) // 4)


def active(entry: Dict[str, Any]) -> bool:
    return entry.get("status", "active") == "active" and not entry.get("superseded_by")


def fill(
    entries: Sequence[Dict[str, Any]], pool: Any, context: Any, now: Any, scorer: Any = None
) -> List[Dict[str, Any]]:
    custom = scorer
    scorer = scorer or (lambda e, c, now=None: score(e, c, now))
    live = [e for e in entries if active(e)]
    if pool.types is not None:
        live = [e for e in live if e.get("type", "note") in pool.types]
    out = [e for e in live if e.get("scope") == "always"]
    rest = [e for e in live if e.get("scope") != "always"]
    threshold = getattr(pool, "min_relevance", None)
    if threshold is not None:
        # A plain scorer function has no separate relevance: its score is.
        if custom is None:
            rest = [e for e in rest if relevance(e, context) >= threshold]
        else:
            rest = [e for e in rest if custom(e, context, now=now) >= threshold]
    ranked = sorted(
        (-scorer(e, context, now=now), e.get("created") or "", e.get("id") or "", n, e) for n, e in enumerate(rest)
    )
    used = taken = 0
    for row in ranked:
        if taken >= pool.max_entries:
            break
        c = cost(row[4])
        if used + c > pool.max_tokens:
            continue
        out.append(row[4])
        used += c
        taken += 1
    return out


def fill_pools(
    entries: Sequence[Dict[str, Any]], pools: Sequence[Any], context: Any = None, now: Any = None, scorer: Any = None
) -> Dict[str, List[Dict[str, Any]]]:
    names = [p.name for p in pools]
    if len(set(names)) != len(names):
        raise ValueError("duplicate pool name")
    claimed: set = set()
    out: Dict[str, List[Dict[str, Any]]] = {}
    for pool in pools:
        got = fill([e for e in entries if id(e) not in claimed], pool, context, now, scorer)
        out[pool.name] = got
        claimed.update(id(e) for e in got)
    return out
