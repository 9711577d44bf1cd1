"""The memory lifecycle around the selector (seed 002), framework-neutral.

Recall and promote are the selector's job; this room holds the other half of
the loop: which turns stay in the working set (:mod:`.working_set`) and what
may be written to long-term memory (:mod:`.write_gate`).
"""

from .working_set import Demotion, Turn, View, plan_demotion, split_turns
from .write_gate import GateReport, Proposal, Refusal, WriteGate, utc_stamp

__all__ = [
    "Demotion",
    "GateReport",
    "Proposal",
    "Refusal",
    "Turn",
    "View",
    "WriteGate",
    "plan_demotion",
    "split_turns",
    "utc_stamp",
]
