"""Caller identity by transport (docs/security.md "By transport").

unix socket: SO_PEERCRED -> the peer's ancestry -> a runner the daemon started, or a process one
of the session kinds recognises (an interactive session of an agent CLI, such as ``claude``:
:mod:`agentcoord.identity.kinds`). HTTP: a bearer token, else the loopback peer's pid, then the
same walk. Other uids are refused. Nothing a caller *says* is used to decide who it is.

Being the human takes proof, not the absence of an agent (docs/security.md "Who a caller is"): a
process whose ancestry reaches no agent may be an agent's detached (``setsid``) child, so it is
``anonymous`` and refused until it presents the human token (``agentcoord/login`` on the
socket, the bearer header over HTTP), and even then never the human when its environment
carries an agent's markers (:data:`agentcoord.identity.humanproof.AGENT_MARKERS`) or its ancestry
reaches an agent.

Each refused attempt to act as the human is one ``HUMAN_REFUSED`` audit event (docs/security.md
"Every human decision is audited"), rate-limited by
:class:`agentcoord.identity.humanproof.RefusalLimiter`: the resolver records the refusals it
decides (the human token or ``agentcoord/login`` from a
process that is not the human) and, through :meth:`IdentityResolver.refused`, those the
transports and the MCP core decide (a human-only tool, the human's name borrowed).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import secrets
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcoord.errors import IdentityError, PeerGone
from agentcoord.identity.agenttokens import AGENT_TOKENS_FILE, AgentTokens
from agentcoord.identity.ancestry import ProcInfo, decide
from agentcoord.identity.humanproof import (
    HUMAN_REFUSED,
    HUMAN_TOKEN_FILE,
    NOT_IDENTIFIED,
    PEER_GONE,
    RefusalLimiter,
    agent_markers,
    attempt_of,
    marked_refusal,
    proof_gap,
)
from agentcoord.identity.kinds import SessionKind
from agentcoord.identity.procprobe import PeerCred, ProcessProbe, tcp_peer_pid
from agentcoord.identity.runners import RunnerLookup
from agentcoord.kernel.caller import ANONYMOUS, Caller, Via
from agentcoord.kernel.directory import AgentDirectory
from agentcoord.kernel.files import write_private

if TYPE_CHECKING:
    from agentcoord.stores.audit import AuditSink

__all__ = ["IdentityResolver", "TokenStore", "write_private"]

log = logging.getLogger(__name__)

_LOGIN = "agentcoord/login"  # the CLI's proof on the unix socket (mcp/unix.py)


class TokenStore:
    """Bearer tokens for HTTP callers, persisted as sha256 digests in a 0600 file."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._digests: dict[str, str] = {}
        if path.exists():
            try:
                self._digests = dict(json.loads(path.read_text()))
            except (OSError, ValueError):
                log.warning("token file %s is unreadable; starting with no tokens", path)

    @staticmethod
    def _digest(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    def mint(self, agent: str) -> str:
        """A new token for ``agent``; only its digest is stored."""
        token = secrets.token_urlsafe(32)
        self._digests[self._digest(token)] = agent
        self._save()
        return token

    def lookup(self, token: str) -> str | None:
        return self._digests.get(self._digest(token))

    @property
    def human_token_file(self) -> Path:
        """Where the human's token lives (beside this store, daemon/run.py)."""
        return self._path.parent / HUMAN_TOKEN_FILE

    def ensure_file(self, path: Path, agent: str) -> str:
        """The token stored (0600) at ``path`` for ``agent``, minted if missing or unknown."""
        try:
            token = path.read_text().strip()
        except OSError:
            token = ""
        if token and self.lookup(token) == agent:
            return token
        token = self.mint(agent)
        write_private(path, token + "\n")
        return token

    def _save(self) -> None:
        write_private(self._path, json.dumps(self._digests))


def _human_only(tool: str | None) -> bool:
    """Whether ``tool`` is one only the human may call."""
    from agentcoord.messaging.prompts import HUMAN_ONLY  # late: off the hook path's imports

    return tool in HUMAN_ONLY


class IdentityResolver:
    """Turns transport facts into a :class:`Caller`."""

    def __init__(
        self,
        *,
        uid: int,
        user: str,
        kinds: Sequence[SessionKind],
        runners: RunnerLookup,
        probe: ProcessProbe,
        directory: AgentDirectory,
        tokens: TokenStore,
        audit: AuditSink,
        agent_tokens: AgentTokens | None = None,
    ) -> None:
        self._uid = uid
        self._user = user
        self._kinds = tuple(kinds)  # the agent CLIs whose sessions are agents
        self._runners = runners  # the processes the daemon started (local agents own them)
        self._probe = probe
        self._directory = directory
        self._tokens = tokens
        self.audit = audit  # where refusals are recorded (docs/security.md)
        # The human's tokens for generic MCP clients, beside the human's (docs/tokens.md).
        where = tokens.human_token_file.parent / AGENT_TOKENS_FILE
        self.agent_tokens = agent_tokens or AgentTokens(where, audit)
        self._refusals = RefusalLimiter()
        # pid -> (reason, token) of a refused login on an anonymous connection: recorded with
        # the request that follows it (the CLI sends both at once), or when it hangs up.
        self._refused_logins: dict[int, tuple[str, str | None]] = {}

    @property
    def directory(self) -> AgentDirectory:
        """The session agents' directory (their end and use are recorded there too)."""
        return self._directory

    @property
    def human(self) -> str:
        return f"human:{self._user}"

    async def from_unix(self, cred: PeerCred) -> Caller:
        """Identify a unix-socket peer from its credentials."""
        if cred.uid != self._uid:
            raise IdentityError(f"uid {cred.uid} may not use this daemon (owner uid {self._uid})")
        chain = await asyncio.to_thread(self._probe.chain, cred.pid)
        if not cred.still_alive() or proof_gap(chain, cred.pid) is not None:
            # The pid may already name another process: trust nothing we read.
            raise PeerGone("the calling process exited before it could be identified")
        return await self._from_chain(chain, cred.pid, cred.uid, "unix")

    def refused_gone(self, pid: int, payloads: list[Any]) -> None:
        """A unix peer left before it could be identified: audited as a refused attempt to
        act as the human when what it sent was a login or a human-only tool (the CLI sends
        both at once, so they are one event)."""
        logins = [p for p in payloads if isinstance(p, dict) and p.get("method") == _LOGIN]
        attempts = [attempt_of(p) for p in payloads]
        tool, prompt = next(((t, pr) for _, t, pr in attempts if _human_only(t)), (None, None))
        if not logins and tool is None:
            return
        params = logins[0].get("params") if logins else None
        token = self._token_kind(params.get("token") if isinstance(params, dict) else None)
        who = Caller("anonymous", ANONYMOUS, "unix", pid=pid)
        what = tool or _LOGIN
        self.refused(who, what, "peer-gone", prompt=prompt, token=token, login=bool(logins))

    async def from_tcp(
        self,
        peer: tuple[str, int],
        local: tuple[str, int],
        bearer: str | None,
        body: bytes | None = None,
    ) -> Caller:
        """Identify an HTTP caller: bearer token first, else the loopback peer's process.
        ``body`` (the request's) says, when the caller is refused, what it was after."""
        if bearer is not None:
            agent = self._tokens.lookup(bearer)
            if agent is None:
                # A token the human minted for a name: that agent, never the human, whatever
                # process presents it (docs/tokens.md).
                named = self.agent_tokens.lookup(bearer)
                if named is None:
                    raise IdentityError("unknown bearer token (or one expired or revoked)")
                return Caller(kind="runner", agent=named, via="http-token")
            if agent.startswith("human:"):
                return await self._human_over_tcp(peer, local, agent, body)
            return Caller(kind="runner", agent=agent, via="http-token")
        found = await asyncio.to_thread(tcp_peer_pid, peer, local)
        if found is None:
            raise IdentityError(
                "cannot find the process behind this connection; " + self.not_identified
            )
        pid, uid = found
        if uid != self._uid:
            raise IdentityError(f"uid {uid} may not use this daemon (owner uid {self._uid})")
        chain = await asyncio.to_thread(self._probe.chain, pid)
        caller = await self._from_chain(chain, pid, uid, "http-peer")
        if caller.kind == "anonymous":
            # A tokenless loopback process that maps to no agent is refused, never the human;
            # audited when what it tried was the human's to do.
            _, tool, prompt = attempt_of(body)
            if _human_only(tool):
                assert tool is not None
                self.refused(caller, tool, "not-identified", prompt=prompt)
            raise IdentityError(self.not_identified)
        return caller

    @property
    def not_identified(self) -> str:
        """The refusal for an unattributed caller, naming how the human gets access."""
        return NOT_IDENTIFIED.format(token_file=self._tokens.human_token_file)

    async def _human_over_tcp(
        self, peer: tuple[str, int], local: tuple[str, int], agent: str, body: bytes | None
    ) -> Caller:
        """A bearer of the human token: the human, when its process is alive and whole and
        is no agent's. The proof is taken before the request is acted on, from the process
        that holds the connection, and it holds it still once its ancestry is read
        (docs/security.md "When the proof is taken"); one that cannot be found is refused."""
        found = await asyncio.to_thread(tcp_peer_pid, peer, local)
        if found is None:
            self._refused_gone_tcp(body)
            raise PeerGone(PEER_GONE)
        pid, uid = found
        if uid != self._uid:
            raise IdentityError(f"uid {uid} may not use this daemon (owner uid {self._uid})")
        chain = await asyncio.to_thread(self._probe.chain, pid)
        gap = proof_gap(chain, pid)
        if gap is None and await asyncio.to_thread(tcp_peer_pid, peer, local) != found:
            gap = PEER_GONE  # it let go of the connection while its ancestry was read
        if gap is not None:
            who = Caller("anonymous", ANONYMOUS, "http-token", pid=pid, uid=uid)
            method, tool, prompt = attempt_of(body)
            self.refused(who, tool or method or "http", "peer-gone", prompt=prompt, token="human")
            raise PeerGone(gap)
        refusal = self._agent_process_refusal(chain)
        if refusal is not None:
            reason, message = refusal
            who = await self._from_chain(chain, pid, uid, "http-token")  # who it is instead
            method, tool, prompt = attempt_of(body)
            self.refused(who, tool or method or "http", reason, prompt=prompt, token="human")
            raise IdentityError(message)
        exe = chain[0].exe if chain else None
        cwd = chain[0].cwd if chain else None
        return Caller("human", agent, "http-token", pid=pid, uid=uid, cwd=cwd, exe=exe or None)

    def _refused_gone_tcp(self, body: bytes | None) -> None:
        """A human-token bearer whose process could not be found: one refusal event."""
        method, tool, prompt = attempt_of(body)
        who = Caller("anonymous", ANONYMOUS, "http-token")
        self.refused(who, tool or method or "http", "peer-gone", prompt=prompt, token="human")

    def _agent_process_refusal(self, chain: list[ProcInfo]) -> tuple[str, str] | None:
        """(reason, message) when ``chain`` (nearest first) is an agent's: markers, a runner,
        a session; None when nothing shows it is."""
        markers = agent_markers(chain[0].environ) if chain else []
        if markers:
            return "agent-markers", marked_refusal(markers)
        decision = decide(chain, self._runners, self._kinds)
        if decision.kind != "none":
            return "agent-process", (
                f"refused to act as the human: this process descends from a {decision.kind} "
                "(an agent's process is never the human, token or not)"
            )
        return None

    def login(self, caller: Caller, token: object) -> Caller:
        """The caller after presenting ``token`` on the unix socket (``agentcoord/login``).
        A refusal is audited: at once for an agent's connection, which stays usable; with the
        next request (or the hang-up) for an anonymous one, so the event says what it was for.
        """
        if caller.kind == "human":
            return caller
        presented = self._token_kind(token)
        if caller.kind in ("session", "runner"):
            self.refused(caller, "agentcoord/login", "agent-process", token=presented)
            raise IdentityError(
                f"refused to act as the human: you are {caller.agent}, and an agent's process "
                "is never the human, token or not"
            )
        if presented != "human":
            self._refused_login(caller, "not-the-human-token", presented)
            raise IdentityError(f"not the human token (it is in {self._tokens.human_token_file})")
        if caller.markers:
            self._refused_login(caller, "agent-markers", presented)
            raise IdentityError(marked_refusal(list(caller.markers)))
        if caller.pid is None:  # no process was read: nothing proves it
            self._refused_login(caller, "peer-gone", presented)
            raise PeerGone(PEER_GONE)
        return replace(caller, kind="human", agent=self.human)

    def _token_kind(self, token: object) -> str | None:
        """What was presented as the human's token: ``human`` (it is), ``other``, or None."""
        if not isinstance(token, str) or not token:
            return None
        return "human" if (self._tokens.lookup(token) or "").startswith("human:") else "other"

    def _refused_login(self, caller: Caller, reason: str, token: str | None) -> None:
        if caller.pid is None:
            self.refused(caller, "agentcoord/login", reason, token=token)
        else:
            self._refused_logins[caller.pid] = (reason, token)

    def refused_anonymous(self, caller: Caller, method: str, params: Any) -> None:
        """An anonymous unix caller's request was refused (the MCP core refuses them all):
        audited when a login was refused before it on this connection, or when it calls a
        human-only tool."""
        _, tool, prompt = attempt_of({"method": method, "params": params})
        login = self._refused_logins.pop(caller.pid, None) if caller.pid is not None else None
        if login is not None:
            reason, token = login
            self.refused(caller, tool or method, reason, prompt=prompt, token=token, login=True)
        elif _human_only(tool):
            assert tool is not None
            self.refused(caller, tool, "not-identified", prompt=prompt)

    def hung_up(self, caller: Caller) -> None:
        """A unix connection closed: a refused login nothing followed is audited now."""
        login = self._refused_logins.pop(caller.pid, None) if caller.pid is not None else None
        if login is not None:
            reason, token = login
            self.refused(caller, "agentcoord/login", reason, token=token)

    def refused(
        self,
        caller: Caller,
        what: str,
        reason: str,
        *,
        prompt: str | None = None,
        token: str | None = None,
        login: bool = False,
    ) -> None:
        """Audit one refused attempt by ``caller`` to act as the human: ``what`` it tried (a
        tool or a method), ``reason`` (``not-identified``, ``agent-markers``, ``agent-process``,
        ``not-the-human-token``, ``human-only``, ``borrowed-name``, ``peer-gone``), whether it
        presented a token. At most one event per (process, transport, what) per window,
        counted."""
        how = "unix" if caller.via == "unix" else "http"
        admitted = self._refusals.admit((caller.pid, how, what), time.monotonic())
        if admitted is None:
            return
        log.warning("refused %s as the human: pid %s, %s, %s", what, caller.pid, how, reason)
        fields: dict[str, Any] = {
            "what": what,
            "prompt": prompt,
            "how": how,
            "reason": reason,
            "token": token,
            "login": True if login else None,
            "kind": caller.kind,
            "markers": list(caller.markers) or None,
            "pid": caller.pid,
            "exe": caller.exe or self._exe(caller.pid),
            "repeats": admitted.repeats or None,
            "dropped": admitted.dropped or None,
        }
        self.audit.emit(HUMAN_REFUSED, caller.agent, **{k: v for k, v in fields.items() if v})

    def _exe(self, pid: int | None) -> str | None:
        """The executable of ``pid``, for the audit (agents' callers do not carry it)."""
        if pid is None:
            return None
        try:
            chain = self._probe.chain(pid)
        except Exception:  # the audit is best-effort; the refusal stands either way
            return None
        return (chain[0].exe or None) if chain and chain[0].pid == pid else None

    async def _from_chain(self, chain: list[ProcInfo], pid: int, uid: int, via: Via) -> Caller:
        decision = decide(chain, self._runners, self._kinds)
        if decision.kind == "runner" and decision.runner is not None:
            info = decision.runner
            return Caller(
                "runner", info.agent, via, pid=pid, uid=uid, depth=info.depth, chain=info.chain
            )
        kind = decision.session_kind
        if decision.kind == "session" and decision.proc is not None and kind is not None:
            proc = decision.proc
            shared = kind.refusal(proc)
            if shared is not None:
                # One process serving several sessions: its callers cannot be told apart, so
                # none is taken for another (docs/codex.md).
                raise IdentityError(shared)
            session_id = kind.session_id(chain[0] if chain else None, proc)
            cwd = kind.cwd(proc)
            agent = await self._directory.session_agent(
                (proc.pid, proc.create_time),
                session_id,
                cwd,
                kind.name_base(proc),
                kind.native_name(proc),
            )
            return Caller(
                "session",
                agent,
                via,
                pid=pid,
                uid=uid,
                session_id=session_id,
                session_pid=proc.pid,
                session_kind=kind.name,
                cwd=cwd,
            )
        # Same uid, no agent above it: the developer's shell, or an agent's detached child.
        # Nothing here proves which, so it is nobody until it presents the human token.
        peer = chain[0] if chain else None
        return Caller(
            "anonymous",
            ANONYMOUS,
            via,
            pid=pid,
            uid=uid,
            cwd=peer.cwd if peer else None,
            exe=(peer.exe or None) if peer else None,
            markers=tuple(agent_markers(peer.environ)) if peer else (),
        )
