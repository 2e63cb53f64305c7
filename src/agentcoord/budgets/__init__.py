"""Budgets across sessions: ceilings on concurrent sessions, started agents and spend
(docs/budgets.md)."""

from __future__ import annotations

from agentcoord.budgets.ceilings import Ceilings, Usage, over_ceiling
from agentcoord.budgets.usage import Budgets

__all__ = ["Budgets", "Ceilings", "Usage", "over_ceiling"]
