"""The console (docs/console.md) in a real headless Chromium against a real `sandex serve`:
what a person sees, updated live over the server-sent event stream, with hostile text
inert. One browser per session; each test has its own world and a fresh browser context
(its own cookies and storage), and leaves a screenshot of each of its pages in ARTEFACTS."""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect, sync_playwright

from tests.support.browser import ARTEFACTS, chromium_or_skip, launch
from tests.support.server_helpers import Process
from tests.support.trading_helpers import limit
from tests.support.transfer_helpers import withdraw
from tests.support.world_helpers import MANUAL, World

START_MS = 1704067200000  # MANUAL's start_time, 2024-01-01T00:00:00Z
HOSTILE = ["<script>window.__pwned=1</script>", '"><img src=x onerror=window.__pwned=1>']
LIVE = 10_000  # ms a live change may take to show (the stream's own bound is a second)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    folder = tmp_path_factory.mktemp("console-browser")
    started = Process(folder / "sandex.db", folder / "serve.log", "--clock", "manual")
    yield started
    started.stop()


@pytest.fixture
def browser() -> Iterator[Any]:
    """A browser for one test. Not shared any longer: Playwright's sync API holds an
    event loop running in this thread while it is started, and a later test of the same
    worker (xdist interleaves modules) that runs one of its own would meet it."""
    executable = chromium_or_skip()
    with sync_playwright() as playwright:
        launched = launch(playwright, executable)
        yield launched
        launched.close()


@pytest.fixture
def context(browser: Any, server: Process, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh profile (a new context) that may reach the test's server only: any request
    to another host is refused and fails the test."""
    made = browser.new_context(viewport={"width": 1200, "height": 900})
    elsewhere: list[str] = []
    loopback = server.base + "/"

    def guard(route: Any) -> None:
        if route.request.url.startswith(loopback):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    made.route("**/*", guard)
    yield made
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^\w.-]+", "_", request.node.name)
    for i, page in enumerate(made.pages):
        page.screenshot(path=str(ARTEFACTS / f"{name}{f'-{i}' if i else ''}.png"), full_page=True)
    made.close()
    assert not elsewhere, f"the console asked another host: {elsewhere}"


@pytest.fixture
def world(server: Process) -> Iterator[World]:
    http = httpx.Client(base_url=server.base, timeout=10)
    form = {"grant_type": "client_credentials", "client_id": "sandex"}
    token = http.post("/oauth2/token", data={**form, "client_secret": "sandex-secret"})
    assert token.status_code == 200, token.text
    headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
    made = http.post("/v2/sandbox/worlds", json=MANUAL, headers=headers)
    assert made.status_code == 200, made.text
    yield World(http, made.json())
    http.close()


def _console(server: Process, world: World) -> str:
    return f"{server.base}{world.prefix}/console"


def _signed_in(context: Any, console: str, client_id: str, secret: str) -> Any:
    page = context.new_page()
    page.goto(console + "/signin")
    page.get_by_test_id("signin-client-id").fill(client_id)
    page.get_by_test_id("signin-client-secret").fill(secret)
    page.get_by_test_id("signin-submit").click()
    page.wait_for_url(re.compile(r".*/console/timeline$"))
    return page


def _operator(context: Any, server: Process, world: World) -> Any:
    return _signed_in(
        context, _console(server, world), world.made["client_id"], world.made["client_secret"]
    )


def _watched(page: Any) -> list[str]:
    """Marks the page's window and records its navigations from now on: a reload or a
    new document would drop the mark and add a navigation."""
    page.evaluate("window.__kept = 'kept'")
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    return navigations


def _unreloaded(page: Any, navigations: list[str]) -> None:
    assert page.evaluate("window.__kept") == "kept" and navigations == []


def _gtt_buy(world: World, price: str, **extra: Any) -> dict[str, Any]:
    world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "100000"})
    body = limit("BUY", price, "0.1", time_in_force="GTT", **extra)
    body["expiration_date"] = str(START_MS + 120_000)
    return world.order(**body)


def _resting_prices(page: Any) -> list[Decimal]:
    levels = page.locator('[data-testid="book-level"].resting')
    return [Decimal(levels.nth(i).get_attribute("data-price")) for i in range(levels.count())]


def test_a_gtt_order_is_on_the_timeline_and_in_the_book_and_cancels_live_on_advance(
    server: Process, world: World, context: Any
) -> None:
    order = _gtt_buy(world, "30000")
    page = _operator(context, server, world)
    console = _console(server, world)
    event = page.locator(f'[data-testid="timeline-event"]:has-text("{order["id"]}")')
    expect(event.first).to_be_visible()
    page.get_by_test_id("nav-markets").click()
    page.wait_for_url(re.compile(r".*/console/markets.*"))
    assert _resting_prices(page) == [Decimal("30000")]
    page.goto(f"{console}/orders/{order['profile_id']}/{order['id']}")
    expect(page.get_by_test_id("order-status")).to_have_text("OPEN")
    navigations = _watched(page)
    controls = context.new_page()
    controls.goto(console + "/controls")
    controls.get_by_test_id("advance-1h").click()
    expect(controls.get_by_test_id("control-result")).to_contain_text("advance: 200")
    expect(page.get_by_test_id("order-status")).to_have_text("CANCELLED", timeout=LIVE)
    _unreloaded(page, navigations)


def test_a_held_withdrawal_shows_pending_then_completed_after_its_release_live(
    server: Process, world: World, context: Any
) -> None:
    world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "BTC", "amount": "1"})
    held = withdraw(world, amount="0.001", memo="sandbox:hold")
    assert held.status_code == 200, held.text
    page = _operator(context, server, world)
    page.goto(f"{_console(server, world)}/transfers/{held.json()['id']}")
    expect(page.get_by_test_id("transfer-status")).to_have_text("PENDING")
    navigations = _watched(page)
    world.ok("POST", f"/v2/sandbox/transfers/{held.json()['id']}/complete")
    expect(page.get_by_test_id("transfer-status")).to_have_text("COMPLETED", timeout=LIVE)
    expect(page.get_by_test_id("transfer-step")).to_have_count(2, timeout=LIVE)
    _unreloaded(page, navigations)


def test_a_tenant_sees_its_own_orders_and_none_of_another_tenants(
    server: Process, world: World, context: Any, browser: Any
) -> None:
    tenants = [world.ok("POST", "/v2/sandbox/customers") for _ in range(2)]
    orders = []
    for tenant in tenants:
        headers = world.login(tenant["client_id"], tenant["client_secret"])
        deposit = {"asset": "USD", "amount": "1000"}
        answer = world.post("/v2/sandbox/profiles/default/deposit", deposit, headers=headers)
        assert answer.status_code == 200, answer.text
        body = {"market": "BTCUSD", **limit("BUY", "1000", "0.1")}
        placed = world.post("/v2/profiles/default/orders", body, headers=headers)
        assert placed.status_code == 200, placed.text
        orders.append(placed.json()["id"])
    console = _console(server, world)
    page = _signed_in(context, console, tenants[0]["client_id"], tenants[0]["client_secret"])
    expect(page.get_by_test_id("signed-in-as")).to_have_text(tenants[0]["client_id"])
    page.get_by_test_id("nav-orders").click()
    rows = page.get_by_test_id("order-row")
    expect(rows).to_have_count(1)
    assert rows.first.get_attribute("data-order") == orders[0]
    assert orders[1] not in page.content()
    page.get_by_test_id("nav-timeline").click()
    expect(page.get_by_test_id("timeline-event").first).to_be_visible()
    assert orders[1] not in page.content()


@pytest.mark.parametrize("hostile", HOSTILE, ids=["script", "img-onerror"])
def test_hostile_metadata_renders_as_text_and_runs_no_script(
    server: Process, world: World, context: Any, hostile: str
) -> None:
    order = _gtt_buy(world, "30000", metadata={"note": hostile})
    page = _operator(context, server, world)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(f"{_console(server, world)}/orders/{order['profile_id']}/{order['id']}")
    shown = page.get_by_test_id("order-metadata")
    expect(shown).to_contain_text(hostile)
    assert shown.locator("script, img").count() == 0
    page.get_by_test_id("nav-timeline").click()
    placed = page.locator('[data-testid="timeline-event"][data-type="OrderPlaced"]')
    placed.get_by_test_id("event-open").click()
    expect(page.get_by_test_id("event-json")).to_contain_text(hostile.replace('"', '\\"'))
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert dialogs == []


def test_time_travel_to_before_the_order_shows_a_book_without_it(
    server: Process, world: World, context: Any
) -> None:
    world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "100000"})
    world.ok("POST", "/v2/sandbox/clock", {"advance_seconds": 60})
    world.order(**limit("BUY", "30000", "0.1"))  # at engine time start + 60 s
    page = _operator(context, server, world)
    page.goto(f"{_console(server, world)}/markets?market=BTCUSD")
    assert _resting_prices(page) == [Decimal("30000")]
    page.get_by_test_id("as-of").fill("2024-01-01T00:00:30Z")
    page.get_by_test_id("as-of-go").click()
    expect(page.get_by_test_id("as-of-shown")).to_be_visible()
    expect(page.get_by_test_id("book-level").first).to_be_visible()
    assert _resting_prices(page) == []
    page.get_by_test_id("as-of-now").click()
    expect(page.get_by_test_id("as-of-shown")).to_have_count(0)
    # the book's levels are drawn when the page's live part has loaded: wait for them
    expect(page.locator('[data-testid="book-level"].resting').first).to_be_visible()
    assert _resting_prices(page) == [Decimal("30000")]


def test_a_commit_before_the_stream_connects_shows_once_it_does(
    server: Process, world: World, context: Any
) -> None:
    """A stream lasts a while and the browser opens the next: a commit in between is
    announced by no `commit` event (the new stream starts at the head), so the page must
    catch up when its stream (re)connects. The stream's request is held back here, as the
    gap between two streams."""
    held: list[Any] = []
    context.route("**/console/stream", lambda route: held.append(route))
    page = _operator(context, server, world)
    navigations = _watched(page)
    newest = "document.querySelector('[data-testid=timeline-event]').dataset.position"
    head = int(page.evaluate(newest))
    world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "1"})
    for _ in range(LIVE // 50):  # the stream's request reaches its route
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the page asked for no stream"
    context.unroute("**/console/stream")
    for route in held:
        route.continue_()
    page.wait_for_function(f"h => Number({newest}) > h", arg=head, timeout=LIVE)
    _unreloaded(page, navigations)
