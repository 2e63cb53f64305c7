"""``python -m agentcoord`` is the same as the ``agentcoord`` command."""

from __future__ import annotations

from agentcoord.cli.main import main

raise SystemExit(main())
