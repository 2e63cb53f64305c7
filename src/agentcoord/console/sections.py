"""What each part of the daemon shows in the console, registered once at start-up."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentcoord.daemon.app import App

__all__ = ["install_sections"]


def install_sections(app: App) -> None:
    """Register the console sections and the prompt answerer for the parts ``app`` has."""
    messaging = app.messaging
    if messaging is not None:
        from agentcoord.tools.humans import answer_prompt

        async def prompts() -> list[dict[str, Any]]:
            return [
                {
                    "id": p.id,
                    "kind": p.kind,
                    "from": p.agent,
                    "question": p.question,
                    "context": p.context,
                    "choices": p.choices,
                    "since": p.created_at,
                }
                for p in await messaging.prompts.list(open_only=True)
            ]

        async def channels() -> list[dict[str, Any]]:
            now = time.time()
            return [c.view(now) for c in await messaging.channels.list()]

        async def waits() -> list[dict[str, Any]]:
            out = [
                {"waiter": p.agent, "on": "you", "kind": f"prompt {p.id}", "since": p.created_at}
                for p in await messaging.prompts.list(open_only=True)
            ]
            out.extend(
                {"waiter": o.from_agent, "on": o.to_agent, "kind": f"handoff {o.task}"}
                for o in messaging.offers.pending()
            )
            return out

        async def answer(prompt_id: str, value: Any, by: str) -> None:
            await answer_prompt(messaging, prompt_id, str(value), by)

        app.console_sections.update(prompts=prompts, channels=channels, waits=waits)
        app.prompt_answerer = answer
