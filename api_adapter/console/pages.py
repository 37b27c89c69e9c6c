"""The console's pages: server-rendered HTML of one world, read through the same read
paths and owner rule as the API (`Queries` with the caller's customer id), its actions
sent as the API calls a client makes (`api_call`), through the world's whole pipeline,
so each is in the request log and the event log like any other."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import jinja2
import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from sandex.api_adapter import auth, webhook_delivery
from sandex.api_adapter.console import charts
from sandex.api_adapter.console.sessions import (
    COOKIE,
    FORM_FIELD,
    SIGNIN_COOKIE,
    Session,
    Sessions,
    same,
)
from sandex.api_adapter.problems import AuthError
from sandex.api_adapter.recent_requests import Filters
from sandex.api_adapter.routes.sandbox_requests import recent_requests
from sandex.api_adapter.server.listen import STOPPING
from sandex.api_adapter.writer_bridge import actor_of, submit
from sandex.engine.domain.trading.market_views import depth_at
from sandex.engine.domain.trading.trading_state import trading_for
from sandex.engine.kernel.clock import format_time, parse_time
from sandex.engine.kernel.commands import ListHistoricalPrices, ReadMarket
from sandex.engine.kernel.errors import DomainError, NotFound
from sandex.engine.kernel.money import MARKETS
from sandex.engine.read import feed, identities, timeline
from sandex.engine.read.clients import customer_ids, is_bootstrap
from sandex.engine.read.queries import Page
from sandex.engine.read.sandbox_snapshots import list_snapshots
from sandex.engine.tools.time_travel import past_rows, state_at

HERE = Path(__file__).parent
ASSETS = HERE / "assets"
# The vendored scripts and the console's own files, by the name a page asks for.
ASSET_TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".txt": "text/plain",
    ".svg": "image/svg+xml",
}
# Every value a template shows is escaped (user text: metadata, nicknames, memos).
templates = Jinja2Templates(
    env=jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True, auto_reload=False
    )
)

# Only the console's own files: no inline script or style, no other host, no frame.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
    " connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
# How often the live stream looks at the log's head, and how long one stream lasts
# before the browser's EventSource opens the next (`retry`).
STREAM_POLL_SECONDS = 0.2
STREAM_SECONDS = 30.0
# Past states (time travel) kept per world: each is a whole state in memory.
PAST_STATES = 4
# The engine-time span the price chart covers.
CHART_SPAN = timedelta(hours=1)


class Viewer:
    """Who looks: the session and the principal its token stands for, checked on every
    page by the API's own bearer check (an expired token or a revoked client signs
    the browser out)."""

    def __init__(self, session: Session, principal: auth.Principal) -> None:
        self.session = session
        self.principal = principal

    @property
    def customer_id(self) -> str:
        return self.principal.customer_id

    @property
    def operator(self) -> bool:
        return self.session.operator


# -- the app -------------------------------------------------------------------------


def console_app(api: Any) -> Starlette:
    """The console of the world whose FastAPI app is `api`."""
    app = Starlette(
        routes=[
            Route("/console", home),
            Route("/console/", home),
            Route("/console/signin", signin_page, methods=["GET"]),
            Route("/console/signin", signin, methods=["POST"]),
            Route("/console/signout", signout, methods=["POST"]),
            Route("/console/assets/{name}", asset),
            Route("/console/worlds", worlds_page),
            Route("/console/worlds/action", worlds_action, methods=["POST"]),
            Route("/console/timeline", timeline_page),
            Route("/console/events/{position:int}", event_page),
            Route("/console/stream", stream),
            Route("/console/orders", orders_page),
            Route("/console/orders/{profile_id}/{order_id}", order_page),
            Route("/console/profiles", profiles_page),
            Route("/console/transfers", transfers_page),
            Route("/console/transfers/{transfer_id}", transfer_page),
            Route("/console/identities", identities_page),
            Route("/console/markets", markets_page),
            Route("/console/requests", requests_page),
            Route("/console/webhooks", webhooks_page),
            Route("/console/controls", controls_page),
            Route("/console/controls", controls_action, methods=["POST"]),
        ]
    )
    app.state.api = api
    app.state.sessions = Sessions()
    app.state.past = OrderedDict()
    return app


def _api(request: Request) -> Any:
    return request.app.state.api


def _base(request: Request) -> str:
    """The console's path in this world (`/console`, or `/w/{world}/console`)."""
    return str(request.scope.get("root_path", "")) + "/console"


def _secure(response: Response) -> Response:
    response.headers.update(SECURITY_HEADERS)
    return response


def _render(
    request: Request,
    template: str,
    viewer: Viewer | None,
    status: int = 200,
    **context: Any,
) -> Response:
    api = _api(request)
    context.update(
        request=request,
        base=_base(request),
        viewer=viewer,
        form_token=viewer.session.form_token if viewer else "",
        form_field=FORM_FIELD,
        worlds=api.state.worlds is not None,
        world_path=str(request.scope.get("root_path", "")) or "default",
    )
    live_template = template.replace(".html", "_live.html")
    if (HERE / "templates" / live_template).is_file():
        context["live_template"] = live_template
        kept = [(k, v) for k, v in request.query_params.multi_items() if k != "fragment"]
        path = str(request.scope.get("root_path", "")) + request.scope["path"]
        context["live_url"] = path + "?" + urlencode([*kept, ("fragment", "1")])
        if request.query_params.get("fragment"):
            template = live_template
    context.setdefault("live", False)
    return _secure(templates.TemplateResponse(request, template, context, status_code=status))


def _to_signin(request: Request) -> Response:
    return _secure(RedirectResponse(_base(request) + "/signin", status_code=303))


def _viewer(request: Request) -> Viewer | None:
    sessions: Sessions = request.app.state.sessions
    sid = request.cookies.get(COOKIE)
    session = sessions.get(sid)
    if session is None:
        return None
    api = _api(request)
    try:
        principal = auth.principal_of(
            api.state.tokens, api.state.clients, f"Bearer {session.token}"
        )
    except AuthError:
        sessions.close(sid)
        return None
    return Viewer(session, principal)


def _problem(request: Request, viewer: Viewer | None, error: DomainError | str) -> Response:
    detail = error if isinstance(error, str) else error.detail
    status = 400 if isinstance(error, str) else _status_of(error)
    return _render(request, "problem.html", viewer, status=status, detail=detail)


def _status_of(error: DomainError) -> int:
    return 404 if isinstance(error, NotFound) else 400


# -- calls through the API -----------------------------------------------------------


async def api_call(
    request: Request, token: str | None, method: str, path: str, **options: Any
) -> tuple[int, Any]:
    """An API call to this world's app in process, as a client makes it (its gates,
    faults, request log and writer), with the session's bearer token, from the
    browser's address (its rate limits are that address's): (status, body)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    peer = request.client
    transport = httpx.ASGITransport(
        app=_api(request), client=(peer.host, peer.port) if peer else ("127.0.0.1", 0)
    )
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        answer = await client.request(method, path, headers=headers, **options)
    try:
        body = answer.json() if answer.content else None
    except ValueError:
        body = answer.text
    return answer.status_code, body


def _said(status: int, body: Any) -> str:
    """One line on an API answer: its status and, for a refusal, its problem's detail."""
    if 200 <= status < 300:
        return f"{status}: done"
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("error_description") or body.get("title")
        kind = body.get("type") or body.get("error")
        return f"{status}: {detail}" + (f" ({kind})" if kind else "")
    return f"{status}: {body}"


# -- sign-in -------------------------------------------------------------------------


async def home(request: Request) -> Response:
    viewer = _viewer(request)
    if viewer is None:
        return _to_signin(request)
    return _secure(RedirectResponse(_base(request) + "/timeline", status_code=303))


async def signin_page(request: Request, message: str = "", status: int = 200) -> Response:
    form_token = secrets.token_urlsafe(32)
    response = _render(
        request, "signin.html", None, status=status, signin_token=form_token, message=message
    )
    response.set_cookie(
        SIGNIN_COOKIE, form_token, path=_base(request), httponly=True, samesite="strict"
    )
    return response


async def signin(request: Request) -> Response:
    form = await request.form()
    if not same(request.cookies.get(SIGNIN_COOKIE), str(form.get(FORM_FIELD) or "")):
        return await signin_page(request, "the form has expired: sign in again", 403)
    client_id = str(form.get("client_id") or "")
    secret = str(form.get("client_secret") or "")
    api = _api(request)
    status, body = await api_call(
        request,
        None,
        "POST",
        "/oauth2/token",
        data={"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret},
    )
    if status != 200 or not isinstance(body, dict):
        return await signin_page(request, "those credentials were refused", 401)
    token = str(body["access_token"])
    principal = auth.principal_of(api.state.tokens, api.state.clients, f"Bearer {token}")
    session = Session(
        token=token,
        client_id=principal.client_id,
        customer_id=principal.customer_id,
        operator=is_bootstrap(api.state.queries, principal.customer_id),
        expires_at=time.time() + int(body.get("expires_in", api.state.tokens.ttl)),
    )
    sid = request.app.state.sessions.open(session)
    response = RedirectResponse(_base(request) + "/timeline", status_code=303)
    response.set_cookie(COOKIE, sid, path=_base(request), httponly=True, samesite="strict")
    response.delete_cookie(SIGNIN_COOKIE, path=_base(request))
    return _secure(response)


async def _checked_form(request: Request) -> tuple[Viewer | None, dict[str, str], Response | None]:
    """The signed-in viewer and the posted form, or the refusal of a form without the
    session's token (a cross-site post) or of a browser not signed in."""
    viewer = _viewer(request)
    if viewer is None:
        return None, {}, _to_signin(request)
    form = {k: str(v) for k, v in (await request.form()).items()}
    if not viewer.session.admits(form.get(FORM_FIELD) or request.headers.get("x-csrf-token")):
        refused = _render(
            request, "problem.html", viewer, status=403, detail="the form token is missing or wrong"
        )
        return viewer, form, refused
    return viewer, form, None


async def signout(request: Request) -> Response:
    viewer, _, refused = await _checked_form(request)
    if refused is not None:
        return refused
    request.app.state.sessions.close(request.cookies.get(COOKIE))
    response = _to_signin(request)
    response.delete_cookie(COOKIE, path=_base(request))
    return response


async def asset(request: Request) -> Response:
    name = request.path_params["name"]
    path = ASSETS / name
    kind = ASSET_TYPES.get(path.suffix)
    if kind is None or path.parent != ASSETS or not path.is_file():
        return _secure(HTMLResponse("not found", status_code=404))
    response = FileResponse(path, media_type=kind)
    response.headers.update(SECURITY_HEADERS)
    response.headers["Cache-Control"] = "max-age=3600"
    return response


# -- time travel ---------------------------------------------------------------------


class AsOf:
    """A page's "as of": a log position or an engine time (RFC 3339), or now."""

    def __init__(self, text: str | None) -> None:
        self.text = (text or "").strip()
        self.position: int | None = None
        self.time: str | None = None
        if not self.text:
            return
        if self.text.isdigit():
            self.position = int(self.text)
            return
        try:
            self.time = format_time(parse_time(self.text))
        except ValueError as exc:
            raise ValueError(
                f"as_of invalid: {self.text[:40]!r} is neither a log position nor an RFC 3339 time"
            ) from exc

    def __bool__(self) -> bool:
        return bool(self.text)


def _as_of(request: Request) -> AsOf:
    return AsOf(request.query_params.get("as_of"))


def _page(request: Request) -> tuple[Viewer, AsOf] | Response:
    """A page's viewer and its "as of", or the answer instead: the sign-in page for no
    session, a problem for an "as of" that is neither a log position nor a time."""
    viewer = _viewer(request)
    if viewer is None:
        return _to_signin(request)
    try:
        return viewer, _as_of(request)
    except ValueError as exc:
        return _problem(request, viewer, str(exc))


async def past_state(request: Request, as_of: AsOf) -> tuple[Any, int]:
    """The world's state as of `as_of` (replayed from the log up to it, cut at a
    decision's end) and its cut, kept for the next pages."""
    engine = _api(request).state.engine
    key = (as_of.position, as_of.time)
    held: OrderedDict[Any, tuple[Any, int]] = request.app.state.past
    if key in held:
        held.move_to_end(key)
        return held[key]
    until = parse_time(as_of.time) if as_of.time else None
    made = await run_in_threadpool(
        state_at, engine.db_path, engine.registry, position=as_of.position, until=until
    )
    held[key] = made
    while len(held) > PAST_STATES:
        held.popitem(last=False)
    return made


# -- worlds --------------------------------------------------------------------------


async def worlds_page(request: Request, message: str = "") -> Response:
    viewer = _viewer(request)
    if viewer is None:
        return _to_signin(request)
    manager = _api(request).state.worlds
    if manager is None or not viewer.operator:
        return _problem(request, viewer, NotFound("the worlds are the default world's operator's"))
    rows = []
    for _, world_id in manager.ids():
        try:
            rows.append({**manager.describe(world_id), "customers": manager.customers(world_id)})
        except NotFound:
            continue  # deleted meanwhile
    return _render(request, "worlds.html", viewer, rows=rows, message=message)


async def worlds_action(request: Request) -> Response:
    viewer, form, refused = await _checked_form(request)
    if refused is not None or viewer is None:
        return refused or _to_signin(request)
    token = viewer.session.token
    action, world = form.get("action"), form.get("world", "")
    if action == "create":
        body: dict[str, Any] = {"clock": form.get("clock") or "manual"}
        if form.get("name"):
            body["name"] = form["name"]
        status, answer = await api_call(request, token, "POST", "/v2/sandbox/worlds", json=body)
    elif action == "fork":
        body = {"from_world": world, "from_snapshot": form.get("snapshot", "")}
        status, answer = await api_call(request, token, "POST", "/v2/sandbox/worlds", json=body)
    elif action == "delete":
        status, answer = await api_call(request, token, "DELETE", f"/v2/sandbox/worlds/{world}")
    else:
        return _problem(request, viewer, "action invalid: create, fork or delete")
    said = _said(status, answer)
    if action != "delete" and isinstance(answer, dict) and answer.get("client_secret"):
        said += f"; client_id {answer.get('client_id')}, client_secret {answer['client_secret']}"
    return await worlds_page(request, f"{action}: {said}")


# -- timeline ------------------------------------------------------------------------


async def timeline_page(request: Request) -> Response:
    viewer = _viewer(request)
    if viewer is None:
        return _to_signin(request)
    query = request.query_params
    try:
        as_of = _as_of(request)
        before = int(query["before"]) if query.get("before", "").isdigit() else None
        until_time = AsOf(query.get("until")).time if query.get("until") else None
    except ValueError as exc:
        return _problem(request, viewer, str(exc))
    queries = _api(request).state.queries
    # every filter given is a condition of the page: an event names each of them
    wanted = (query.get(name, "").strip() for name in ("customer", "profile", "entity"))
    mentions = tuple(text for text in wanted if text)
    if viewer.operator:
        keep = timeline.TimelineFilter(
            type=(query.get("type") or "").strip() or None,
            mentions=mentions,
            until_time=until_time or as_of.time,
            until_position=as_of.position,
        )
        events, after = timeline.newest(queries, before=before, keep=keep)
        rows = [_log_row(e) for e in events]
    else:
        # A tenant's timeline is its event feed: what its token reads at GET /v2/events.
        position = as_of.position
        if as_of.time is not None:
            position = await run_in_threadpool(_position_at, queries, as_of.time)
        items, after = feed.newest_events(
            queries,
            viewer.customer_id,
            before=before,
            limit=timeline.DEFAULT_LIMIT,
            until_position=position,
            type=(query.get("type") or "").strip() or None,
            mentions=mentions,
            until_time=until_time,
        )
        rows = [_feed_row(item) for item in items]
    kept = [(k, v) for k, v in query.multi_items() if k not in ("before", "fragment")]
    return _render(
        request,
        "timeline.html",
        viewer,
        rows=rows,
        after=after,
        older_url="?" + urlencode([*kept, ("before", str(after))]),
        as_of=as_of.text,
        live=not as_of,
        filters={k: query.get(k, "") for k in ("customer", "profile", "entity", "type", "until")},
    )


def _position_at(queries: Any, when: str) -> int:
    events, _ = timeline.newest(queries, limit=1, keep=timeline.TimelineFilter(until_time=when))
    return int(events[0]["position"]) if events else 0


def _log_row(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "position": event["position"],
        "time": event["occurred_at"],
        "type": event["type"],
        "subject": event["stream"],
        "by": event["meta"].get("client_id", ""),
    }


def _feed_row(item: dict[str, Any]) -> dict[str, Any]:
    subject = item.get("object") or {}
    return {
        "position": item["position"],
        "time": item.get("created_at", ""),
        "type": item.get("type", ""),
        "subject": f"{item.get('object_type', '')} {subject.get('id', '')}",
        "by": "",
    }


async def event_page(request: Request) -> Response:
    viewer = _viewer(request)
    if viewer is None:
        return _to_signin(request)
    position = int(request.path_params["position"])
    queries = _api(request).state.queries
    if viewer.operator:
        shown: Any = timeline.event_at(queries, position)
    else:
        items, _ = feed.newest_events(
            queries, viewer.customer_id, before=(position + 1) * 2, limit=10
        )
        shown = [i for i in items if i["position"] == position] or None
    if shown is None:
        return _problem(request, viewer, NotFound(f"event not found at position {position}"))
    text = orjson.dumps(shown, option=orjson.OPT_INDENT_2).decode()
    return _render(request, "event.html", viewer, position=position, text=text)


async def stream(request: Request) -> Response:
    """Server-sent events: `commit` with the log's head whenever it moves, so the live
    fragments of a page fetch themselves again."""
    viewer = _viewer(request)
    if viewer is None:
        return _secure(HTMLResponse("sign in first", status_code=401))
    queries = _api(request).state.queries
    stopping = request.scope.get(STOPPING)  # set when the server begins to stop

    async def commits() -> Any:
        yield f"retry: 500\nevent: hello\ndata: {queries.log_position() or 0}\n\n"
        last = queries.log_position()
        loop = asyncio.get_running_loop()
        ends = loop.time() + STREAM_SECONDS
        while loop.time() < ends:
            if (stopping is not None and stopping.is_set()) or await request.is_disconnected():
                return
            await asyncio.sleep(STREAM_POLL_SECONDS)
            head = queries.log_position()
            if head != last:
                last = head
                yield f"event: commit\ndata: {head}\n\n"

    response = StreamingResponse(commits(), media_type="text/event-stream")
    response.headers.update(SECURITY_HEADERS)
    return response


# -- entities ------------------------------------------------------------------------


def _customers(request: Request, viewer: Viewer) -> list[str]:
    """Whose rows the viewer reads: the operator everyone's, a tenant its own."""
    if viewer.operator:
        return customer_ids(_api(request).state.queries)
    return [viewer.customer_id]


async def orders_page(request: Request) -> Response:
    page = _page(request)
    if isinstance(page, Response):
        return page
    viewer, as_of = page
    queries = _api(request).state.queries
    status = request.query_params.get("status") or None
    customers = _customers(request, viewer)
    rows: list[dict[str, Any]] = []
    cut = None
    if as_of:
        rows, cut = await _past(request, as_of, "orders", customers)
        rows = [o for o in rows if status is None or o["status"] == status]
    else:
        for customer in customers:
            rows += queries.list_orders(customer, Page(limit=100), status=status)["items"]
    rows.sort(key=lambda o: o.get("created_at", ""), reverse=True)
    return _render(
        request, "orders.html", viewer, rows=rows[:200], live=not as_of, as_of=as_of.text, cut=cut
    )


async def _past(
    request: Request, as_of: AsOf, table: str, customers: list[str]
) -> tuple[list[dict[str, Any]], int]:
    """The API views of the customers' rows of read model `table` as of `as_of`, newest
    first, and the log's cut."""
    state, cut = await past_state(request, as_of)
    rows = past_rows(state, _api(request).state.engine.registry, table)
    rows.sort(key=lambda row: int(row.get("seq") or 0), reverse=True)
    wanted = set(customers)
    return [orjson.loads(r["body"]) for r in rows if r.get("customer_id") in wanted], cut


async def order_page(request: Request) -> Response:
    page = _page(request)
    if isinstance(page, Response):
        return page
    viewer, as_of = page
    queries = _api(request).state.queries
    profile_id = request.path_params["profile_id"]
    order_id = request.path_params["order_id"]
    if as_of:
        return await _past_order(request, viewer, as_of, order_id)
    order = owner = None
    for customer in _customers(request, viewer):
        try:
            order = queries.order(customer, profile_id, order_id)
            owner = customer
            break
        except NotFound:
            continue
    if order is None or owner is None:
        return _problem(request, viewer, NotFound(f"order not found with id {order_id}"))
    fills = queries.list_executions(owner, Page(limit=1000), order_id=order_id)["items"]
    history, _ = feed.newest_events(queries, owner, limit=200, mentions=[order_id])
    steps = [i for i in history if (i.get("object") or {}).get("id") == order_id]
    return _render(
        request,
        "order.html",
        viewer,
        order=order,
        fills=fills,
        vwap=order.get("volume_weighted_average_price") or "",
        steps=list(reversed(steps)),
        live=True,
        as_of="",
    )


async def _past_order(request: Request, viewer: Viewer, as_of: AsOf, order_id: str) -> Response:
    """An order as it stood as of `as_of`, with its fills then."""
    customers = _customers(request, viewer)
    orders, cut = await _past(request, as_of, "orders", customers)
    order = next((o for o in orders if o["id"] == order_id), None)
    if order is None:
        return _problem(request, viewer, NotFound(f"order not found with id {order_id}"))
    fills, _ = await _past(request, as_of, "executions", customers)
    fills = [f for f in reversed(fills) if f.get("order_id") == order_id]
    return _render(
        request,
        "order.html",
        viewer,
        order=order,
        fills=fills,
        vwap=order.get("volume_weighted_average_price") or "",
        steps=[],
        as_of=as_of.text,
        cut=cut,
    )


async def profiles_page(request: Request) -> Response:
    page = _page(request)
    if isinstance(page, Response):
        return page
    viewer, as_of = page
    queries = _api(request).state.queries
    customers = _customers(request, viewer)
    rows = []
    cut = None
    if as_of:
        profiles, cut = await _past(request, as_of, "profiles", customers)
        state, _ = await past_state(request, as_of)
        held: dict[str, list[dict[str, Any]]] = {}
        for row in past_rows(state, _api(request).state.engine.registry, "balances"):
            held.setdefault(row["profile_id"], []).append(row)
        for profile in reversed(profiles):
            balances = sorted(held.get(profile["id"], []), key=lambda b: str(b["asset"]))
            rows.append({"profile": profile, "customer": "", "balances": balances})
    else:
        for customer in customers:
            for profile in queries.list_profiles(customer, Page(limit=100))["items"]:
                balances = queries.balances(customer, profile["id"])["items"]
                rows.append({"profile": profile, "customer": customer, "balances": balances})
    return _render(
        request, "profiles.html", viewer, rows=rows, live=not as_of, as_of=as_of.text, cut=cut
    )


async def transfers_page(request: Request) -> Response:
    page = _page(request)
    if isinstance(page, Response):
        return page
    viewer, as_of = page
    queries = _api(request).state.queries
    customers = _customers(request, viewer)
    rows: list[dict[str, Any]] = []
    cut = None
    if as_of:
        rows, cut = await _past(request, as_of, "transfers", customers)
    else:
        for customer in customers:
            rows += queries.list_transfers(customer, Page(limit=100), {})["items"]
    rows.sort(key=lambda t: t.get("created_at", ""), reverse=True)
    return _render(
        request,
        "transfers.html",
        viewer,
        rows=rows[:200],
        live=not as_of,
        as_of=as_of.text,
        cut=cut,
    )


async def transfer_page(request: Request) -> Response:
    page = _page(request)
    if isinstance(page, Response):
        return page
    viewer, as_of = page
    queries = _api(request).state.queries
    transfer_id = request.path_params["transfer_id"]
    if as_of:
        past, cut = await _past(request, as_of, "transfers", _customers(request, viewer))
        then = next((t for t in past if t["id"] == transfer_id), None)
        if then is None:
            return _problem(request, viewer, NotFound(f"transfer not found with id {transfer_id}"))
        return _render(
            request, "transfer.html", viewer, transfer=then, steps=[], as_of=as_of.text, cut=cut
        )
    for customer in _customers(request, viewer):
        try:
            transfer = queries.transfer(customer, transfer_id)
        except NotFound:
            continue
        history, _ = feed.newest_events(queries, customer, limit=200, mentions=[transfer_id])
        steps = [i for i in history if (i.get("object") or {}).get("id") == transfer_id]
        return _render(
            request,
            "transfer.html",
            viewer,
            transfer=transfer,
            steps=list(reversed(steps)),
            live=True,
            as_of="",
        )
    return _problem(request, viewer, NotFound(f"transfer not found with id {transfer_id}"))


async def identities_page(request: Request) -> Response:
    viewer = _viewer(request)
    if viewer is None:
        return _to_signin(request)
    queries = _api(request).state.queries
    rows = []
    for customer in _customers(request, viewer):
        rows.append(
            {
                "customer": customer,
                "identities": [
                    identities.identity(queries, customer, item["id"], details=True)
                    for item in identities.list_identities(queries, customer, Page(limit=100))[
                        "items"
                    ]
                ],
                "accounts": identities.list_accounts(queries, customer, Page(limit=100))["items"],
                "fees": queries.list_withdrawal_fees(customer, Page(limit=50))["items"],
            }
        )
    return _render(request, "identities.html", viewer, rows=rows, live=True)


# -- markets -------------------------------------------------------------------------


async def markets_page(request: Request) -> Response:
    viewer = _viewer(request)
    if viewer is None:
        return _to_signin(request)
    market = request.query_params.get("market") or next(iter(MARKETS))
    if market not in MARKETS:
        return _problem(request, viewer, NotFound(f"market not found: {market}"))
    try:
        as_of = _as_of(request)
    except ValueError as exc:
        return _problem(request, viewer, str(exc))
    engine = _api(request).state.engine
    chart = ""
    recent: list[dict[str, Any]] = []
    cut = None
    if as_of:
        state, cut = await past_state(request, as_of)
        tr = trading_for(state, engine.settings, engine.seed)
        when = parse_time(state.last_time) if state.last_time else engine.clock.now()
        depth = depth_at(tr, market, when)
    else:
        depth = await submit(engine, ReadMarket(view="depth", market=market))
        recent = (await submit(engine, ReadMarket(view="recent", market=market)))["items"][:20]
        chart = await _chart(engine, viewer, market)
    return _render(
        request,
        "markets.html",
        viewer,
        markets=list(MARKETS),
        market=market,
        depth=depth,
        recent=recent,
        chart=chart,
        as_of=as_of.text,
        cut=cut,
        live=not as_of,
    )


async def _chart(engine: Any, viewer: Viewer, market: str) -> str:
    """The reference price over the last hour of engine time, as the API's historical
    prices answer it, drawn as SVG."""
    now = engine.clock.now()
    command = ListHistoricalPrices(
        actor=actor_of(viewer.principal, ""),
        market=market,
        increment="ONE_MINUTE",
        begin=format_time(now - CHART_SPAN),
        end=format_time(now),
    )
    try:
        answer = await submit(engine, command)
    except DomainError:
        return charts.line_chart([], f"{market} reference price")
    points = [
        (str(item.get("time", "")), Decimal(str(item.get("average_price"))))
        for item in answer.get("items", [])
        if item.get("average_price") is not None
    ]
    return charts.line_chart(points, f"{market} reference price")


# -- requests and webhooks -----------------------------------------------------------


async def requests_page(request: Request) -> Response:
    viewer = _viewer(request)
    if viewer is None:
        return _to_signin(request)
    found, items, _ = recent_requests(
        _api(request).state, viewer.principal, None, 100, Filters(None, None)
    )
    rows = [
        {**item, "positions": [first for first, _ in entry.caused]}
        for entry, item in zip(found, items, strict=True)
    ]
    return _render(request, "requests.html", viewer, rows=rows, live=True)


async def webhooks_page(request: Request) -> Response:
    viewer = _viewer(request)
    if viewer is None:
        return _to_signin(request)
    api = _api(request)
    rows = []
    for customer in _customers(request, viewer):
        shown = webhook_delivery.status(api, customer)  # GET /v2/sandbox/webhooks's answer
        if shown is not None:
            rows.append({"customer": customer, "webhook": shown})
    return _render(request, "webhooks.html", viewer, rows=rows, live=True)


# -- controls ------------------------------------------------------------------------


async def controls_page(request: Request, message: str = "", status: int = 200) -> Response:
    viewer = _viewer(request)
    if viewer is None:
        return _to_signin(request)
    api = _api(request)
    engine = api.state.engine
    return _render(
        request,
        "controls.html",
        viewer,
        status=status,
        now=format_time(engine.clock.now()),
        mode=engine.clock.mode,
        snapshots=list_snapshots(api.state.queries),
        faults=api.state.queries.sandbox_faults(None if viewer.operator else viewer.customer_id),
        markets=list(MARKETS),
        message=message,
    )


async def controls_action(request: Request) -> Response:
    viewer, form, refused = await _checked_form(request)
    if refused is not None or viewer is None:
        return refused or _to_signin(request)
    call = _CONTROLS.get(form.get("action", ""))
    if call is None:
        return _problem(request, viewer, "action invalid: not a control")
    method, path, body = call(form)
    status, answer = await api_call(
        request, viewer.session.token, method, path, **({"json": body} if body else {})
    )
    return await controls_page(request, f"{form.get('action')}: {_said(status, answer)}")


def _fault_body(form: dict[str, str]) -> dict[str, Any]:
    try:
        body = orjson.loads(form.get("rule") or "{}")
    except orjson.JSONDecodeError:
        body = {}
    return body if isinstance(body, dict) else {}


# Each control: the API call it makes from the posted form (method, path, JSON body).
_CONTROLS: dict[str, Any] = {
    "advance": lambda f: (
        "POST",
        "/v2/sandbox/clock",
        {"advance_seconds": int(f["seconds"]) if f.get("seconds", "").isdigit() else 0},
    ),
    "set_clock": lambda f: ("POST", "/v2/sandbox/clock", {"set_to": f.get("to", "")}),
    "take_snapshot": lambda f: ("POST", "/v2/sandbox/snapshots", {"name": f.get("name", "")}),
    "restore_snapshot": lambda f: (
        "POST",
        f"/v2/sandbox/snapshots/{f.get('name', '')}/restore",
        None,
    ),
    "set_price": lambda f: (
        "POST",
        f"/v2/sandbox/markets/{f.get('market', '')}/price",
        {"price": f.get("price", "")},
    ),
    "arm_fault": lambda f: ("POST", "/v2/sandbox/faults", _fault_body(f)),
    "remove_fault": lambda f: ("DELETE", f"/v2/sandbox/faults/{f.get('rule_id', '')}", None),
    "complete_transfer": lambda f: (
        "POST",
        f"/v2/sandbox/transfers/{f.get('transfer_id', '')}/complete",
        None,
    ),
}
