"""The console (docs/console.md) through the world's app: sign-in and its session, the
form token on every action, the Content-Security-Policy, each page's content, live
updates' stream, time travel, and hostile text rendered inert."""

from __future__ import annotations

import re
import threading
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import pytest
from starlette.testclient import TestClient

from sandex.engine.domain.sandbox_snapshots import TakeSnapshot
from sandex.engine.read import timeline
from tests.support.identity_helpers import PERSON, person
from tests.support.trading_helpers import STILL, get_order, limit, placed, still
from tests.support.transfer_helpers import quote, withdraw

HOSTILE = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>']
LONG_KEY = "k" * 100
START_MS = 1704067200000  # the sandboxes' start, 2024-01-01T00:00:00Z


class Browser:
    """A signed-in browser of one sandbox's console: its cookies and its form token."""

    def __init__(self, sb: Any, client_id: str, secret: str) -> None:
        self.http = sb.http
        page = self.http.get("/console/signin")
        assert page.status_code == 200, page.text
        token = _form_token(page.text)
        self.answer = self.http.post(
            "/console/signin",
            data={"csrf": token, "client_id": client_id, "client_secret": secret},
            follow_redirects=False,
        )
        self.form_token = ""
        if self.answer.status_code == 303:
            self.form_token = _form_token(self.get("/console/controls").text)

    def get(self, path: str, **params: Any) -> Any:
        return self.http.get(path, params=params or None)

    def act(self, action: str, *, token: str | None = None, **form: str) -> Any:
        data = {"action": action, **form}
        if token is None:
            data["csrf"] = self.form_token
        elif token:
            data["csrf"] = token
        return self.http.post("/console/controls", data=data)


def _form_token(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, html[:500]
    return found.group(1)


@pytest.fixture
def sb(request: pytest.FixtureRequest) -> Any:
    """A still world of the plugin's (`http_sandbox`): the console is HTTP, pages and
    forms, so its tests drive it as a user's suite would."""
    request.node.add_marker(pytest.mark.sandex(settings=STILL))
    return request.getfixturevalue("http_sandbox")


@pytest.fixture
def app_sb(sandbox_factory: Any) -> Any:
    """A still in-process sandbox, for the tests that reach behind the console's HTTP:
    the engine's log position, the app's state or its stack (docs/testing.md's table)."""
    return still(sandbox_factory)


def _signed_in(sandbox: Any) -> Browser:
    browser = Browser(sandbox, sandbox.client_id, sandbox.client_secret)
    assert browser.answer.status_code == 303, browser.answer.text
    return browser


@pytest.fixture
def operator(sb: Any) -> Browser:
    return _signed_in(sb)


@pytest.fixture
def app_operator(app_sb: Any) -> Browser:
    return _signed_in(app_sb)


def _gtt_buy(sb: Any, price: str = "30000", **extra: Any) -> dict[str, Any]:
    sb.deposit("USD", "100000")
    body = limit("BUY", price, "0.1", time_in_force="GTT", **extra)
    body["expiration_date"] = str(START_MS + 120_000)
    return placed(sb, **body)


# -- sign-in, session, CSP, CSRF ----------------------------------------------------


def test_sign_in_holds_the_session_in_an_httponly_same_site_cookie(sb: Any) -> None:
    browser = Browser(sb, sb.client_id, sb.client_secret)
    assert browser.answer.status_code == 303
    cookie = browser.answer.headers["set-cookie"]
    assert "sandex_console=" in cookie
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    # the bearer token never reaches the browser: not in the cookie, nor in a page
    token = sb.headers["Authorization"].split()[1].split(".")[0]
    page = browser.get("/console/timeline")
    assert page.status_code == 200
    assert token + "." not in page.text and "sdx1." not in cookie


def test_a_refused_secret_signs_nobody_in(sb: Any) -> None:
    browser = Browser(sb, sb.client_id, "wrong")
    assert browser.answer.status_code == 401
    assert "refused" in browser.answer.text
    page = browser.http.get("/console/timeline", follow_redirects=True)
    assert page.url.path.endswith("/console/signin")


def test_a_sign_in_without_its_form_token_is_refused(sb: Any) -> None:
    answer = sb.http.post(
        "/console/signin", data={"client_id": "sandex", "client_secret": "sandex-secret"}
    )
    assert answer.status_code == 403
    assert "sandex_console=" not in answer.headers.get("set-cookie", "")


def test_every_page_has_a_csp_of_its_own_assets_only(operator: Browser) -> None:
    for path in ("/console/signin", "/console/timeline", "/console/markets"):
        csp = operator.get(path).headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp


def test_an_action_without_the_form_token_is_refused_and_does_nothing(
    sb: Any, operator: Browser
) -> None:
    before = sb.get("/v2/sandbox/clock").json()["now"]
    for token in ("", "forged"):
        answer = operator.act("advance", token=token, seconds="3600")
        assert answer.status_code == 403, answer.text
    assert sb.get("/v2/sandbox/clock").json()["now"] == before


def test_pages_reference_no_other_host(sb: Any, operator: Browser) -> None:
    order = _gtt_buy(sb)
    pages = [
        "/console/timeline",
        "/console/orders",
        f"/console/orders/{order['profile_id']}/{order['id']}",
        "/console/profiles",
        "/console/transfers",
        "/console/markets",
        "/console/requests",
        "/console/webhooks",
        "/console/controls",
        "/console/events/1",
    ]
    for path in pages:
        page = operator.get(path)
        assert page.status_code == 200, (path, page.text[:300])
        assert not re.search(r"(?:src|href|action|sse-connect|hx-get)=\"(?:[a-z]+:)?//", page.text)
        assert "http://" not in page.text and "https://" not in page.text, path


def test_the_vendored_scripts_are_served_with_their_licences(operator: Browser) -> None:
    script = operator.get("/console/assets/htmx.min.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith(
        "text/javascript"
    )
    assert operator.get("/console/assets/htmx-ext-sse.min.js").status_code == 200
    assert "Permission" in operator.get("/console/assets/LICENSE-htmx.txt").text
    assert operator.get("/console/assets/..%2Fpages.py").status_code == 404


def test_every_page_declares_its_icon_and_serves_it(sb: Any, operator: Browser) -> None:
    """A page without an icon of its own makes the browser ask the origin's /favicon.ico,
    which the API answers 404: each page names the console's, and that answers."""
    pages = ["/console/signin", "/console/timeline", "/console/markets", "/console/controls"]
    for path in pages:
        page = operator.get(path)
        assert page.status_code == 200, path
        icons = re.findall(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">', page.text)
        # the console's own path, under a world's prefix in a world (`--world fresh`)
        assert icons == [_path_under_prefix(sb, "/console/assets/favicon.svg")], path
    icon = operator.get("/console/assets/favicon.svg")
    assert icon.status_code == 200
    assert icon.headers["content-type"] == "image/svg+xml"
    assert icon.text.startswith("<svg") and "<script" not in icon.text
    assert len(icon.content) < 1024


# -- timeline ------------------------------------------------------------------------


def test_the_timeline_shows_the_order_newest_first_and_opens_its_json(
    sb: Any, operator: Browser
) -> None:
    order = _gtt_buy(sb)
    page = operator.get("/console/timeline").text
    positions = [
        int(p) for p in re.findall(r'data-testid="timeline-event" data-position="(\d+)"', page)
    ]
    assert positions == sorted(positions, reverse=True)
    assert 'data-type="OrderPlaced"' in page
    placed_at = re.search(r'data-position="(\d+)" data-type="OrderPlaced"', page)
    assert placed_at
    shown = operator.get(f"/console/events/{placed_at.group(1)}").text
    assert order["id"] in shown
    # filtered by the order: only its events
    only = operator.get("/console/timeline", entity=order["id"]).text
    assert 'data-type="OrderPlaced"' in only and 'data-type="ClientCreated"' not in only


def test_the_operators_timeline_keeps_the_events_naming_every_filter_given(
    sb: Any, operator: Browser
) -> None:
    """Customer, profile and entity given together are each a condition (only the first
    given was applied): of two orders of one tenant's profile, only the one named."""
    headers, tenant = sb.tenant()
    sb.deposit("USD", "100000", headers=headers)
    named, other = (
        placed(sb, headers=headers, **limit("BUY", price, "0.1")) for price in ("30000", "29000")
    )
    filters = {"profile": named["profile_id"], "entity": named["id"]}
    for given in (filters, {"customer": tenant["customer_id"], **filters}):
        page = operator.get("/console/timeline", **given).text
        assert 'data-type="OrderPlaced"' in page, page[-500:]
        assert named["id"] in page and other["id"] not in page


def test_the_timeline_pages_by_log_position(sb: Any, operator: Browser) -> None:
    for _ in range(60):
        sb.deposit("USD", "1")
    first = operator.get("/console/timeline").text
    older = re.search(r'href="\?before=(\d+)" data-testid="timeline-older"', first)
    assert older, first[-500:]
    second = operator.get("/console/timeline", before=older.group(1)).text
    shown = [int(p) for p in re.findall(r'data-position="(\d+)"', first + second)]
    assert len(shown) == len(set(shown)) and shown == sorted(shown, reverse=True)


@pytest.mark.sqlite_only("SQLite's query plan")
def test_a_timeline_page_walks_the_log_s_primary_key_and_sorts_nothing(app_sb: Any) -> None:
    """The first page of a world of any size reads its rows from the head down: no sort
    of the log, no count (what keeps it fast at a million events)."""
    queries = app_sb.app.state.queries
    for before in (None, 10):
        sql, params = timeline.page_query(before, timeline.TimelineFilter())
        plan = " | ".join(
            str(row[-1]) for row in queries.conn.execute("EXPLAIN QUERY PLAN " + sql, [*params, 51])
        )
        assert "TEMP B-TREE" not in plan and "count" not in sql.lower(), plan
        assert "SCAN events" in plan or "SEARCH events USING INTEGER PRIMARY KEY" in plan, plan


def test_client_secrets_are_redacted_in_an_events_json(operator: Browser) -> None:
    shown = operator.get("/console/events/2").text
    assert "ClientCreated" in shown and "secret_hash" in shown and "&lt;redacted&gt;" in shown


def test_the_live_stream_announces_each_commit(
    app_sb: Any, app_operator: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sandex.api_adapter.console import pages

    monkeypatch.setattr(pages, "STREAM_SECONDS", 1.0)
    monkeypatch.setattr(pages, "STREAM_POLL_SECONDS", 0.05)
    app_sb.deposit("USD", "1")
    head = app_sb.engine.store.last_position()
    with app_sb.http.stream("GET", "/console/stream") as answer:
        assert answer.headers["content-type"].startswith("text/event-stream")
        lines = list(answer.iter_lines())
    assert lines[0].startswith("retry:")
    assert lines[1:3] == ["event: hello", f"data: {head}"], lines


def test_the_stream_ends_when_the_server_begins_to_stop(
    app_sb: Any, app_operator: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uvicorn waits for every answer under way before it stops: an open page's stream
    ends at the server's stopping event instead of holding a Ctrl-C'd server."""
    from sandex.api_adapter.console import pages
    from sandex.api_adapter.server.listen import STOPPING

    monkeypatch.setattr(pages, "STREAM_SECONDS", 2.0)
    monkeypatch.setattr(pages, "STREAM_POLL_SECONDS", 0.05)
    stopping = threading.Event()
    stopping.set()
    app = app_sb.http.app

    async def stopping_server(scope: Any, receive: Any, send: Any) -> None:
        scope[STOPPING] = stopping
        await app(scope, receive, send)

    browser = TestClient(stopping_server, cookies=dict(app_sb.http.cookies))
    with browser.stream("GET", _under_prefix(app_sb, "/console/stream")) as answer:
        lines = answer.iter_lines()
        assert next(lines).startswith("retry:")
        app_sb.deposit("USD", "1")  # a commit after it opened: announced only if it went on
        rest = list(lines)
    assert "event: commit" not in rest, rest
    browser.close()


def _path_under_prefix(sb: Any, path: str) -> str:
    """`path` under the sandbox's world prefix, as a page names it (no host)."""
    return urlsplit(str(sb.http.base_url)).path.rstrip("/") + path


def _under_prefix(sb: Any, path: str) -> str:
    """`path` under the sandbox's world prefix, as its own client sends it."""
    return str(sb.http.base_url).rstrip("/") + path


def test_live_fragments_refresh_on_the_stream(sb: Any, operator: Browser) -> None:
    page = operator.get("/console/orders").text
    assert 'sse-connect="' in page and 'hx-trigger="sse:commit, sse:hello"' in page
    fragment = operator.get("/console/orders", fragment="1").text
    assert "<html" not in fragment and 'data-testid="orders"' in fragment


# -- orders, the book, controls ------------------------------------------------------


def test_the_order_is_in_the_book_at_its_price_and_advancing_an_hour_cancels_it(
    sb: Any, operator: Browser
) -> None:
    order = _gtt_buy(sb, "30000")
    book = operator.get("/console/markets", market="BTCUSD").text
    level = re.search(
        r'data-testid="book-level" data-price="30000(?:\.0+)?" class="resting">\s*'
        r'<td data-testid="level-price">[^<]*</td><td data-testid="level-resting">([^<]*)<',
        book,
    )
    assert level and Decimal(level.group(1)) == Decimal("0.1"), book[:2000]
    assert book.count('class="resting"') == 1  # the ladder's levels are apart from it
    page = f"/console/orders/{order['profile_id']}/{order['id']}"
    assert 'data-testid="order-status">OPEN<' in operator.get(page).text
    done = operator.act("advance", seconds="3600")
    assert done.status_code == 200 and "advance: 200" in done.text, done.text
    assert 'data-testid="order-status">CANCELLED<' in operator.get(page, fragment="1").text
    # the control was the API's call: in the request log as the clock's operation
    requests = sb.get("/v2/sandbox/requests").json()["items"]
    assert any(r.get("operation") == "MoveSandboxClock" for r in requests)
    after = operator.get("/console/markets", market="BTCUSD").text
    assert not re.search(r'data-price="30000(?:\.0+)?" class="resting"', after)
    assert 'class="ladder"' in after and 'class="resting"' not in after  # the ladder alone


def test_time_travel_before_the_order_shows_a_book_without_it(
    app_sb: Any, app_operator: Browser
) -> None:
    app_sb.deposit("USD", "100000")
    cut = app_sb.engine.store.last_position()
    order = placed(app_sb, **limit("BUY", "30000", "0.1"))
    now = app_operator.get("/console/markets", market="BTCUSD").text
    assert re.search(r'data-price="30000(?:\.0+)?" class="resting"', now)
    then = app_operator.get("/console/markets", market="BTCUSD", as_of=str(cut))
    assert then.status_code == 200, then.text
    assert not re.search(r'data-price="30000(?:\.0+)?" class="resting"', then.text)
    assert 'data-testid="as-of-shown"' in then.text and "sse-connect" not in then.text
    timeline = app_operator.get("/console/timeline", as_of=str(cut)).text
    assert order["id"] not in timeline
    assert app_operator.get("/console/markets", as_of="yesterday").status_code == 400


def test_time_travel_on_the_entity_pages_shows_them_as_they_were(
    app_sb: Any, app_operator: Browser
) -> None:
    order = _gtt_buy(app_sb, "30000")
    before_expiry = app_sb.engine.store.last_position()
    app_sb.advance(3600)
    page = f"/console/orders/{order['profile_id']}/{order['id']}"
    assert 'data-testid="order-status">CANCELLED<' in app_operator.get(page).text
    then = app_operator.get(page, as_of=str(before_expiry)).text
    assert 'data-testid="order-status">OPEN<' in then and "sse-connect" not in then
    listed = app_operator.get("/console/orders", as_of=str(before_expiry)).text
    shown = re.search(rf'data-order="{order["id"]}".*?order-status">(\w+)<', listed, re.S)
    assert shown and shown.group(1) == "OPEN"
    balances = app_operator.get("/console/profiles", as_of=str(before_expiry)).text
    held = re.search(r'data-asset="USD">.*?held">([^<]+)<', balances, re.S)
    assert held and Decimal(held.group(1)) > 0  # the order's hold, released since
    at_start = app_operator.get("/console/orders", as_of="1").text
    assert order["id"] not in at_start and 'data-testid="orders-empty"' in at_start


def test_the_controls_set_a_price_and_take_and_restore_a_snapshot(
    sb: Any, operator: Browser
) -> None:
    assert "200: done" in operator.act("set_price", market="BTCUSD", price="50000").text
    assert sb.get("/v2/sandbox/markets/BTCUSD/price").json()["reference_price"].startswith("50000")
    assert "200: done" in operator.act("take_snapshot", name="before").text
    restored = operator.act("restore_snapshot", name="before")
    assert "restore_snapshot: 200" in restored.text
    refused = operator.act("set_price", market="BTCUSD", price="-1")
    assert "set_price: 400" in refused.text and "price" in refused.text


def test_a_tenant_sees_its_own_orders_and_not_another_tenants(sb: Any) -> None:
    first_headers, first = sb.tenant()
    _, second = sb.tenant()
    sb.post(
        "/v2/sandbox/profiles/default/deposit",
        {"asset": "USD", "amount": "1000"},
        headers=first_headers,
    )
    theirs = placed(sb, headers=first_headers, **limit("BUY", "1000", "0.1"))
    mine = Browser(sb, first["client_id"], first["client_secret"])
    assert theirs["id"] in mine.get("/console/orders").text
    other = Browser(sb, second["client_id"], second["client_secret"])
    assert "(operator)" not in other.get("/console/orders").text
    assert theirs["id"] not in other.get("/console/orders").text
    page = other.get(f"/console/orders/{theirs['profile_id']}/{theirs['id']}")
    assert page.status_code == 404
    assert theirs["id"] not in other.get("/console/timeline").text
    assert other.get("/console/worlds").status_code == 404


def _subjects(page: str) -> list[str]:
    return re.findall(r'data-testid="event-subject">([^<]*)<', page)


def test_a_tenants_filtered_timeline_fills_its_pages_from_the_whole_feed(sb: Any) -> None:
    """The filters are conditions of the feed's query: a page of a profile whose items
    are interleaved with another profile's and another tenant's is a full page, and the
    next page holds the rest (the filter was applied to a page already cut)."""
    headers, tenant = sb.tenant()
    other_headers, _ = sb.tenant()
    savings = sb.post("/v2/profiles", {"nickname": "savings"}, headers=headers).json()["id"]
    mine = []
    for _ in range(60):
        for profile, who in (("default", headers), (savings, headers), ("default", other_headers)):
            r = sb.post(
                f"/v2/sandbox/profiles/{profile}/deposit",
                {"asset": "USD", "amount": "1"},
                headers=who,
            )
            assert r.status_code == 200, r.text
            if profile == savings:
                mine.append(r.json()["activity_id"])
    browser = Browser(sb, tenant["client_id"], tenant["client_secret"])
    first = browser.get("/console/timeline", profile=savings).text
    shown = _subjects(first)
    assert len(shown) == 50 and all(s.split()[-1] in mine for s in shown)
    older = re.search(r'href="\?([^"]*before=\d+)" data-testid="timeline-older"', first)
    assert older, first[-500:]
    second = browser.http.get("/console/timeline?" + older.group(1).replace("&amp;", "&")).text
    rest = _subjects(second)
    assert "timeline-older" not in second
    assert sorted(s.split()[-1] for s in shown + rest) == sorted(mine)
    typed = browser.get(
        "/console/timeline", type="transfer.wire_deposit.completed", profile=savings
    ).text
    assert len(_subjects(typed)) == 50


def test_an_orders_history_reaches_past_its_customers_newer_events(sb: Any) -> None:
    """An order's status history is the feed's items of that order, found by the query
    however many other items of its customer came after it."""
    headers, tenant = sb.tenant()
    sb.post(
        "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "1000"}, headers=headers
    )
    order = placed(sb, headers=headers, **limit("BUY", "1000", "0.1"))
    for _ in range(210):
        sb.post(
            "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "1"}, headers=headers
        )
    browser = Browser(sb, tenant["client_id"], tenant["client_secret"])
    page = browser.get(f"/console/orders/{order['profile_id']}/{order['id']}").text
    assert len(re.findall('data-testid="order-step"', page)) >= 1, page[-800:]


def test_a_held_withdrawal_shows_pending_then_completed_after_its_release(
    sb: Any, operator: Browser
) -> None:
    sb.deposit("BTC", "1")
    held = withdraw(sb, amount="0.001", memo="sandbox:hold")
    assert held.status_code == 200, held.text
    page = f"/console/transfers/{held.json()['id']}"
    shown = operator.get(page, fragment="1").text
    assert 'data-testid="transfer-status">PENDING<' in shown
    assert 'data-testid="transfer-fee">' in shown
    released = operator.act("complete_transfer", transfer_id=held.json()["id"])
    assert "complete_transfer: 200" in released.text, released.text
    shown = operator.get(page, fragment="1").text
    assert 'data-testid="transfer-status">COMPLETED<' in shown
    assert shown.count('data-testid="transfer-step"') >= 2
    listed = operator.get("/console/transfers").text
    assert held.json()["id"] in listed


def test_balances_show_available_and_held(sb: Any, operator: Browser) -> None:
    _gtt_buy(sb, "30000")  # 0.1 BTC at 30000 holds 3000 USD of the 100000
    page = operator.get("/console/profiles").text
    row = re.search(r'data-asset="USD">.*?available">([^<]+)<.*?held">([^<]+)<', page, re.S)
    assert row, page[:3000]
    assert Decimal(row.group(1)) < Decimal("100000") and Decimal(row.group(2)) > 0


def test_identities_accounts_and_fee_quotes_with_their_expiry(sb: Any, operator: Browser) -> None:
    made = person(sb)
    fee = quote(sb)
    page = operator.get("/console/identities").text
    assert f'data-identity="{made["id"]}"' in page and "John" in page
    assert fee["id"] in page and fee["expires_at"] in page


def test_the_requests_page_links_each_request_to_its_events(sb: Any, operator: Browser) -> None:
    sb.deposit("USD", "5")
    missing = sb.get("/v2/profiles/default/orders/00000000-0000-0000-0000-000000000000")
    assert missing.status_code == 404
    page = operator.get("/console/requests").text
    assert 'data-status="404"' in page and "https://" not in page
    assert re.search(r'data-testid="request-problem">[a-z_:.-]+<', page)  # its problem's type
    assert re.search(r'href="[^"]*/console/events/\d+" data-testid="request-event"', page)


def test_an_orders_page_shows_its_fills_and_the_orders_own_vwap(sb: Any, operator: Browser) -> None:
    """The VWAP shown is the order's own (the API's `volume_weighted_average_price`),
    not a second computation of the console's."""
    sb.deposit("USD", "100000")
    order = placed(sb, **limit("BUY", "45000", "0.1"))
    read = get_order(sb, order)
    assert read["status"] == "FILLED" and read["volume_weighted_average_price"]
    shown = operator.get(f"/console/orders/{order['profile_id']}/{order['id']}").text
    vwap = read["volume_weighted_average_price"]
    assert f'data-testid="order-vwap">{vwap}<' in shown, shown


# -- hostile text --------------------------------------------------------------------


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_text_renders_inert(app_sb: Any, app_operator: Browser, hostile: str) -> None:
    order = _gtt_buy(app_sb, metadata={LONG_KEY: hostile, "note": hostile})
    profile = app_sb.post("/v2/profiles", {"nickname": hostile[:30], "description": hostile})
    assert profile.status_code == 200, profile.text
    pages = [
        f"/console/orders/{order['profile_id']}/{order['id']}",
        "/console/profiles",
        "/console/timeline",
        f"/console/events/{app_sb.engine.store.last_position()}",
    ]
    for path in pages:
        text = app_operator.get(path).text
        assert hostile not in text and hostile[:30] not in text, path
        assert "<script>alert" not in text and "<img src=x" not in text
    shown = app_operator.get(pages[0]).text
    assert LONG_KEY in shown and "&lt;" in shown


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_memo_renders_inert(sb: Any, operator: Browser, hostile: str) -> None:
    """A withdrawal's memo is the user's text: on the transfers and transfer pages it is
    shown, escaped."""
    sb.deposit("BTC", "1")
    made = withdraw(sb, amount="0.001", memo=hostile)
    assert made.status_code == 200, made.text
    for path in ("/console/transfers", f"/console/transfers/{made.json()['id']}"):
        text = operator.get(path, fragment="1").text
        assert 'data-testid="transfer-memo">&lt;' in text or "&#34;&gt;&lt;img" in text, path
        assert hostile not in text, path


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_identity_name_renders_inert(sb: Any, operator: Browser, hostile: str) -> None:
    made = sb.post(
        "/v2/identity/identities",
        {"person_details": PERSON, "metadata": {LONG_KEY: hostile}, "ref_id": hostile[:30]},
    )
    assert made.status_code == 200, made.text
    text = operator.get("/console/identities").text
    assert LONG_KEY in text and "&lt;" in text
    assert hostile not in text and hostile[:30] not in text


# -- worlds --------------------------------------------------------------------------


@pytest.mark.default_world_only("the worlds page is the default world's")
def test_the_operator_lists_forks_and_deletes_worlds(app_sb: Any, app_operator: Browser) -> None:
    answer = app_operator.http.post(
        "/console/worlds/action",
        data={"csrf": app_operator.form_token, "action": "create", "name": "made-in-console"},
    )
    assert answer.status_code == 200 and "create: 200" in answer.text, answer.text
    world_id = re.search(r'data-testid="world-row" data-world="([^"]+)"', answer.text)
    assert world_id and "made-in-console" in answer.text
    made = world_id.group(1)
    manager = app_sb.app.state.worlds
    served = manager.enter(made)
    try:
        served.engine.execute(TakeSnapshot(name="start"))
    finally:
        manager.leave(made, served)
    fork = {"csrf": app_operator.form_token, "action": "fork", "world": made, "snapshot": "start"}
    forked = app_operator.http.post("/console/worlds/action", data=fork)
    assert "fork: 200" in forked.text, forked.text
    assert len(re.findall('data-testid="world-row"', forked.text)) == 2
    gone = app_operator.http.post(
        "/console/worlds/action",
        data={"csrf": app_operator.form_token, "action": "delete", "world": made},
    )
    assert "delete: 200" in gone.text, gone.text
    assert len(re.findall('data-testid="world-row"', gone.text)) == 1


@pytest.mark.default_world_only("a world's console under its prefix, from the default one")
def test_a_worlds_console_is_served_under_its_prefix(app_sb: Any) -> None:
    made = app_sb.post("/v2/sandbox/worlds", {"clock": "manual"}).json()
    front = TestClient(app_sb.world.front)
    path = f"/w/{made['id']}/console/signin"
    page = front.get(path)
    assert page.status_code == 200 and f'action="/w/{made["id"]}/console/signin"' in page.text
    icon = f"/w/{made['id']}/console/assets/favicon.svg"
    assert f'<link rel="icon" href="{icon}"' in page.text
    assert front.get(icon).headers["content-type"] == "image/svg+xml"
    signed = front.post(
        path,
        data={
            "csrf": _form_token(page.text),
            "client_id": made["client_id"],
            "client_secret": made["client_secret"],
        },
        follow_redirects=False,
    )
    assert signed.status_code == 303, signed.text
    assert f"Path=/w/{made['id']}/console" in signed.headers["set-cookie"]
    assert 'data-testid="world-path">/w/' in front.get(f"/w/{made['id']}/console/timeline").text
    front.close()


def test_the_console_is_off_when_the_world_serves_none(app_sb: Any) -> None:
    assert app_sb.http.get("/console/signin").status_code == 200
    app_sb.app.state.console = False
    assert app_sb.http.get("/console/signin").status_code == 404
