"""External NATS settings: validation with clear messages, redaction, host-qualified names."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcoord.errors import ConfigError
from agentcoord.kernel.config import load_config
from agentcoord.kernel.directory import MemoryDirectory
from agentcoord.kernel.natsremote import host_qualifier, nats_target, redact, split_seeds

ENV = {"HOME": "/h", "XDG_RUNTIME_DIR": "/r", "USER": "ann"}


def _load(**env: str) -> object:
    return load_config({}, {**ENV, **env}, uid=1000)


def test_seeds_split_and_default_scheme() -> None:
    """A comma-separated list gives one URL per seed; a bare host:port becomes nats://."""
    seeds = split_seeds("nats://a:4222, 10.0.0.2:4222 ,tls://c.example:4443")
    assert seeds == ["nats://a:4222", "nats://10.0.0.2:4222", "tls://c.example:4443"]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://a:4222", "scheme must be one of"),
        ("nats://a:notaport", "is not a valid URL"),
        (" , ", "has no server URL"),
        ("nats://:4222", "has no host"),
    ],
)
def test_bad_seed_urls_are_refused(url: str, message: str) -> None:
    """Malformed seeds fail at load time with a message about nats_url."""
    with pytest.raises(ConfigError, match=message):
        _load(AGENTCOORD_NATS_URL=url)


def test_redact_hides_passwords_and_tokens() -> None:
    """Passwords and bare tokens in any seed are replaced; user names and hosts stay."""
    url = "nats://ann:pw1@a:4222,nats://tok3n@b:4222,nats://c:4222"
    assert redact(url) == "nats://ann:***@a:4222,nats://***@b:4222,nats://c:4222"


def test_bad_seed_message_does_not_leak_password() -> None:
    """Even the error for a malformed seed shows the redacted form."""
    with pytest.raises(ConfigError) as info:
        _load(AGENTCOORD_NATS_URL="http://ann:very-secret@a:4222")
    assert "very-secret" not in str(info.value)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"AGENTCOORD_NATS_REPLICAS": "0"}, "between 1 and 5"),
        ({"AGENTCOORD_NATS_REPLICAS": "3"}, "needs nats_url"),
        ({"AGENTCOORD_NATS_USER": "u"}, "nats_user only applies with nats_url"),
        ({"AGENTCOORD_HOST_ID": "build.box"}, "no dots"),
        ({"AGENTCOORD_HOST_ID": "Build"}, "lowercase"),
        (
            {"AGENTCOORD_NATS_URL": "nats://u:p@a:4222", "AGENTCOORD_NATS_USER": "u"},
            "choose one NATS credential",
        ),
        (
            {"AGENTCOORD_NATS_URL": "nats://a:4222", "AGENTCOORD_NATS_PASSWORD": "p"},
            "nats_password is set but nats_user is not",
        ),
        (
            {"AGENTCOORD_NATS_URL": "nats://a:4222", "AGENTCOORD_NATS_TLS_CERT": "/etc/hosts"},
            "go together",
        ),
        (
            {"AGENTCOORD_NATS_URL": "nats://a:4222", "AGENTCOORD_NATS_CREDS": "/no/such.creds"},
            "nats_creds: cannot read /no/such.creds",
        ),
    ],
)
def test_bad_combinations_name_the_key(env: dict[str, str], message: str) -> None:
    """Each bad setting or combination is refused with a message naming what to fix."""
    with pytest.raises(ConfigError, match=message):
        _load(**env)


def test_toml_fields_and_target_options(tmp_path: Path) -> None:
    """Fields load from the TOML file; the target carries the credential options and TLS."""
    seed = tmp_path / "u.nk"
    seed.write_text("SUAEXAMPLE\n")
    conf = tmp_path / "c.toml"
    conf.write_text(
        'nats_url = "tls://n1:4222,tls://n2:4222"\n'
        "nats_replicas = 3\n"
        f'nats_nkey_seed = "{seed}"\n'
        'host_id = "build-box"\n'
    )
    cfg = load_config({}, {**ENV, "AGENTCOORD_CONFIG": str(conf)}, uid=1000)
    assert cfg.nats_replicas == 3
    target = nats_target(cfg)
    assert target.servers == ["tls://n1:4222", "tls://n2:4222"]
    assert target.options["nkeys_seed"] == str(seed)
    assert target.options["tls"] is not None  # tls:// seeds get a default context
    assert host_qualifier(cfg) == "build-box"


def test_host_qualifier_defaults_to_the_short_hostname() -> None:
    """host_id defaults to the short hostname, made name-safe; embedded: no suffix."""
    external = load_config({"nats_url": "nats://a:4222"}, ENV, uid=1000)
    assert host_qualifier(external, "Build_Box 2.example.com") == "build-box-2"
    assert host_qualifier(load_config({}, ENV, uid=1000), "anything") is None


async def test_directory_names_carry_the_host() -> None:
    """Session agents get ``<dir>-<n>--<host>``, counted per host."""
    d = MemoryDirectory("host-a")
    assert await d.session_agent((1, 1.0), None, "/w/proj", "proj") == "proj-1--host-a"
    assert await d.session_agent((2, 1.0), None, "/x/proj", "proj") == "proj-2--host-a"
    assert await MemoryDirectory().session_agent((1, 1.0), None, "/w/proj", "proj") == "proj-1"
