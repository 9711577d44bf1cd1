"""Token metrics: what a selection cost per layer, and what loading every
selected entry in full would have cost (seed 003's ``TokenMetrics``).

The savings figure is what makes progressive loading accountable: a host can
see, per call, how many tokens summaries saved against the same entries in
full, and tune budgets from measurements rather than guesses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable

__all__ = ["LAYERS", "TokenMetrics", "token_metrics"]

#: The three layers in load order: seed 003's index (summary), timeline and
#: full-content layers.
LAYERS = ("summary", "timeline", "full")


@dataclass(frozen=True)
class TokenMetrics:
    """Tokens that reached the model, per layer, against the full-text cost
    of the same entries.

    Attributes:
        summary_tokens: tokens of entries loaded as their summary (layer 1).
        timeline_tokens: tokens of entries loaded as timeline lines (layer 2).
        full_tokens: tokens of entries loaded in full (layer 3), always-scope
            entries included (they always load in full).
        baseline_tokens: what the same entries cost if every one were loaded
            in full.
        summary_entries, timeline_entries, full_entries: how many entries
            loaded at each layer.

    Example:
        ```python
        metrics = token_metrics(selection.chosen)
        metrics.total_tokens, metrics.savings_percent   # (412, 37.5)
        ```
    """

    summary_tokens: int = 0
    timeline_tokens: int = 0
    full_tokens: int = 0
    baseline_tokens: int = 0
    summary_entries: int = 0
    timeline_entries: int = 0
    full_entries: int = 0

    @property
    def total_tokens(self) -> int:
        """Tokens that reached the model, all layers together."""
        return self.summary_tokens + self.timeline_tokens + self.full_tokens

    @property
    def saved_tokens(self) -> int:
        return self.baseline_tokens - self.total_tokens

    @property
    def savings_percent(self) -> float:
        """Share of `baseline_tokens` not spent, in percent (0.0 when
        nothing loaded)."""
        if not self.baseline_tokens:
            return 0.0
        return 100.0 * self.saved_tokens / self.baseline_tokens

    def tokens_by_layer(self) -> Dict[str, int]:
        return {"summary": self.summary_tokens, "timeline": self.timeline_tokens, "full": self.full_tokens}

    def entries_by_layer(self) -> Dict[str, int]:
        return {"summary": self.summary_entries, "timeline": self.timeline_entries, "full": self.full_entries}

    def to_dict(self) -> Dict[str, Any]:
        """The JSON form (reports, CLI ``--json``, framework events)."""
        return {
            "tokens_by_layer": self.tokens_by_layer(),
            "entries_by_layer": self.entries_by_layer(),
            "total_tokens": self.total_tokens,
            "baseline_tokens": self.baseline_tokens,
            "savings_percent": round(self.savings_percent, 2),
        }

    def __str__(self) -> str:
        """One line in plain words. A selection that loaded every entry in
        full (every plain one) says so and nothing more: its layers and a
        0.0% saving would be numbers with nothing to tell. Otherwise the
        tokens of each layer that was used, against the same entries in
        full, and the share saved."""
        if not self.summary_entries and not self.timeline_entries:
            return "tokens: %d, every entry in full text" % self.total_tokens
        used = [
            "%s %d" % (name, tokens)
            for name, tokens, entries in (
                ("summaries", self.summary_tokens, self.summary_entries),
                ("timeline lines", self.timeline_tokens, self.timeline_entries),
                ("full text", self.full_tokens, self.full_entries),
            )
            if entries
        ]
        return "tokens: %d (%s) against %d with every entry in full text: %.1f%% saved" % (
            self.total_tokens,
            ", ".join(used),
            self.baseline_tokens,
            self.savings_percent,
        )


def token_metrics(chosen: Iterable[Any], *, include_always: bool = True) -> TokenMetrics:
    """Metrics of selected entries (``Selection.chosen`` of a plain or a
    progressive selection).

    Reads each item's ``layer`` ("full" when absent: a plain selection loads
    everything in full, and saves 0%), ``cost`` (tokens of the loaded layer)
    and ``full_cost`` (tokens in full; ``cost`` when absent). With
    ``include_always=False`` the always-scope entries are left out, which
    shows the savings on the contextual entries alone.
    """
    tokens = dict.fromkeys(LAYERS, 0)
    counts = dict.fromkeys(LAYERS, 0)
    baseline = 0
    for item in chosen:
        if not include_always and getattr(item, "always", False):
            continue
        layer = str(getattr(item, "layer", "full"))  # a Layer (its str is its value) or a plain string
        if layer not in tokens:
            raise ValueError("unknown layer %r (layers: %s)" % (layer, ", ".join(LAYERS)))
        cost = int(item.cost)
        tokens[layer] += cost
        counts[layer] += 1
        baseline += int(getattr(item, "full_cost", cost))
    return TokenMetrics(
        summary_tokens=tokens["summary"],
        timeline_tokens=tokens["timeline"],
        full_tokens=tokens["full"],
        baseline_tokens=baseline,
        summary_entries=counts["summary"],
        timeline_entries=counts["timeline"],
        full_entries=counts["full"],
    )
