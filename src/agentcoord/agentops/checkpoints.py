"""Checkpoint bundles: git WIP bundle + session transcripts + metadata, content-addressed.

A bundle is a deterministic tar (``meta.json``, ``wip.bundle``, ``transcripts/<id>.jsonl``)
stored at ``<state>/checkpoints/sha256/<hex>``; its ref is ``sha256:<hex>``, so the same work
checkpointed twice is stored once (DESIGN.md "Planes": large blobs on disk, the CR holds the
ref). The WIP commit is what ``git stash create`` makes, built with a private index so that
untracked files are kept too (``stash -u``); restoring reads its tree into a fresh worktree and
moves HEAD back to the base, so the files come back byte for byte as uncommitted work.

Synchronous on purpose: the daemon calls these through ``asyncio.to_thread``; the one async
entry point, :func:`prune`, reads which bundles are still referenced from the object store.

Retention (docs/reliability.md "State retention"): each agent keeps its newest ``keep``
bundles, and all bundles together stay under ``max_bytes``, oldest removed first. Never removed:
the newest bundle of each agent, the last checkpoint of each AgentTask (what ``resume`` takes),
any Agent's ``spec.resumeFrom``, and an unreferenced bundle younger than a grace period
(stored, its task entry not yet written). The entries in ``status.checkpoints`` stay (seed
000: the list is append-only); loading a removed ref says it was removed by retention.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcoord.agentops.callrules import project_dir_name
from agentcoord.errors import InvalidArguments, NotFound, OperationFailed
from agentcoord.kernel.files import write_private

__all__ = [
    "Bundle",
    "BundleRetention",
    "Stored",
    "init_workdir",
    "load_bundle",
    "make_bundle",
    "new_worktree",
    "prune",
    "prune_plan",
    "references",
    "remove_bundles",
    "repo_of",
    "restore_bundle",
    "store_blob",
    "stored_bundles",
]

log = logging.getLogger(__name__)

WIP_REF = "refs/agentcoord/wip"
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "agentcoord",
    "GIT_AUTHOR_EMAIL": "agentcoord@localhost",
    "GIT_COMMITTER_NAME": "agentcoord",
    "GIT_COMMITTER_EMAIL": "agentcoord@localhost",
    "GIT_TERMINAL_PROMPT": "0",
}


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    full = {**os.environ, **_GIT_ENV, **(env or {})}
    done = subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, env=full, check=False
    )
    if done.returncode != 0:
        raise OperationFailed(f"git {' '.join(args[:2])} failed in {cwd}: {done.stderr.strip()}")
    return done.stdout.strip()


def init_workdir(path: Path, repo: Path | None, name: str) -> Path:
    """An agent's working directory: a detached worktree of ``repo``, else a new repository
    with one empty commit (so there is always a base to checkpoint against)."""
    if path.exists() and (path / ".git").exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    if repo is not None:
        _git(repo, "worktree", "add", "--detach", str(path), "HEAD")
        return path
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q")
    _git(path, "commit", "-q", "--allow-empty", "-m", f"agentcoord: start of {name}")
    return path


def repo_of(work: Path) -> Path:
    """The repository a worktree belongs to (itself for a plain repository)."""
    common = Path(_git(work, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    return common.parent if common.name == ".git" else common


def _wip_commit(work: Path) -> tuple[str, str]:
    """(base, wip): HEAD and a commit of everything in the worktree on top of it."""
    base = _git(work, "rev-parse", "HEAD")
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(work, "read-tree", "HEAD", env=env)
        _git(work, "add", "-A", env=env)
        tree = _git(work, "write-tree", env=env)
    # Dated as the base commit, so the same work makes the same commit (and the same ref).
    when = _git(work, "log", "-1", "--format=%cI", base)
    dates = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    wip = _git(
        work, "commit-tree", tree, "-p", base, "-m", "agentcoord checkpoint (WIP)", env=dates
    )
    return base, wip


@dataclass(frozen=True)
class Bundle:
    """What one checkpoint holds, as read back."""

    meta: dict[str, Any]
    wip_bundle: bytes
    transcripts: dict[str, bytes]


def make_bundle(
    *, work: Path, claude_dir: Path, session_ids: list[str], meta: dict[str, Any]
) -> bytes:
    """The tar bytes of a checkpoint of ``work`` and the transcripts of ``session_ids``."""
    base, wip = _wip_commit(work)
    ref = f"{WIP_REF}-{wip[:12]}"
    _git(work, "update-ref", ref, wip)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "wip.bundle"
            _git(work, "bundle", "create", "-q", str(out), ref)
            wip_bundle = out.read_bytes()
    finally:
        _git(work, "update-ref", "-d", ref)
    transcripts: dict[str, bytes] = {}
    project = claude_dir / "projects" / project_dir_name(str(work))
    for sid in session_ids:
        path = project / f"{sid}.jsonl"
        if path.is_file():
            transcripts[sid] = path.read_bytes()
    meta = {**meta, "base": base, "wip": wip, "bundleRef": ref, "sessions": sorted(transcripts)}
    files = {"meta.json": json.dumps(meta, sort_keys=True, indent=1).encode()}
    files["wip.bundle"] = wip_bundle
    for sid, data in transcripts.items():
        files[f"transcripts/{sid}.jsonl"] = data
    import tarfile  # here: checkpoints are rare, and tarfile is ~2 ms of daemon start-up

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):  # deterministic: same content, same address
            info = tarfile.TarInfo(name)
            info.size = len(files[name])
            info.mode = 0o600
            tar.addfile(info, io.BytesIO(files[name]))
    return buf.getvalue()


def store_blob(state_dir: Path, data: bytes) -> str:
    """Store ``data`` under its sha256 (0600, written atomically); returns ``sha256:<hex>``."""
    digest = hashlib.sha256(data).hexdigest()
    folder = state_dir / "checkpoints" / "sha256"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / digest
    if not path.exists():
        write_private(path, data)
    return f"sha256:{digest}"


def load_bundle(state_dir: Path, ref: str) -> Bundle:
    """Read a stored checkpoint back, checking its content still matches its address."""
    algo, _, digest = ref.partition(":")
    if algo != "sha256" or len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
        raise InvalidArguments(f"{ref!r} is not a checkpoint ref (sha256:<hex>)")
    path = state_dir / "checkpoints" / "sha256" / digest
    try:
        data = path.read_bytes()
    except OSError:
        raise NotFound(
            f"checkpoint {ref} is not stored in this daemon (never made here, or removed by "
            "checkpoint retention: checkpoint_keep, checkpoint_max_bytes)"
        ) from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise OperationFailed(
            f"checkpoint {ref} is corrupt (its content does not match its address)"
        )
    import tarfile

    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        for member in tar.getmembers():
            fh = tar.extractfile(member)
            if fh is not None:
                files[member.name] = fh.read()
    transcripts = {
        name.removeprefix("transcripts/").removesuffix(".jsonl"): body
        for name, body in files.items()
        if name.startswith("transcripts/")
    }
    return Bundle(json.loads(files["meta.json"]), files["wip.bundle"], transcripts)


def restore_bundle(bundle: Bundle, *, work: Path, claude_dir: Path) -> None:
    """Rehydrate into the fresh worktree ``work``: WIP files as uncommitted changes on the base
    commit, and the transcripts where ``claude --resume`` looks for them from ``work``."""
    meta = bundle.meta
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wip.bundle"
        path.write_bytes(bundle.wip_bundle)
        ref = str(meta["bundleRef"])
        _git(work, "fetch", "-q", str(path), f"+{ref}:{ref}")
    _git(work, "read-tree", "-u", "--reset", str(meta["wip"]))
    _git(work, "reset", "-q", str(meta["base"]))  # HEAD to the base; the WIP stays in files
    _git(work, "update-ref", "-d", ref)
    project = claude_dir / "projects" / project_dir_name(str(work))
    project.mkdir(parents=True, exist_ok=True, mode=0o700)
    for sid, body in bundle.transcripts.items():
        (project / f"{sid}.jsonl").write_bytes(body)


def new_worktree(path: Path, meta: dict[str, Any]) -> Path:
    """A new worktree for a resumed agent: of the original repository when it still exists,
    else a new repository (the bundle carries the whole history)."""
    repo = Path(str(meta.get("repo", "")))
    if path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if meta.get("repo") and (repo / ".git").exists():
        _git(repo, "worktree", "add", "--detach", str(path), str(meta["base"]))
    else:
        path.mkdir(parents=True)
        _git(path, "init", "-q")
    return path


# -- retention -------------------------------------------------------------------------------

KEEP = 10  # Config.checkpoint_keep
MAX_BYTES = 2 << 30  # Config.checkpoint_max_bytes
_GRACE_S = 300.0  # a bundle this young may be between store_blob and its task entry


@dataclass(frozen=True)
class BundleRetention:
    """How many bundles each agent keeps, and the byte cap on all of them together."""

    keep: int = KEEP
    max_bytes: int = MAX_BYTES


@dataclass(frozen=True)
class Stored:
    """One bundle file: its digest, size and when it was stored."""

    digest: str
    size: int
    mtime: float


def _digest(ref: str) -> str:
    return ref.partition(":")[2] if ref.startswith("sha256:") else ""


def references(
    tasks: Iterable[Mapping[str, Any]], agents: Iterable[Mapping[str, Any]]
) -> tuple[dict[str, list[str]], set[str]]:
    """(each agent's bundle digests, oldest first; the digests that must stay), from the
    AgentTasks' ``status.checkpoints`` and the Agents' ``spec.resumeFrom``."""
    history: dict[str, list[str]] = {}
    pinned: set[str] = set()
    for task in tasks:
        entries = (task.get("status") or {}).get("checkpoints") or []
        task_name = str((task.get("metadata") or {}).get("name", ""))
        for entry in entries:
            digest = _digest(str(entry.get("ref", "")))
            if digest:
                owner = str(entry.get("agent") or f"task:{task_name}")
                refs = history.setdefault(owner, [])
                if digest in refs:  # the same work checkpointed again: now its newest
                    refs.remove(digest)
                refs.append(digest)
        if entries:
            pinned.add(_digest(str(entries[-1].get("ref", ""))))
    for agent in agents:
        pinned.add(_digest(str((agent.get("spec") or {}).get("resumeFrom") or "")))
    for refs in history.values():
        pinned.add(refs[-1])
    pinned.discard("")
    return history, pinned


def prune_plan(
    stored: Sequence[Stored],
    history: Mapping[str, Sequence[str]],
    pinned: set[str],
    retention: BundleRetention,
    now: float,
) -> list[str]:
    """The digests to remove: beyond each agent's newest ``keep``, then the oldest until the
    rest fit ``max_bytes``; never a pinned one or one younger than the grace period."""
    kept_by_count: set[str] = set()
    for refs in history.values():
        kept_by_count.update(refs[-max(1, retention.keep) :])
    referenced = {d for refs in history.values() for d in refs}
    young = {b.digest for b in stored if now - b.mtime < _GRACE_S}
    safe = pinned | (young - referenced)
    remove = [
        b.digest
        for b in stored
        if b.digest in referenced and b.digest not in kept_by_count and b.digest not in safe
    ]
    gone = set(remove)
    total = sum(b.size for b in stored if b.digest not in gone)
    # Then oldest first (unreferenced bundles, of deleted tasks, included) down to the cap.
    for b in sorted(stored, key=lambda b: b.mtime):
        if total <= retention.max_bytes:
            break
        if b.digest in gone or b.digest in safe:
            continue
        remove.append(b.digest)
        gone.add(b.digest)
        total -= b.size
    return remove


def stored_bundles(state_dir: Path) -> list[Stored]:
    """Every bundle file under ``state_dir`` (temporary files of a write in progress aside)."""
    folder = state_dir / "checkpoints" / "sha256"
    out = []
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(folder):
            if len(entry.name) == 64 and entry.is_file():
                with contextlib.suppress(FileNotFoundError):
                    info = entry.stat()
                    out.append(Stored(entry.name, info.st_size, info.st_mtime))
    return out


def remove_bundles(state_dir: Path, digests: Iterable[str]) -> None:
    folder = state_dir / "checkpoints" / "sha256"
    for digest in digests:
        (folder / digest).unlink(missing_ok=True)


async def prune(
    store: Any, namespace: str, state_dir: Path, retention: BundleRetention
) -> list[str]:
    """Apply ``retention`` to the bundles under ``state_dir``; the refs removed.

    Never raises: a failure is logged and the bundles stay (a checkpoint just made stands)."""
    import asyncio

    try:
        tasks, _ = await store.list("agenttasks", namespace)
        agents, _ = await store.list("agents", namespace)
        history, pinned = references(tasks, agents)
        stored = await asyncio.to_thread(stored_bundles, state_dir)
        remove = prune_plan(stored, history, pinned, retention, time.time())
        if remove:
            await asyncio.to_thread(remove_bundles, state_dir, remove)
    except Exception:
        log.warning("checkpoint retention failed; no bundle removed", exc_info=True)
        return []
    if remove:
        log.info("checkpoint retention removed %d bundles", len(remove))
    return [f"sha256:{d}" for d in remove]
