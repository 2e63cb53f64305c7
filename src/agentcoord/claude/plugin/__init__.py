"""The agentcoord plugin for Claude Code: the ``agent-coord`` MCP server, the session hooks
and the ``coordination`` skill, in a local marketplace (docs/plugin.md "What it installs").

:func:`write_plugin` generates the marketplace and the plugin into a directory (the commands
name this install's ``agentcoord``); :func:`install_plugin` and :func:`remove_plugin` run the
real ``claude plugin`` commands behind ``agentcoord setup claude --plugin [--remove]``.
"""

from __future__ import annotations

from agentcoord.claude.plugin._generate import (
    MARKETPLACE_NAME,
    PLUGIN_ID,
    PLUGIN_NAME,
    SKILLS,
    agentcoord_command,
    hooks_config,
    marketplace_manifest,
    plugin_manifest,
    skill_text,
    write_plugin,
)
from agentcoord.claude.plugin._install import (
    PluginReport,
    install_plugin,
    plugin_home,
    remove_plugin,
    set_up_directly,
)

__all__ = [
    "MARKETPLACE_NAME",
    "PLUGIN_ID",
    "PLUGIN_NAME",
    "SKILLS",
    "PluginReport",
    "agentcoord_command",
    "hooks_config",
    "install_plugin",
    "marketplace_manifest",
    "plugin_home",
    "plugin_manifest",
    "remove_plugin",
    "set_up_directly",
    "skill_text",
    "write_plugin",
]
