"""``agentcoord top``: the terminal view of who waits on you, the agents, claims and approvals,
live, with keys to act (docs/top.md). Built with Textual (docs/top.md "Why Textual").

It reads the daemon as the human every second (:func:`agentcoord.cli.topview.fetch`, in a
worker thread) and acts through the same calls as the CLI: ``answer_prompt``, and the
``agentcoord/approvals`` method for grants and revokes.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, Label, Static

from agentcoord.approvals.fromprompt import state_rule
from agentcoord.cli.topview import (
    Snapshot,
    WaitRow,
    agent_rows,
    approval_rows,
    budget_line,
    claim_rows,
    conflict_rows,
    fetch,
    waiting_rows,
)

__all__ = ["TopApp", "run_top"]

REFRESH_S = 1.0


class Ask(ModalScreen[str | None]):
    """One line of input over the view: Enter gives it, Escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    Ask { align: center middle; }
    Ask > Vertical { width: 80%; height: auto; border: round $accent; padding: 1 2; }
    """

    def __init__(self, question: str, placeholder: str = "", value: str = "") -> None:
        super().__init__()
        self._question = question
        self._placeholder = placeholder
        self._value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._question)
            # A suggested value is kept and added to, not replaced by the first key typed.
            yield Input(
                value=self._value,
                placeholder=self._placeholder,
                select_on_focus=False,
                id="answer",
            )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Detail(ModalScreen[None]):
    """An agent's detail: its row as the daemon gives it, and the claims it holds."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "close"),
        Binding("q", "close", "close"),
    ]
    DEFAULT_CSS = """
    Detail { align: center middle; }
    Detail > Vertical { width: 90%; height: 90%; border: round $accent; padding: 1 2; }
    """

    def __init__(self, text: str) -> None:
        super().__init__()
        self._text = text

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self._text, id="detail")

    def action_close(self) -> None:
        self.dismiss(None)


class TopApp(App[None]):
    """The view: four tables, refreshed every second."""

    TITLE = "agentcoord top"
    CSS = """
    DataTable { height: auto; max-height: 16; margin-bottom: 1; }
    .title { text-style: bold; color: $accent; }
    #status { color: $text-muted; }
    #message { color: $warning; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "answer", "answer prompt"),
        Binding("g", "grant", "grant a rule"),
        Binding("x", "revoke", "revoke approval"),
        Binding("d", "detail", "agent detail"),
        Binding("r", "refresh", "refresh"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self._cfg = cfg
        self._snap = Snapshot()
        self._waits: list[WaitRow] = []

    def compose(self) -> ComposeResult:
        yield Static("", id="status")
        yield Static("", id="message")
        yield Label("Waiting on you", classes="title")
        yield DataTable(id="waiting", cursor_type="row")
        yield Label("Agents", classes="title")
        yield DataTable(id="agents", cursor_type="row")
        yield Label("Claims", classes="title")
        yield DataTable(id="claims", cursor_type="row")
        yield Label("Conflicts between worktrees", classes="title")
        yield DataTable(id="conflicts", cursor_type="row")
        yield Label("Standing approvals", classes="title")
        yield DataTable(id="approvals", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        for table, columns in (
            ("waiting", ("kind", "who", "what", "for")),
            ("agents", ("agent", "state", "kind", "focus")),
            ("claims", ("key", "holder", "mode", "expires in", "others' focus")),
            ("conflicts", ("repository", "worktrees", "both change", "git says", "for")),
            ("approvals", ("id", "rule", "scope", "until", "uses")),
        ):
            self.query_one(f"#{table}", DataTable).add_columns(*columns)
        self.query_one("#waiting", DataTable).focus()
        self.set_interval(REFRESH_S, self.action_refresh)
        self.call_later(self.action_refresh)

    async def action_refresh(self) -> None:
        try:
            snap = await asyncio.to_thread(fetch, self._cfg)
        except Exception as exc:  # the daemon went away: say so, keep the last view
            self._say(f"cannot read the daemon: {exc}")
            return
        self._snap = snap
        self._show()

    def _status(self, text: str) -> None:
        self.query_one("#status", Static).update(text)

    def _say(self, text: str) -> None:
        """What the last key did (or why it did nothing); stays until the next one."""
        self.query_one("#message", Static).update(text)

    def _show(self) -> None:
        now = time.time()
        snap = self._snap
        self._waits = waiting_rows(snap)
        self._fill("waiting", [(w.key, w.cells(now)) for w in self._waits])
        self._fill("agents", [(r[0], r) for r in agent_rows(snap, now)])
        self._fill("claims", [(f"{r[0]}\0{r[1]}", r) for r in claim_rows(snap, now)])
        self._fill("conflicts", [(f"{r[0]}\0{r[1]}", r) for r in conflict_rows(snap, now)])
        self._fill("approvals", [(r[0], r) for r in approval_rows(snap)])
        live = sum(1 for a in snap.agents if a.get("phase") != "Ended")
        budgets = budget_line(snap.budgets)
        self._status(
            f"{live} agents, {len(self._waits)} waiting on you, {len(snap.claims)} claims, "
            f"{len(snap.conflicts)} conflicts, {len(snap.approvals)} standing approvals "
            f"(read {time.strftime('%H:%M:%S')})" + (f"\nbudgets: {budgets}" if budgets else "")
        )

    def _fill(self, table_id: str, rows: list[tuple[str, tuple[str, ...]]]) -> None:
        """Replace ``table_id``'s rows, keeping the cursor on the same key where it still is."""
        table = self.query_one(f"#{table_id}", DataTable)
        chosen = self._selected_key(table)
        table.clear()
        for key, cells in rows:
            table.add_row(*cells, key=key)
        keys = [key for key, _ in rows]
        if chosen in keys:
            table.move_cursor(row=keys.index(chosen))

    @staticmethod
    def _selected_key(table: DataTable[Any]) -> str | None:
        if table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:
            return None
        return str(key) if key is not None else None

    def _selected(self, table_id: str) -> str | None:
        return self._selected_key(self.query_one(f"#{table_id}", DataTable))

    # -- the keys -----------------------------------------------------------------------

    def action_answer(self) -> None:
        """Answer the prompt under the cursor in "Waiting on you"."""
        key = self._selected("waiting")
        held = {str(h.get("session")) for h in self._snap.held}
        session = next((w for w in self._waits if w.key == key and w.kind == "session"), None)
        if session is not None and session.who in held:
            self._answer_held(session)
            return
        wait = next((w for w in self._waits if w.key == key and w.kind == "prompt"), None)
        if wait is None:
            self._say(
                "select a prompt, or a session whose dialog is held for you, to answer it "
                "(any other dialog is answered in its session; g grants for its next call)"
            )
            return

        def answered(text: str | None) -> None:
            if text:
                self.run_worker(self._answer(wait.key, text), exclusive=False)

        self.push_screen(
            Ask(f"answer {wait.who}: {wait.what}", "yes / no / a choice / text"), answered
        )

    def _answer_held(self, wait: WaitRow) -> None:
        """Answer a held dialog "allow" or "deny" (docs/approvals.md "Answering an open
        dialog")."""

        def answered(text: str | None) -> None:
            if text:
                self.run_worker(self._held(wait.who, text), exclusive=False)

        self.push_screen(
            Ask(
                f"answer {wait.who}'s dialog (allow or deny): {wait.what}", "allow / deny", "allow"
            ),
            answered,
        )

    async def _held(self, session: str, verdict: str) -> None:
        from agentcoord.cli.allow import METHOD
        from agentcoord.client.rpc import call_unix
        from agentcoord.identity.humanproof import read_human_token

        params = {"op": "answer", "session": session, "answer": verdict.lower()}
        try:
            token = read_human_token(self._cfg.state_dir)
            await asyncio.to_thread(call_unix, self._cfg.socket_path, METHOD, params, token=token)
        except Exception as exc:
            self._say(f"not answered: {exc}")
            return
        self._say(f"answered {session}'s dialog: {verdict.lower()}")
        await self.action_refresh()

    async def _answer(self, prompt: str, text: str) -> None:
        from agentcoord.cli.views import answer_text, call_tool

        try:
            data, _ = await asyncio.to_thread(
                call_tool, self._cfg, "answer_prompt", {"prompt": prompt, "answer": text}
            )
        except Exception as exc:
            self._say(f"not answered: {exc}")
            return
        self._say(answer_text(data))
        await self.action_refresh()

    def action_grant(self) -> None:
        """Grant a standing approval; a waiting session's call is offered as the rule. It
        answers that session's dialog only when the dialog is held for the human; any other
        is answered in the session, and the rule covers its next such call (docs/top.md)."""
        key = self._selected("waiting")
        wait = next((w for w in self._waits if w.key == key and w.kind == "session"), None)
        suggestion = state_rule(wait.what.partition(" (held")[0]) if wait is not None else ""
        held = wait is not None and wait.who in {str(h.get("session")) for h in self._snap.held}
        if wait is not None and suggestion and not held:
            self._say(
                f"{wait.who}'s open dialog is answered in its session; "
                "the grant covers its next call"
            )

        def granted(text: str | None) -> None:
            if text:
                self.run_worker(self._grant(text), exclusive=False)

        self.push_screen(
            Ask(
                "allow a rule for every session: RULE [--repo DIR | --session NAME] [--for 1h]",
                "Bash(npm test:*) --for 1h",
                suggestion,
            ),
            granted,
        )

    async def _grant(self, line: str) -> None:
        from agentcoord.cli.allow import METHOD
        from agentcoord.client.rpc import call_unix
        from agentcoord.identity.humanproof import read_human_token

        try:
            params = _grant_params(line)
            token = read_human_token(self._cfg.state_dir)
            row = (
                await asyncio.to_thread(
                    call_unix, self._cfg.socket_path, METHOD, params, token=token
                )
            )["approval"]
        except Exception as exc:
            self._say(f"not granted: {exc}")
            return
        self._say(f"allowed {row['rule']} (id {row['id']})")
        await self.action_refresh()

    def action_revoke(self) -> None:
        """Revoke the approval under the cursor in "Standing approvals"."""
        key = self._selected("approvals")
        if key is None:
            self._say("select an approval in 'Standing approvals' to revoke it")
            return
        self.run_worker(self._revoke(key), exclusive=False)

    async def _revoke(self, approval_id: str) -> None:
        from agentcoord.cli.allow import METHOD
        from agentcoord.client.rpc import call_unix
        from agentcoord.identity.humanproof import read_human_token

        token = read_human_token(self._cfg.state_dir)
        params = {"op": "revoke", "id": approval_id}
        try:
            await asyncio.to_thread(call_unix, self._cfg.socket_path, METHOD, params, token=token)
        except Exception as exc:
            self._say(f"not revoked: {exc}")
            return
        self._say(f"revoked {approval_id}")
        await self.action_refresh()

    def action_detail(self) -> None:
        """Open the selected agent's detail (from "Agents", or a waiting session)."""
        focused = self.focused
        table_id = focused.id if isinstance(focused, DataTable) else "agents"
        key = self._selected(table_id or "agents")
        if table_id == "waiting":
            wait = next((w for w in self._waits if w.key == key), None)
            key = wait.who if wait is not None else None
        row = next((a for a in self._snap.agents if a.get("name") == key), None)
        if row is None:
            self._say("select an agent in 'Agents' (or a waiting session) for its detail")
            return
        self.push_screen(Detail(_detail_text(row, self._snap)))


def _grant_params(line: str) -> dict[str, Any]:
    """``RULE [--repo DIR | --session NAME] [--for D]`` as the approvals method's params."""
    import os
    import shlex

    # The rule may hold spaces (Bash(npm run test:*)): it is everything before the options.
    rule, sep, tail = line.strip().partition(" --")
    if not rule.strip():
        raise ValueError("give a rule")
    params: dict[str, Any] = {"op": "grant", "rule": rule.strip()}
    flags = {"--repo": "repo", "--session": "session", "--for": "duration"}
    rest = shlex.split("--" + tail) if sep else []
    while rest:
        flag = rest.pop(0)
        if flag not in flags or not rest:
            raise ValueError(f"unknown or incomplete option {flag!r} (--repo, --session, --for)")
        value = rest.pop(0)
        params[flags[flag]] = os.path.abspath(value) if flag == "--repo" else value
    return params


def _detail_text(row: dict[str, Any], snap: Snapshot) -> str:
    name = row.get("name")
    held = [c for c in snap.claims if c.get("agent") == name]
    lines = [f"{name}", ""]
    for key in ("state", "phase", "profile", "transport", "ended_at", "reason"):
        if row.get(key):
            lines.append(f"{key}: {row[key]}")
    focus = row.get("focus") or {}
    if isinstance(focus, dict) and focus.get("intent"):
        lines.append(f"focus: {focus['intent']}")
        if focus.get("files"):
            lines.append(f"  files: {', '.join(focus['files'])}")
    lines.append("")
    lines.append(f"claims ({len(held)}):")
    from agentcoord.leases.keytext import display_key

    lines += [f"  {c['mode']} {display_key(c['resource_key'])}" for c in held] or ["  none"]
    labels = row.get("labels") or {}
    if labels:
        lines += ["", "labels:", json.dumps(labels, indent=2, sort_keys=True)]
    lines += ["", "(escape or q closes)"]
    return "\n".join(lines)


def run_top(cfg: Any) -> int:
    """Run the view until q; it reads nothing until the daemon answers."""
    TopApp(cfg).run()
    return 0
