"""Config precedence (flags > env > TOML > defaults) and address validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcoord.errors import ConfigError
from agentcoord.kernel.config import load_config, parse_http_addr

pytestmark = pytest.mark.unit


def test_defaults_follow_xdg() -> None:
    """Without overrides: $XDG_STATE_HOME/agentcoord and $XDG_RUNTIME_DIR/agentcoord."""
    env = {"HOME": "/h", "XDG_STATE_HOME": "/s", "XDG_RUNTIME_DIR": "/r", "USER": "ann"}
    cfg = load_config({}, env, uid=1000)
    assert cfg.state_dir == Path("/s/agentcoord")
    assert cfg.runtime_dir == Path("/r/agentcoord")
    assert cfg.http_addr == "127.0.0.1:7420"
    assert cfg.user == "ann"


def test_runtime_fallback_without_xdg_runtime_dir() -> None:
    """No $XDG_RUNTIME_DIR: /tmp/agentcoord-$UID."""
    cfg = load_config({}, {"HOME": "/h"}, uid=1234)
    assert cfg.runtime_dir == Path("/tmp/agentcoord-1234")
    assert cfg.state_dir == Path("/h/.local/state/agentcoord")


def test_precedence_flags_env_file(tmp_path: Path) -> None:
    """A flag beats the environment, which beats the TOML file."""
    conf = tmp_path / "c.toml"
    conf.write_text('state_dir = "/from-file"\nruntime_dir = "/rt-file"\nhttp_addr = ":0"\n')
    env = {"HOME": "/h", "AGENTCOORD_CONFIG": str(conf), "AGENTCOORD_RUNTIME_DIR": "/rt-env"}
    cfg = load_config({"state_dir": "/from-flag"}, env, uid=1)
    assert cfg.state_dir == Path("/from-flag")
    assert cfg.runtime_dir == Path("/rt-env")
    assert cfg.http_addr == ":0"
    assert cfg.http_port == 0
    assert cfg.http_host == "127.0.0.1"


def test_config_flag_names_the_file(tmp_path: Path) -> None:
    """--config (the config_file flag) is read as the file, not refused as a key."""
    conf = tmp_path / "c.toml"
    conf.write_text('http_addr = "127.0.0.1:0"\n')
    cfg = load_config({"config_file": str(conf)}, {"HOME": "/h"}, uid=1)
    assert cfg.config_file == conf
    assert cfg.http_addr == "127.0.0.1:0"


def test_bad_toml_and_unknown_key_are_errors(tmp_path: Path) -> None:
    """A malformed config file or an unknown key fails with a clear ConfigError."""
    bad = tmp_path / "bad.toml"
    bad.write_text("state_dir = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config({"config_file": str(bad)}, {"HOME": "/h"}, uid=1)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("colour = 'blue'\n")
    with pytest.raises(ConfigError, match="unknown config key 'colour'"):
        load_config({"config_file": str(unknown)}, {"HOME": "/h"}, uid=1)


@pytest.mark.parametrize(
    "addr", ["0.0.0.0:7420", "192.168.1.2:80", "example.com:80", "7420", "[::]:1"]
)
def test_non_loopback_or_malformed_addr_refused(addr: str) -> None:
    """The HTTP port is never bound off loopback, and bad addresses are refused."""
    with pytest.raises(ConfigError):
        parse_http_addr(addr)


@pytest.mark.parametrize(
    ("addr", "expect"),
    [(":0", ("127.0.0.1", 0)), ("localhost:9", ("127.0.0.1", 9)), ("[::1]:5", ("::1", 5))],
)
def test_loopback_addrs_parse(addr: str, expect: tuple[str, int]) -> None:
    """Loopback forms parse to host and port."""
    assert parse_http_addr(addr) == expect


def test_store_choice_and_kubeconfig(tmp_path: Path) -> None:
    """store defaults to sqlite; AGENTCOORD_STORE/--store pick kubernetes; the kubeconfig is
    the flag, else the first $KUBECONFIG file, else ~/.kube/config; a bad store is refused."""
    cfg = load_config({}, {"HOME": "/h"}, uid=1)
    assert (cfg.store, cfg.kubeconfig, cfg.kube_namespace) == (
        "sqlite",
        Path("/h/.kube/config"),
        "default",
    )
    env = {"HOME": "/h", "AGENTCOORD_STORE": "kubernetes", "KUBECONFIG": "/k/a:/k/b"}
    cfg = load_config({}, env, uid=1)
    assert (cfg.store, cfg.kubeconfig) == ("kubernetes", Path("/k/a"))
    conf = tmp_path / "c.toml"
    conf.write_text('store = "kubernetes"\nkube_namespace = "agents"\n')
    cfg = load_config({"kubeconfig": "/flag/kc"}, {"HOME": "/h", "AGENTCOORD_CONFIG": str(conf)})
    assert (cfg.store, cfg.kubeconfig, cfg.kube_namespace) == (
        "kubernetes",
        Path("/flag/kc"),
        "agents",
    )
    with pytest.raises(ConfigError, match="not one of sqlite, kubernetes"):
        load_config({"store": "etcd"}, {"HOME": "/h"}, uid=1)
