"""The docs page works on a machine with no internet: Swagger UI (`/docs`) loads its
scripts and styles from sandex itself, and a real browser that can reach nothing but
the server draws every operation."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.server_helpers import Server

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PAGES = ("/docs", "/docs/oauth2-redirect")
# what a page loads: scripts, styles, images, frames
RESOURCE = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*?\b(?:src|href)\s*=\s*["']([^"']+)""")


def test_the_docs_pages_load_nothing_from_another_host(http_sandbox: Any) -> None:
    for page in PAGES:
        r = http_sandbox.http.get(page)
        assert r.status_code == 200, page
        assert "http://" not in r.text and "https://" not in r.text, page
        for url in RESOURCE.findall(r.text):
            assert url.startswith("/") and not url.startswith("//"), (page, url)
            asset = http_sandbox.http.get(
                str(r.url.join(url))
            )  # from the host's root, as a browser
            assert asset.status_code == 200 and len(asset.content) > 1000, url


def _chromium(url: str, profile: Path, net_log: Path) -> str:
    """The page's DOM once drawn, loaded by a browser that can reach only loopback: names
    resolve to nothing but 127.0.0.1, and anything else goes to a proxy that is not there."""
    assert CHROMIUM is not None
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--proxy-server=http://127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        f"--user-data-dir={profile}",
        f"--log-net-log={net_log}",
        "--virtual-time-budget=20000",
        "--dump-dom",
    ]
    done = subprocess.run(
        [CHROMIUM, *flags, url], capture_output=True, text=True, timeout=120, check=False
    )
    return done.stdout


def _page_requests(net_log: Path) -> list[str]:
    """Every URL the page itself asked for (the browser's own background requests, made
    with no initiator, are left out: the flags above send them nowhere)."""
    log = json.loads(net_log.read_text())
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for event in log["events"]:
        params = event.get("params") or {}
        if event["type"] != start_job or "url" not in params:
            continue
        if params.get("initiator") != "not an origin" or params.get("request_type") != "other":
            urls.append(params["url"])
    return urls


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not found (make browser installs it)")
def test_the_docs_draw_every_operation_in_a_browser_with_no_network(tmp_path: Path) -> None:
    server = Server(tmp_path / "docs.db", "--clock", "manual")
    try:
        _docs_drawn_offline(server, tmp_path)
    finally:
        server.stop()


def _docs_drawn_offline(server: Server, tmp_path: Path) -> None:
    operations = [
        op["operationId"]
        for ops in httpx.get(f"{server.base}/openapi.json").json()["paths"].values()
        for op in ops.values()
    ]
    assert len(operations) > 40
    net_log = tmp_path / "net.json"
    # the create-order operation opened (deep link), its example body drawn
    dom = _chromium(f"{server.base}/docs#/Orders/CreateOrder", tmp_path / "profile", net_log)
    text = html.unescape(re.sub(r"<[^>]+>", "", dom))
    assert '"base_amount": "0.01"' in text and '"market": "BTCUSD"' in text, text[:3000]
    assert not re.search(r"[0-9]{20}", text), "an example made up from a pattern"
    missing = [op for op in operations if not re.search(f'id="operations-[^"]*-{op}"', dom)]
    assert not missing, f"/docs does not show {missing}"
    requests = _page_requests(net_log)
    assert f"{server.base}/openapi.json" in requests
    elsewhere = [u for u in requests if not u.startswith(f"{server.base}/")]
    assert not elsewhere, f"/docs asked another host for {elsewhere}"
    for url in RESOURCE.findall(dom):
        assert not re.match(r"(https?:)?//", url) or url.startswith(server.base), url
    assert httpx.get(f"{server.base}/redoc").status_code == 404  # it would need the internet
