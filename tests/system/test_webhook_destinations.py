"""Where a webhook may go: public addresses by default, and what the operator allows.

A tenant must not turn the sandbox into a client of the network it runs in (SSRF):
loopback, private, link-local and other non-public destinations are refused at
registration when the URL names them, and at delivery after the name is resolved,
connecting only to an address that passed the check."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from sandex.api_adapter.cli.parser import parser
from sandex.api_adapter.cli.serve import serve_settings
from sandex.api_adapter.webhook_delivery import NOT_DELIVERED
from sandex.engine.config.destinations import Destinations
from sandex.engine.config.settings import Settings
from tests.conftest import make_settings
from tests.support.transfer_helpers import problem
from tests.support.webhook_receivers import LOCAL, start_deliverer, wait

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
def test_a_non_public_destination_is_refused_at_registration(http_sandbox: Any, host: str) -> None:
    r = http_sandbox.post("/v2/sandbox/webhooks", {"url": f"http://{host}:8080/hook"})
    body = problem(r, 400)
    assert body["meta"] == {"field": "url"}
    assert "webhook_allowed_hosts" in body["detail"]
    problem(http_sandbox.get("/v2/sandbox/webhooks"), 404)


@pytest.mark.parametrize("url", PUBLIC_URLS)
def test_a_public_destination_is_registered(http_sandbox: Any, url: str) -> None:
    r = http_sandbox.post("/v2/sandbox/webhooks", {"url": url})
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
def test_a_malformed_url_is_refused(http_sandbox: Any, url: str) -> None:
    assert problem(http_sandbox.post("/v2/sandbox/webhooks", {"url": url}), 400)["meta"] == {
        "field": "url"
    }


def _allowing(hosts: list[str], accepted: list[str], refused: list[str]) -> Any:
    """A case of the operator's allowed `hosts`: the test's world's setting."""
    allowed = pytest.mark.sandex(settings={"webhook_allowed_hosts": hosts})
    return pytest.param(accepted, refused, marks=allowed, id="-".join(hosts))


@pytest.mark.parametrize(
    ("accepted", "refused"),
    [
        _allowing(["127.0.0.1"], ["127.0.0.1", "localhost", "2130706433"], ["127.0.0.2", "[::1]"]),
        _allowing(["localhost"], ["localhost", "LOCALHOST."], ["127.0.0.1", "10.0.0.1"]),
        _allowing(["10.0.0.0/8", "::1"], ["10.1.2.3", "[::1]", "localhost"], ["192.168.1.1"]),
    ],
)
def test_the_operator_allows_chosen_hosts(
    http_sandbox: Any, accepted: list[str], refused: list[str]
) -> None:
    sb = http_sandbox
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
    settings = serve_settings(args)
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


# -- at delivery -------------------------------------------------------------------------


def _resolver(answers: list[list[str]]) -> Any:
    """A resolver giving each answer in turn (the last one again), as a rebinding DNS would."""
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return answers[min(len(asked), len(answers)) - 1]

    resolve.asked = asked  # type: ignore[attr-defined]
    return resolve


def test_a_name_that_resolves_to_a_refused_address_is_never_connected(
    sandbox: Any, receivers: Any
) -> None:
    receiver = receivers()
    url = f"http://hooks.example:{receiver.port}/hook"
    assert sandbox.post("/v2/sandbox/webhooks", {"url": url}).status_code == 200
    sandbox.deposit("BTC", "1")
    resolve = _resolver([["127.0.0.1"]])
    d = start_deliverer(sandbox, resolve=resolve)
    try:
        wait(lambda: sandbox.get("/v2/sandbox/webhooks").json()["failed_attempts"] >= 2)
    finally:
        d.stop()
    assert receiver.attempts == 0
    assert resolve.asked[0] == "hooks.example"
    assert sandbox.get("/v2/sandbox/webhooks").json()["last_error"] == NOT_DELIVERED


def test_the_connection_goes_to_the_checked_address_whatever_dns_says_next(
    sandbox: Any,
) -> None:
    seen: list[httpx.Request] = []

    def receiver(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(503 if len(seen) == 1 else 204)

    assert sandbox.post("/v2/sandbox/webhooks", {"url": "https://hooks.example/h"}).is_success
    sandbox.deposit("BTC", "1")
    public = "93.184.216.34"
    # checked and used; then rebound to loopback; then both, of which only one may be used
    resolve = _resolver([[public], ["127.0.0.1"], ["127.0.0.1", public]])
    d = start_deliverer(sandbox, resolve=resolve, transport=httpx.MockTransport(receiver))
    try:
        wait(lambda: sandbox.get("/v2/sandbox/webhooks").json()["undelivered_webhooks"] == 0)
    finally:
        d.stop()
    assert len(resolve.asked) == 3
    assert [str(r.url) for r in seen] == [f"https://{public}/h"] * 2
    for request in seen:
        assert request.headers["Host"] == "hooks.example"
        assert request.extensions["sni_hostname"] == "hooks.example"


def test_an_allowed_network_admits_the_names_that_resolve_into_it(
    sandbox_factory: Any, receivers: Any
) -> None:
    sandbox = sandbox_factory(webhook_allowed_hosts=LOCAL)
    receiver = receivers()
    url = f"http://localhost:{receiver.port}/hook"
    assert sandbox.post("/v2/sandbox/webhooks", {"url": url}).status_code == 200
    sandbox.deposit("BTC", "1")
    d = start_deliverer(sandbox)  # 127.0.0.1 allowed, resolved by the system
    try:
        wait(lambda: len(receiver.received) == 1)
    finally:
        d.stop()
    headers, _ = receiver.received[0]
    assert headers["Host"] == f"localhost:{receiver.port}"


def test_delivery_checks_the_resolved_address_even_when_registration_passed(
    sandbox_factory: Any, receivers: Any
) -> None:
    # Registered under a policy that allowed the name; delivered under one that does not
    # (as a name registered as public and later pointed at loopback would be).
    sb = sandbox_factory(webhook_allowed_hosts=["localhost"])
    receiver = receivers()
    assert sb.post(
        "/v2/sandbox/webhooks", {"url": f"http://localhost:{receiver.port}/h"}
    ).is_success
    sb.deposit("BTC", "1")
    d = start_deliverer(sb, allowed_hosts=())
    try:
        wait(lambda: sb.get("/v2/sandbox/webhooks").json()["failed_attempts"] >= 2)
    finally:
        d.stop()
    assert receiver.attempts == 0
    assert sb.get("/v2/sandbox/webhooks").json()["last_error"] == NOT_DELIVERED


def test_a_redirect_is_not_followed(sandbox_factory: Any, receivers: Any) -> None:
    inner = receivers()
    outer = receivers(status=307, headers={"Location": inner.url})
    sb = sandbox_factory(webhook_allowed_hosts=LOCAL)
    assert sb.post("/v2/sandbox/webhooks", {"url": outer.url}).is_success
    sb.deposit("BTC", "1")
    d = start_deliverer(sb)
    try:
        wait(lambda: sb.get("/v2/sandbox/webhooks").json()["failed_attempts"] >= 2)
    finally:
        d.stop()
    assert inner.attempts == 0
    assert sb.get("/v2/sandbox/webhooks").json()["last_error"] == "failed: HTTP 307"


def test_a_proxy_from_the_environment_is_not_used(
    sandbox_factory: Any, receivers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A proxy would connect to the name itself, past every check.
    proxy, receiver = receivers(), receivers()
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    sb = sandbox_factory(webhook_allowed_hosts=LOCAL)
    assert sb.post("/v2/sandbox/webhooks", {"url": receiver.url}).is_success
    sb.deposit("BTC", "1")
    d = start_deliverer(sb)
    try:
        wait(lambda: len(receiver.received) == 1)
    finally:
        d.stop()
    assert proxy.attempts == 0


def _certificate(folder: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for `name` and its key (openssl's command line)."""
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-keyout", str(key), "-out", str(cert), "-subj", f"/CN={name}"]
        + ["-addext", f"subjectAltName=DNS:{name}"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_checks_the_name_on_a_connection_made_to_the_checked_address(
    sandbox_factory: Any, receivers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = _certificate(tmp_path, "hooks.test")
    other, _ = _certificate(tmp_path, "elsewhere.test")
    receiver = receivers()
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    receiver.server.socket = tls.wrap_socket(receiver.server.socket, server_side=True)
    results = []
    for trusted in (cert, other):  # the receiver's own certificate, then another name's
        monkeypatch.setenv("SSL_CERT_FILE", str(trusted))
        sb = sandbox_factory(f"{trusted.stem}.db", webhook_allowed_hosts=LOCAL)
        url = f"https://hooks.test:{receiver.port}/hook"
        assert sb.post("/v2/sandbox/webhooks", {"url": url}).is_success
        sb.deposit("BTC", "1")
        d = start_deliverer(sb, resolve=_resolver([["127.0.0.1"]]))
        try:
            wait(
                lambda sb=sb: (
                    sb.get("/v2/sandbox/webhooks").json()["undelivered_webhooks"] == 0
                    or sb.get("/v2/sandbox/webhooks").json()["failed_attempts"] >= 2
                )
            )
        finally:
            d.stop()
        results.append(sb.get("/v2/sandbox/webhooks").json())
    delivered, refused = results
    assert delivered["undelivered_webhooks"] == 0
    assert refused["undelivered_webhooks"] == 1 and refused["last_error"] == NOT_DELIVERED
    assert len(receiver.received) == 1
    headers, _ = receiver.received[0]
    assert headers["Host"] == f"hooks.test:{receiver.port}"
