"""The one override of a claim check: set in a commit's environment, the pre-commit hook lets
the commit through without asking (docs/claims.md "Commit guard")."""

from __future__ import annotations

__all__ = ["ALLOW_ENV"]

ALLOW_ENV = "AGENTCOORD_ALLOW_CLAIMED"
