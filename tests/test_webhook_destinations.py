"""Where a webhook may go: public addresses by default, and what the operator allows.

A tenant must not turn the sandbox into a client of the network it runs in (SSRF):
loopback, private, link-local and other non-public destinations are refused at
registration when the URL names them, and at delivery after the name is resolved,
connecting only to an address that passed the check."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from api_adapter.cli import _settings, parser
from engine.destinations import Destinations
from engine.settings import Settings
from tests.conftest import make_settings
from tests.transfer_helpers import problem

# Hosts that reach this machine or its networks, in the forms a resolver accepts.
REFUSED_HOSTS = [
    "127.0.0.1",
    "127.0.0.2",
    "localhost",
    "LocalHost.",
    "api.localhost",
    "[::1]",
    "0x7f000001",
    "2130706433",
    "0177.0.0.1",
    "127.1",
    "0",
    "0.0.0.0",
    "[::]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[2002:7f00:1::]",  # 6to4 around 127.0.0.1
    "169.254.169.254",  # cloud metadata
    "[fe80::1]",
    "[fe80::1%25eth0]",
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.1",
    "100.64.0.1",  # shared address space (CGNAT)
    "[fc00::1]",
    "[fec0::1]",
    "224.0.0.1",
    "[ff02::1]",
    "240.0.0.1",
    "255.255.255.255",
    "192.0.2.1",  # documentation
    "[2001:db8::1]",
]
PUBLIC_URLS = [
    "http://8.8.8.8/hook",
    "https://hooks.example.com/hook",
    "http://[2606:4700:4700::1111]:8080/hook",
    "https://bücher.example/hook",
]


@pytest.mark.parametrize("host", REFUSED_HOSTS)
def test_a_non_public_destination_is_refused_at_registration(sandbox: Any, host: str) -> None:
    r = sandbox.post("/v2/sandbox/webhooks", {"url": f"http://{host}:8080/hook"})
    body = problem(r, 400)
    assert body["meta"] == {"field": "url"}
    assert "webhook_allowed_hosts" in body["detail"]
    problem(sandbox.get("/v2/sandbox/webhooks"), 404)


@pytest.mark.parametrize("url", PUBLIC_URLS)
def test_a_public_destination_is_registered(sandbox: Any, url: str) -> None:
    r = sandbox.post("/v2/sandbox/webhooks", {"url": url})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    "url",
    [
        "http://exa mple.com/hook",
        "http://1.2.3.256/hook",
        "http://example.123/hook",
        "http://a..b/hook",
        "http://example.com:0/hook",
        "http://example.com:99999/hook",
        "http://example.com\\@127.0.0.1/hook",
        "http://example.com/\nhook",
        "file:///etc/passwd",
        "gopher://example.com/",
    ],
)
def test_a_malformed_url_is_refused(sandbox: Any, url: str) -> None:
    assert problem(sandbox.post("/v2/sandbox/webhooks", {"url": url}), 400)["meta"] == {
        "field": "url"
    }


@pytest.mark.parametrize(
    ("allowed", "accepted", "refused"),
    [
        (["127.0.0.1"], ["127.0.0.1", "localhost", "2130706433"], ["127.0.0.2", "[::1]"]),
        (["localhost"], ["localhost", "LOCALHOST."], ["127.0.0.1", "10.0.0.1"]),
        (["10.0.0.0/8", "::1"], ["10.1.2.3", "[::1]", "localhost"], ["192.168.1.1"]),
    ],
)
def test_the_operator_allows_chosen_hosts(
    sandbox_factory: Any, allowed: list[str], accepted: list[str], refused: list[str]
) -> None:
    sb = sandbox_factory(webhook_allowed_hosts=allowed)
    for host in accepted:
        r = sb.post("/v2/sandbox/webhooks", {"url": f"http://{host}:9/hook"})
        assert r.status_code == 200, (host, r.text)
    for host in refused:
        problem(sb.post("/v2/sandbox/webhooks", {"url": f"http://{host}:9/hook"}), 400)


def test_the_allow_setting_and_flag_refuse_what_they_cannot_read() -> None:
    for entry in ["127.1", "not a host", "10.0.0.0/33", "1.2.3.256"]:
        with pytest.raises(ValidationError):
            make_settings(webhook_allowed_hosts=[entry])
    args = parser().parse_args(
        ["serve", "--webhook-allow", "127.0.0.1, localhost", "--webhook-allow", "::1"]
    )
    settings = _settings(args)
    assert isinstance(settings, Settings)
    assert settings.webhook_allowed_hosts == ["127.0.0.1", "localhost", "::1"]
    with pytest.raises(SystemExit):
        parser().parse_args(["serve", "--webhook-allow", "0x7f000001"])


def test_the_policy_judges_embedded_and_mapped_addresses() -> None:
    allow_local = Destinations(["127.0.0.0/8"])
    assert allow_local.refusal("::ffff:127.0.0.1") is None  # mapped: the IPv4 address
    assert allow_local.refusal("::1") is not None
    assert Destinations().refusal("2002:0808:0808::1") is None  # 6to4 around 8.8.8.8
    assert Destinations().refusal("2002:0a00:0001::1") is not None  # ... around 10.0.0.1
