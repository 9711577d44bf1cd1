"""The fill's two seams under their 0.3 home: every name here is the core's own object
(`poolsplit_adapters.poolsplit`: ``Candidates``, ``Counting``, ``Layering`` and the tuples they pass)."""

from __future__ import annotations

from .poolsplit import Candidates, Counting, Filled, Layering, Left, Pick

__all__ = ["Candidates", "Counting", "Layering", "Pick", "Filled", "Left"]
