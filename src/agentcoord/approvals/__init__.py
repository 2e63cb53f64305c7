"""Standing approvals: the human answers a permission question once for every session that
would ask it (docs/approvals.md)."""

from __future__ import annotations

from agentcoord.approvals.rules import Request, Rule, allows, forbids, parse_rule
from agentcoord.approvals.standing import DEFAULT_FOR, Approvals, Decision, input_summary

__all__ = [
    "DEFAULT_FOR",
    "Approvals",
    "Decision",
    "Request",
    "Rule",
    "allows",
    "forbids",
    "input_summary",
    "parse_rule",
]
