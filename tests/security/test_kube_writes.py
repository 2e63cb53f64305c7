"""Writes through the kube API that must not go through (docs/security.md "HumanPrompt status
through the kube API", docs/store.md "Limits"): a HumanPrompt's status (the human's answer),
with the real kubectl and with a raw HTTPS PATCH holding the client certificate, is refused
with 403 and answers nothing; a deeply nested body is a 400 Status, not a 500."""

from __future__ import annotations

import http.client
import json
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon, write_kubeconfig
from tests.security.conftest import Tally
from tests.security.test_human_proof import _raise_prompt, _still_open
from tests.tools.conftest import AgentProc, human_call

_ANSWER = {"status": {"phase": "Answered", "answer": {"value": "yes"}, "answeredBy": "human:x"}}


@pytest.fixture
def agent(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> Iterator[AgentProc]:
    """An agent session (under a stand-in ``claude``) that raises the prompt."""
    proc = AgentProc(daemon, claude_bin, tmp_path / "work" / "asker")
    try:
        yield proc
    finally:
        proc.close()


def _kubectl(daemon: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    config = write_kubeconfig(daemon)
    argv = ["kubectl", "--kubeconfig", str(config), "--cache-dir", str(daemon.root / "kc"), *args]
    return subprocess.run(argv, env=daemon.env, capture_output=True, text=True, timeout=60)


def _https(daemon: Daemon, method: str, path: str, body: bytes, ctype: str) -> tuple[int, Any]:
    """One request to the kube API holding the client certificate under ``<state>/kube/``."""
    kube = daemon.state_dir / "kube"
    ctx = ssl.create_default_context(cafile=str(kube / "ca.crt"))
    ctx.load_cert_chain(str(kube / "client.crt"), str(kube / "client.key"))
    host, port = (daemon.runtime_dir / "kube.addr").read_text().strip().rsplit(":", 1)
    conn = http.client.HTTPSConnection(host.strip("[]"), int(port), context=ctx, timeout=30)
    try:
        conn.request(method, path, body=body, headers={"content-type": ctype})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def _prompt_path(daemon: Daemon, prompt: str) -> str:
    out = _kubectl(daemon, "get", "humanprompts", "-A", "-o", "json")
    assert out.returncode == 0, out.stderr
    (obj,) = [o for o in json.loads(out.stdout)["items"] if o["metadata"]["name"] == prompt]
    ns = obj["metadata"]["namespace"]
    return f"/apis/fastverk.savvifi.com/v1/namespaces/{ns}/humanprompts/{prompt}"


def test_kubectl_cannot_answer_a_prompt(daemon: Daemon, agent: AgentProc, tally: Tally) -> None:
    """`kubectl patch humanprompt ... --subresource=status` with the daemon's kubeconfig:
    Forbidden, the prompt stays open, no answer is recorded."""
    prompt = _raise_prompt(agent)
    ns = _prompt_path(daemon, prompt).split("/")[5]
    out = _kubectl(
        daemon,
        "patch",
        "humanprompt",
        prompt,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(_ANSWER),
    )
    refused = out.returncode != 0 and "Forbidden" in out.stderr
    assert tally("answer through kubectl", refused), out.stdout + out.stderr + daemon.log()
    assert "agentcoord answer" in out.stderr
    assert _still_open(daemon, prompt)
    assert human_call(daemon, "audit", type="HUMAN_ANSWERED")["events"] == []


@pytest.mark.parametrize("method", ["PATCH", "PUT"])
def test_a_raw_https_status_write_cannot_answer_a_prompt(
    daemon: Daemon, agent: AgentProc, tally: Tally, method: str
) -> None:
    """A merge PATCH (or a PUT) of the HumanPrompt's status over HTTPS with the client
    certificate: 403 with a Forbidden Status body; the prompt stays open."""
    prompt = _raise_prompt(agent)
    path = _prompt_path(daemon, prompt)
    body = dict(_ANSWER)
    ctype = "application/merge-patch+json"
    if method == "PUT":
        status, current = _https(daemon, "GET", path, b"", "application/json")
        assert status == 200, current
        body = {**current, **_ANSWER}
        ctype = "application/json"
    status, reply = _https(daemon, method, path + "/status", json.dumps(body).encode(), ctype)
    refused = status == 403 and reply.get("reason") == "Forbidden"
    assert tally("answer through the kube API", refused), (status, reply, daemon.log())
    assert reply["kind"] == "Status"
    if method == "PUT":  # the main resource takes no status (the status subresource)
        status, reply = _https(daemon, "PUT", path, json.dumps(body).encode(), ctype)
        assert status in (200, 409, 422), reply
    assert _still_open(daemon, prompt)
    assert human_call(daemon, "audit", type="HUMAN_ANSWERED")["events"] == []


def test_a_deeply_nested_kube_body_is_a_400(daemon: Daemon, tally: Tally) -> None:
    """An object nested 100,000 levels deep is a 400 Status naming the depth; the API then
    still creates a normal object."""
    path = "/apis/fastverk.savvifi.com/v1/namespaces/default/agenttasks"
    deep = b'{"apiVersion":"fastverk.savvifi.com/v1","kind":"AgentTask","metadata":'
    deep += b'{"name":"deep"},"spec":{"objective":"x","lineage":{"a":' + b"[" * 100_000
    deep += b"]" * 100_000 + b"}}}"
    status, reply = _https(daemon, "POST", path, deep, "application/json")
    assert tally("deeply nested kube body", status == 400), (status, reply, daemon.log())
    assert reply["kind"] == "Status"
    assert reply["reason"] == "BadRequest"
    assert "max depth of 100" in reply["message"]
    ok = b'{"apiVersion":"fastverk.savvifi.com/v1","kind":"AgentTask","metadata":'
    ok += (
        b'{"name":"shallow"},"spec":{"objective":"x","lineage":{"a":'
        + b"[" * 50
        + b"]" * 50
        + b"}}}"
    )
    status, reply = _https(daemon, "POST", path, ok, "application/json")
    assert status == 201, reply


@pytest.mark.parametrize(
    ("metadata", "code", "names"),
    [
        ({"name": {"a": 1}}, 422, "metadata.name"),
        ({"name": ["x"]}, 422, "metadata.name"),
        ({"name": "ok", "namespace": 7}, 400, "namespace"),
        (["not", "an object"], 422, "metadata"),
    ],
)
def test_metadata_of_the_wrong_type_is_refused(
    daemon: Daemon, tally: Tally, metadata: Any, code: int, names: str
) -> None:
    """A create whose metadata, name or namespace has the wrong JSON type is a 4xx Status naming
    the field, not a 500."""
    path = "/apis/fastverk.savvifi.com/v1/namespaces/default/agentprofiles"
    body = {
        "apiVersion": "fastverk.savvifi.com/v1",
        "kind": "AgentProfile",
        "metadata": metadata,
        "spec": {"backend": "claude-code"},
    }
    status, reply = _https(daemon, "POST", path, json.dumps(body).encode(), "application/json")
    assert tally("kube metadata of the wrong type", status == code), (status, reply, daemon.log())
    assert reply["kind"] == "Status"
    assert names in reply["message"], reply
