"""The real kubectl against a real daemon: apply, get, patch, watch, delete, wait, explain."""

from __future__ import annotations

import json
import queue
import sqlite3
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.conftest import Daemon, make_env
from tests.stores.objects.conftest import Kubectl

pytestmark = pytest.mark.timeout(120)


def agent_yaml(name: str, ns: str, extra_spec: str = "", labels: str = "{}") -> str:
    return f"""apiVersion: fastverk.savvifi.com/v1
kind: Agent
metadata:
  name: {name}
  namespace: {ns}
  labels: {labels}
spec:
  profile: coder
{extra_spec}"""


def test_apply_get_table_and_yaml(kubectl: Kubectl) -> None:
    """apply creates; get prints the Agent table with Age; -o yaml shows server metadata."""
    out = kubectl("apply", "-f", "-", stdin=agent_yaml("alpha", "t1"))
    assert out.stdout.strip() == "agent.fastverk.savvifi.com/alpha created"
    table = kubectl("get", "agents", "-n", "t1").stdout.splitlines()
    assert table[0].split() == ["NAME", "PHASE", "PROFILE", "FOCUS", "AGE"]
    cells = table[1].split()
    assert cells[:2] == ["alpha", "coder"]
    assert cells[-1].endswith("s")
    doc = yaml.safe_load(kubectl("get", "ag", "alpha", "-n", "t1", "-o", "yaml").stdout)
    assert doc["kind"] == "Agent"
    assert doc["metadata"]["generation"] == 1
    assert int(doc["metadata"]["resourceVersion"]) > 0
    assert doc["metadata"]["uid"]


def test_apply_update_and_strict_validation(kubectl: Kubectl) -> None:
    """apply updates (generation 2); an unknown field is refused by fieldValidation=Strict."""
    kubectl("apply", "-f", "-", stdin=agent_yaml("beta", "t2"))
    bad = kubectl("apply", "-f", "-", stdin=agent_yaml("beta", "t2", "  bogus: 1\n"), check=False)
    assert bad.returncode != 0
    assert 'strict decoding error: unknown field "spec.bogus"' in bad.stderr
    out = kubectl("apply", "-f", "-", stdin=agent_yaml("beta", "t2", "  pool: gpu\n"))
    assert "configured" in out.stdout
    got = json.loads(kubectl("get", "ag", "beta", "-n", "t2", "-o", "json").stdout)
    assert got["spec"] == {"profile": "coder", "pool": "gpu"}
    assert got["metadata"]["generation"] == 2


def test_patch_types_and_status_subresource(kubectl: Kubectl) -> None:
    """merge and json patches apply; --subresource=status sets status; strategic gets 415."""
    kubectl("apply", "-f", "-", stdin=agent_yaml("gamma", "t3"))
    kubectl("patch", "ag", "gamma", "-n", "t3", "--type=merge", "-p", '{"spec":{"pool":"a"}}')
    kubectl(
        "patch",
        "ag",
        "gamma",
        "-n",
        "t3",
        "--type=json",
        "-p",
        '[{"op":"add","path":"/spec/capabilities","value":["go"]}]',
    )
    kubectl(
        "patch",
        "ag",
        "gamma",
        "-n",
        "t3",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Running","focus":"refactor"}}',
    )
    row = kubectl("get", "ag", "gamma", "-n", "t3", "--no-headers").stdout.split()
    assert row[:4] == ["gamma", "Running", "coder", "refactor"]
    got = json.loads(kubectl("get", "ag", "gamma", "-n", "t3", "-o", "json").stdout)
    assert got["spec"]["pool"] == "a"
    assert got["spec"]["capabilities"] == ["go"]
    assert got["metadata"]["generation"] == 3, "the status patch does not move generation"
    bad = kubectl("patch", "ag", "gamma", "-n", "t3", "-p", '{"spec":{"pool":"b"}}', check=False)
    assert bad.returncode != 0
    assert "application/strategic-merge-patch+json is not supported" in bad.stderr
    assert "merge-patch+json" in bad.stderr


def test_json_patch_test_types_and_root_replace(kubectl: Kubectl) -> None:
    """kubectl patch --type=json: a test of true against the integer generation is a 422
    naming the path (1 passes); a replace at the root "" with the object as read applies."""
    kubectl("apply", "-f", "-", stdin=agent_yaml("jp", "jp1"))
    test_op = '[{"op":"test","path":"/metadata/generation","value":%s}]'
    bad = kubectl(
        "patch", "ag", "jp", "-n", "jp1", "--type=json", "-p", test_op % "true", check=False
    )
    assert bad.returncode != 0
    assert "testing value /metadata/generation failed" in bad.stderr
    assert "The request is invalid" in bad.stderr, "a 422 Status, as kubectl words it"
    kubectl("patch", "ag", "jp", "-n", "jp1", "--type=json", "-p", test_op % "1")
    # the whole object as read, edited: it carries the resourceVersion an update needs, as
    # with the apiserver (an update of a custom resource without one is refused)
    whole = json.loads(kubectl("get", "ag", "jp", "-n", "jp1", "-o", "json").stdout)
    whole["spec"] = {"profile": "reviewer"}
    whole["metadata"]["labels"] = {"swapped": "yes"}
    root = json.dumps([{"op": "replace", "path": "", "value": whole}])
    kubectl("patch", "ag", "jp", "-n", "jp1", "--type=json", "-p", root)
    got = json.loads(kubectl("get", "ag", "jp", "-n", "jp1", "-o", "json").stdout)
    assert got["spec"] == {"profile": "reviewer"}
    assert got["metadata"]["labels"] == {"swapped": "yes"}
    assert got["metadata"]["generation"] == 2


class Lines:
    """The lines a child prints, read by a thread (a pipe's buffering defeats select)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self._thread = threading.Thread(target=self._pump, args=(proc,), daemon=True)
        self._thread.start()

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.queue.put(line)
        self.queue.put(None)

    def join(self) -> None:
        self._thread.join(timeout=5)

    def until(self, want: str, timeout: float = 15) -> str:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.queue.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if want in line:
                return line
        raise AssertionError(f"never saw {want!r}; got {self.seen}")


def test_watch_sees_added_modified_deleted(kubectl: Kubectl) -> None:
    """get -w stays open and shows ADDED, MODIFIED and DELETED as they happen."""
    watch = kubectl.popen("get", "ag", "-n", "t4", "-w", "--output-watch-events")
    lines = Lines(watch)
    try:
        time.sleep(0.5)  # let it list and start watching
        kubectl("apply", "-f", "-", stdin=agent_yaml("delta", "t4"))
        lines.until("ADDED")
        kubectl(
            "patch",
            "ag",
            "delta",
            "-n",
            "t4",
            "--subresource=status",
            "--type=merge",
            "-p",
            '{"status":{"phase":"Idle"}}',
        )
        assert "Idle" in lines.until("MODIFIED")
        kubectl("delete", "ag", "delta", "-n", "t4")
        lines.until("DELETED")
        assert watch.poll() is None, "the watch is still open"
    finally:
        watch.kill()
        watch.wait()
        lines.join()
        assert watch.stdout is not None
        watch.stdout.close()


def test_watch_honours_timeout(kubectl: Kubectl) -> None:
    """A watch with --request-timeout ends by itself instead of hanging (the generous
    subprocess timeout turns a hang into a failure)."""
    out = kubectl("get", "ag", "-n", "t5", "-w", "--request-timeout=2s", check=False, timeout=120)
    assert "Error" not in out.stdout


def test_label_selectors(kubectl: Kubectl) -> None:
    """-l with equality and set-based selectors filters the list."""
    kubectl("apply", "-f", "-", stdin=agent_yaml("l1", "t6", labels="{team: a, tier: web}"))
    kubectl("apply", "-f", "-", stdin=agent_yaml("l2", "t6", labels="{team: b}"))
    names = lambda sel: kubectl("get", "ag", "-n", "t6", "-l", sel, "-o", "name").stdout.split()  # noqa: E731
    assert names("team=a") == ["agent.fastverk.savvifi.com/l1"]
    assert names("team in (a,b)") == [
        "agent.fastverk.savvifi.com/l1",
        "agent.fastverk.savvifi.com/l2",
    ]
    assert names("team!=a,!tier") == ["agent.fastverk.savvifi.com/l2"]
    assert names("tier") == ["agent.fastverk.savvifi.com/l1"]


def test_stale_replace_conflicts(kubectl: Kubectl) -> None:
    """replace with an old resourceVersion gives kubectl's standard conflict message."""
    kubectl("apply", "-f", "-", stdin=agent_yaml("eps", "t7"))
    stale = kubectl("get", "ag", "eps", "-n", "t7", "-o", "yaml").stdout
    kubectl("patch", "ag", "eps", "-n", "t7", "--type=merge", "-p", '{"spec":{"pool":"x"}}')
    out = kubectl("replace", "-f", "-", stdin=stale, check=False)
    assert out.returncode != 0
    assert "Error from server (Conflict)" in out.stderr
    assert (
        'Operation cannot be fulfilled on agents.fastverk.savvifi.com "eps": the object has been '
        "modified; please apply your changes to the latest version and try again"
    ) in out.stderr


def test_delete_with_finalizer_waits_for_it(kubectl: Kubectl) -> None:
    """delete keeps an object with a finalizer (deletionTimestamp set) until it is removed."""
    kubectl("apply", "-f", "-", stdin=agent_yaml("zeta", "t8"))
    kubectl(
        "patch",
        "ag",
        "zeta",
        "-n",
        "t8",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":["example.com/hold"]}}',
    )
    kubectl("delete", "ag", "zeta", "-n", "t8", "--wait=false")
    ts = kubectl("get", "ag", "zeta", "-n", "t8", "-o", "jsonpath={.metadata.deletionTimestamp}")
    assert ts.stdout.endswith("Z")
    waiter = kubectl.popen("wait", "--for=delete", "ag/zeta", "-n", "t8", "--timeout=20s")
    kubectl(
        "patch",
        "ag",
        "zeta",
        "-n",
        "t8",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
    )
    out, _ = waiter.communicate(timeout=25)
    assert waiter.returncode == 0, out
    gone = kubectl("get", "ag", "zeta", "-n", "t8", check=False)
    assert "NotFound" in gone.stderr


def test_wait_for_jsonpath(kubectl: Kubectl) -> None:
    """kubectl wait --for=jsonpath returns once the status reaches the value."""
    kubectl("apply", "-f", "-", stdin=agent_yaml("eta", "t9"))
    waiter = kubectl.popen(
        "wait", "--for=jsonpath={.status.phase}=Running", "ag/eta", "-n", "t9", "--timeout=20s"
    )
    time.sleep(0.5)
    assert waiter.poll() is None, "still waiting before the status changes"
    kubectl(
        "patch",
        "ag",
        "eta",
        "-n",
        "t9",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Running"}}',
    )
    out, _ = waiter.communicate(timeout=25)
    assert waiter.returncode == 0
    assert "condition met" in out


def test_describe_and_explain(kubectl: Kubectl) -> None:
    """describe renders the object; explain reads the schema from /openapi/v3."""
    kubectl("apply", "-f", "-", stdin=agent_yaml("theta", "t10", labels="{team: q}"))
    desc = kubectl("describe", "ag", "theta", "-n", "t10").stdout
    assert "Name:         theta" in desc
    assert "team=q" in desc
    assert "Profile:  coder" in desc
    explain = kubectl("explain", "agents.spec").stdout
    assert "KIND:       Agent" in explain
    assert "resumeFrom" in explain
    assert "AgentProfile name this agent runs with." in explain


def test_deleting_task_collects_owned_agent(kubectl: Kubectl) -> None:
    """Deleting an AgentTask garbage-collects the Agent whose ownerReference names it."""
    task = """apiVersion: fastverk.savvifi.com/v1
kind: AgentTask
metadata: {name: job, namespace: t11}
spec: {objective: ship it}
"""
    kubectl("apply", "-f", "-", stdin=task)
    uid = kubectl("get", "agenttask", "job", "-n", "t11", "-o", "jsonpath={.metadata.uid}").stdout
    owned = agent_yaml("worker", "t11").replace(
        "  labels: {}\n",
        "  labels: {}\n  ownerReferences:\n"
        "  - {apiVersion: fastverk.savvifi.com/v1, kind: AgentTask,"
        f" name: job, uid: {uid}}}\n",
    )
    kubectl("apply", "-f", "-", stdin=owned)
    kubectl("delete", "agenttask", "job", "-n", "t11")
    kubectl("wait", "--for=delete", "ag/worker", "-n", "t11", "--timeout=20s")
    assert kubectl("get", "ag", "-n", "t11", "-o", "name").stdout == ""


def test_channel_needs_a_participant(kubectl: Kubectl) -> None:
    """AgentChannel participants has minItems 1: an empty list is 422 Invalid."""
    doc = """apiVersion: fastverk.savvifi.com/v1
kind: AgentChannel
metadata: {name: c, namespace: t12}
spec: {participants: []}
"""
    out = kubectl("apply", "-f", "-", stdin=doc, check=False)
    assert out.returncode != 0
    assert "is invalid" in out.stderr
    assert "spec.participants" in out.stderr


def test_watch_below_compaction_is_410(kube_daemon: Daemon, kubectl: Kubectl) -> None:
    """After compaction, a watch from an older resourceVersion is 410 Expired."""
    for i in range(3):
        kubectl("apply", "-f", "-", stdin=agent_yaml(f"c{i}", "t13"))
    rv = int(
        kubectl("get", "ag", "c2", "-n", "t13", "-o", "jsonpath={.metadata.resourceVersion}").stdout
    )
    addr = (kube_daemon.runtime_dir / "kube.addr").read_text().strip()
    kube_daemon.stop()
    db = sqlite3.connect(kube_daemon.state_dir / "objects.db")
    with db:
        db.execute("DELETE FROM events WHERE rv <= ?", (rv,))
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('compacted', ?)", (rv,))
    db.close()
    kube_daemon.start()
    assert (kube_daemon.runtime_dir / "kube.addr").read_text().strip() == addr, "port kept"
    path = (
        f"/apis/fastverk.savvifi.com/v1/namespaces/t13/agents?watch=true&resourceVersion={rv - 1}"
    )
    out = kubectl("get", "--raw", path, check=False)
    assert out.returncode != 0
    assert "Error from server (Expired)" in out.stderr
    assert "too old resource version" in out.stderr
    # the objects themselves are all still there after the restart
    assert len(kubectl("get", "ag", "-n", "t13", "-o", "name").stdout.split()) == 3


def test_api_requires_client_certificate(kube_daemon: Daemon) -> None:
    """Without the client certificate the TLS handshake fails (only kubeconfig holders get in)."""
    addr = (kube_daemon.runtime_dir / "kube.addr").read_text().strip()
    ctx = ssl.create_default_context(cafile=str(kube_daemon.state_dir / "kube" / "ca.crt"))
    with pytest.raises((ssl.SSLError, ConnectionError, urllib.error.URLError)):
        urllib.request.urlopen(f"https://{addr}/version", context=ctx, timeout=5).read()
    for name in ("ca.key", "server.key", "client.key"):
        assert (kube_daemon.state_dir / "kube" / name).stat().st_mode & 0o077 == 0


def test_crds_command_prints_five_crds() -> None:
    """`agentcoord crds` prints a CustomResourceDefinition per kind with status and columns."""
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "crds"], capture_output=True, text=True, check=True
    ).stdout
    docs = list(yaml.safe_load_all(out))
    assert sorted(d["spec"]["names"]["kind"] for d in docs) == [
        "Agent",
        "AgentChannel",
        "AgentProfile",
        "AgentTask",
        "HumanPrompt",
    ]
    agent = next(d for d in docs if d["spec"]["names"]["kind"] == "Agent")
    version = agent["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]][:4] == [
        "Phase",
        "Profile",
        "Focus",
        "Age",
    ]
    assert version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["lineage"]


def test_all_namespaces_wide_and_orphan_cascade(kubectl: Kubectl) -> None:
    """get -A -o wide adds NAMESPACE and the wide columns; --cascade=orphan keeps dependents."""
    kubectl("apply", "-f", "-", stdin=agent_yaml("w1", "t14", "  cwd: /src/app\n"))
    lines = kubectl("get", "ag", "-A", "-o", "wide").stdout.splitlines()
    assert lines[0].split() == [
        "NAMESPACE",
        "NAME",
        "PHASE",
        "PROFILE",
        "FOCUS",
        "AGE",
        "SESSION",
        "CWD",
    ]
    assert any(line.split()[:2] == ["t14", "w1"] and "/src/app" in line for line in lines)
    task = (
        "apiVersion: fastverk.savvifi.com/v1\nkind: AgentTask\n"
        "metadata: {name: k, namespace: t14}\nspec: {objective: o}\n"
    )
    kubectl("apply", "-f", "-", stdin=task)
    uid = kubectl("get", "at", "k", "-n", "t14", "-o", "jsonpath={.metadata.uid}").stdout
    ref = (
        '{"metadata":{"ownerReferences":[{"apiVersion":"fastverk.savvifi.com/v1",'
        f'"kind":"AgentTask","name":"k","uid":"{uid}"}}]}}}}'
    )
    kubectl("patch", "ag", "w1", "-n", "t14", "--type=merge", "-p", ref)
    kubectl("delete", "at", "k", "-n", "t14", "--cascade=orphan")
    time.sleep(0.5)  # give a (wrong) collector time to act
    refs = kubectl("get", "ag", "w1", "-n", "t14", "-o", "jsonpath={.metadata.ownerReferences}")
    assert refs.stdout == ""


def test_kubeconfig_without_daemon_fails_clearly(tmp_path: Path) -> None:
    """`agentcoord kubeconfig` with no daemon running says so and exits 69 (EX_UNAVAILABLE)."""
    env = make_env(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "kubeconfig"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 69
    assert "no daemon is running" in out.stderr
