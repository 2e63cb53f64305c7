"""``python -m agentcoord`` is the same as the ``agentcoord`` command."""

from __future__ import annotations

from agentcoord.cli import main

raise SystemExit(main())
