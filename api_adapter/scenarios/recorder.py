"""`sandex serve --record FILE`: every request and response of a session, written as a
scenario that `sandex replay` runs green against a fresh sandbox with the same seed.

The recorder is pure ASGI middleware around the whole app. It writes the scenario's
header (format version, seed, clock start and the other settings that differ from the
defaults) at start, then appends one step per answered request, so the file is a valid
scenario after every request, even if the server is killed.

How requests become steps:

- a token request is not a step: its answer is signed with this deployment's secret;
  the replay logs each actor in itself;
- `POST /v2/sandbox/customers` becomes `create_actor: customerN`, and that customer's
  client is then `customerN`, the bootstrap client `admin`, no token `anonymous`; a token
  narrowed to fewer scopes than its client holds is recorded as `scopes`;
- `POST /v2/sandbox/clock` becomes `advance` or `set_to`;
- every other request becomes a `request` step expecting the exact status and body
  that were answered; an id a response shows for the first time is saved as `vN`, and
  every later mention of it (in a path, a body, an expected body) is written `{vN}`, as
  are a recorded customer's ids (`{customerN.profile_id}`);
- a 429 (a rate limit counts wall time, which a replay does not follow) and a request
  whose body is not JSON are left out, with a comment: neither changed anything; a 429
  a fault rule answered is kept, since its decision is in the log;
- `POST /v2/sandbox/faults` becomes a `fault` step; a request's `Prefer` header (a
  one-off fault) is kept; an answer a wire fault spoiled is recorded as what the client
  got, `expect: {wire: <kind>}` (the fault gate notes what fired in the request's state);
- a secret an answer shows once (a webhook's `secret`) is left out of the expected body
  and ignored: the file keeps no secret, and a replay draws a new one. The file is
  created private (0600): it holds every request's body;
- a market data feed connection (docs/market-data.md) becomes `stream: {name: streamN,
  path}`, the messages it was sent become `expect_messages` (exact, in order) before
  the next step, and its end `close_stream`. Before each request the recorder waits
  (briefly, bounded) until the feeds' connections have been sent every message
  published so far, so each message lands before the step after the request that made
  it, where a replay expects it. A session on a wall clock does not record its feeds:
  the ladder moves with wall time there, which a replay does not follow.

On a wall clock, the engine time that passed between two requests is recorded as an
`advance`, and fields that hold times are ignored, since a replay runs on a manual
clock; a session on a manual clock is recorded exactly. Requests are recorded in the
order their answers complete, which is the order the writer decided them when the
client sends one request at a time.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import orjson
import yaml
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sandex.api_adapter.auth import Tokens
from sandex.api_adapter.operations import operation
from sandex.api_adapter.problems import AuthError
from sandex.api_adapter.scenarios.runner import FAULTS_PATH
from sandex.engine.config.settings import SELF_MATCH_PREVENTION
from sandex.engine.kernel.clock import format_time, parse_time
from sandex.engine.store import private_files
from sandex.engine.tools.scenario_file import (
    ADMIN,
    ANONYMOUS,
    FORMAT_VERSION,
    STREAM_PATHS,
    WIRE_OUTCOMES,
    format_duration,
)

# Settings that are not the scenario's to choose (see engine.scenario).
_NOT_RECORDED = {"clock", "durability", "group_commit_max", "group_commit_events"}
_NOT_RECORDED |= {"tick_interval_seconds"}
_NOT_RECORDED |= {"rate_limits_enabled", "rate_limits", "assert_invariants", "execution_ids"}
# Fields holding a time: ignored when the session ran on a wall clock.
TIME_FIELDS = [
    "created_at",
    "updated_at",
    "modified_at",
    "expires_at",
    "expiration_date",
    "executed_at",
    "taken_at",
    "restored_at",
    "reset_at",
    "as_of",
    "snapshot_at",
    "now",
    "range",
    "notional_value",
]
# Request headers a step keeps (by their ASGI name): the client's request id, and a
# one-off fault it asked for (`Prefer: sandbox-fault=...`, docs/faults.md).
RECORDED_HEADERS = {b"x-request-id": "X-Request-ID", b"prefer": "Prefer"}
# The request state key where the fault gate notes the fault that fired.
FAULT_STATE = "sandex.fault"
# Fields of an answer that hold a secret shown once: never written to a recording.
SECRET_FIELDS = frozenset({"secret", "client_secret"})
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# A paging cursor is sealed with the deployment's key: a replay gets others, like ids.
_ID_KEYS = frozenset({"id", "crypto_tx_hash", "memo", "next_page_cursor"})


# The recording of a world (`resume`) keeps its state beside it, in this file's suffix.
STATE_SUFFIX = ".state.json"
SNAPSHOTS_PATH = operation("TakeSandboxSnapshot").path

# How long a request waits for the feeds to send what was published before it.
FEED_CATCH_UP_SECONDS = 5.0


@dataclass
class _Feed:
    """A feed connection being recorded: the messages sent since they were last written."""

    name: str
    path: str
    written: bool = False  # its stream step is in the file
    sent: int = 0
    messages: list[Any] = field(default_factory=list)
    closed: tuple[int, str] | None = None  # by the server


def _is_feed(path: str) -> bool:
    return path.split("/")[1:2] in ([p[1:]] for p in STREAM_PATHS)


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _dump(data: Any) -> str:
    return yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
        default_flow_style=False,
    )


def check_target(path: str | Path, *, force: bool = False) -> None:
    """Refuse, before the server starts, a recording file that would be lost or cannot be
    written: an existing file unless `force` (`sandex serve --force`), a directory, a
    folder that cannot be written. `CliError`, one line.

    There is no appending: a recording names each id a response showed by a variable
    (`vN`, `customerN`) that only this recorder's memory maps back to the id; the file
    keeps the names, not the ids. A second session on the same database would mention
    the first one's ids, which a continuation could not write as variables, and its
    replay would not find them; nor can the file tell whether the database changed in
    between. Record each session to a file of its own."""
    from sandex.api_adapter.cli.errors import CliError

    p = Path(path)
    if p.is_dir():
        raise CliError(f"--record {path}: a directory; a recording is a file")
    if p.exists() or p.is_symlink():
        if not force:
            raise CliError(
                f"--record {path} exists already; it is not overwritten (--force overwrites"
                " it; a recording cannot be continued: record to a new file)"
            )
        if not os.access(p, os.W_OK):
            raise CliError(f"--record {path}: cannot write it (permission denied)")
        return
    folder = next((f for f in [p.parent, *p.parent.parents] if f.exists()), Path("."))
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise CliError(f"--record {path}: cannot create it in {folder}")


def state_path(recording: str | Path) -> Path:
    """Where a world's recorder keeps what its file does not say (`Recorder(resume=True)`)."""
    return Path(f"{recording}{STATE_SUFFIX}")


def recorded_settings(settings: Any) -> dict[str, Any]:
    """The settings a recording's header holds: those that differ from the defaults and
    are the scenario's to choose."""
    chosen = settings.model_dump(mode="json", exclude_defaults=True)
    return {k: v for k, v in chosen.items() if k not in _NOT_RECORDED}


def fork_recording(template: Path, snapshot: str, target: Path, settings: Any) -> None:
    """Start the recording of a world forked from `template`'s recording at its snapshot
    `snapshot`: the template's header (its seed and clock start) with the fork's own
    settings, and the template's steps up to and including the snapshot's, so that the
    fork's recording replays from an empty sandbox. `LookupError` when the template's
    recorder did not see that snapshot taken."""
    try:
        state = orjson.loads(state_path(template).read_bytes())
    except FileNotFoundError:
        raise LookupError("the template world is not recorded") from None
    mark = state["marks"].get(snapshot)
    if mark is None:
        raise LookupError(f"the template's recording did not see snapshot {snapshot} taken")
    text = template.read_bytes()[: mark["length"]]
    steps = text[text.index(b"\nsteps:\n") + 1 :]
    header = mark["header"]
    kept = {key: header["settings"][key] for key in ("seed", "clock_start")}
    header = {**header, "settings": {**recorded_settings(settings), **kept}}
    data = _header_text(header, mark["mode"]).encode() + steps
    private_files.write(target, data)
    fork = {**mark, "length": len(data), "marks": {}}
    private_files.write(state_path(target), orjson.dumps(fork))


def _header_text(header: dict[str, Any], mode: str) -> str:
    """The recording's header as YAML. Every fork of a template writes the same one (its
    settings the same): dumped once per header, by its JSON, which YAML's dumper is not
    quick enough to do again for each of a suite's worlds."""
    try:
        key = orjson.dumps(header)
    except TypeError:
        return _header_dumped(header, mode)
    return _header_of_json(key, mode)


@lru_cache(maxsize=32)
def _header_of_json(key: bytes, mode: str) -> str:
    return _header_dumped(orjson.loads(key), mode)


def _header_dumped(header: dict[str, Any], mode: str) -> str:
    return f"# Recorded on a {mode} clock; `sandex replay` runs it on a fresh sandbox.\n" + _dump(
        header
    )


class Recorder:
    def __init__(
        self,
        app: ASGIApp,
        *,
        path: str | Path,
        engine: Any,
        resume: bool = False,
        purpose: str = "a session recorded by sandex serve --record",
    ) -> None:
        """`resume`: a world's recording, which goes on where it was when the world is
        loaded again (its state beside it) and marks each snapshot taken, for forks."""
        self.app = app
        self.path = Path(path)
        self.engine = engine
        self.resume = resume
        self.purpose = purpose
        self.marks: dict[str, Any] = {}
        self._header: dict[str, Any] = {}
        self.wall = engine.clock.mode == "wall"
        self.actors: dict[str, str] = {}  # client_id -> actor name
        self.ids: dict[str, str] = {}  # an id seen -> the variable that names it
        self.captured: list[str] = []
        self.scopes: dict[str, set[str]] = {}  # client_id -> the scopes it holds
        self._last_time: datetime = engine.clock.now()
        self._tokens: Tokens | None = None
        self.feeds: list[_Feed] = []  # open feed connections
        self._feeds_opened = 0
        self._bootstrap = {
            c["client_id"] for c in engine.state.clients.values() if _is_bootstrap(engine, c)
        }
        if resume and state_path(self.path).exists():
            self._load(orjson.loads(state_path(self.path).read_bytes()))
            return
        if len(engine.state.customers) > 1 or engine.state.position > 3:
            print(
                f"sandex: recording to {self.path} on a database that already holds"
                f" {engine.state.position} events; the recording replays only against"
                " this same history",
                file=sys.stderr,
            )
        self._write_header()

    # -- the file --

    def _write_header(self) -> None:
        recorded = recorded_settings(self.engine.settings)
        recorded["seed"] = self.engine.seed
        recorded["clock_start"] = format_time(self.engine.clock.now())
        self._header = {"version": FORMAT_VERSION, "purpose": self.purpose, "settings": recorded}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        private_files.write(  # it holds every request's body: the owner's only
            self.path, (_header_text(self._header, self._mode) + "steps: []\n").encode()
        )
        self._empty = True
        self._save()

    @property
    def _mode(self) -> str:
        return "wall" if self.wall else "manual"

    def _memory(self) -> dict[str, Any]:
        """What the recorder knows that the file does not say, and the file's length."""
        return {
            "length": self.path.stat().st_size,
            "empty": self._empty,
            "header": self._header,
            "mode": self._mode,
            "actors": self.actors,
            "ids": self.ids,
            "captured": self.captured,
            "scopes": {client: sorted(held) for client, held in self.scopes.items()},
            "last_time": format_time(self._last_time),
            "feeds_opened": self._feeds_opened,
        }

    def _save(self) -> None:
        if self.resume:
            state = {**self._memory(), "marks": self.marks}
            private_files.write(state_path(self.path), orjson.dumps(state))

    def _load(self, state: dict[str, Any]) -> None:
        # what a crash cut off after the last state was saved is cut off the file too
        with self.path.open("r+b") as f:
            f.truncate(state["length"])
        self._empty = state["empty"]
        self._header = state["header"]
        self.actors = state["actors"]
        self.ids = state["ids"]
        self.captured = state["captured"]
        self.scopes = {client: set(held) for client, held in state["scopes"].items()}
        self._last_time = parse_time(state["last_time"])
        self._feeds_opened = state["feeds_opened"]
        self.marks = state["marks"]

    def _append(self, step: dict[str, Any], comment: str | None = None) -> None:
        text = self.path.read_text() if self._empty else None
        if text is not None:  # the first step replaces the empty list
            self.path.write_text(text[: -len("steps: []\n")] + "steps:\n")
            self._empty = False
        block = _dump([step])
        if comment:
            block = f"# {comment}\n" + block
        with self.path.open("a") as f:
            f.write(block)
        self._save()

    def _comment(self, text: str) -> None:
        if self._empty:
            return  # nothing to attach it to yet; a note before the first step is noise
        with self.path.open("a") as f:
            f.write(f"# {text}\n")
        self._save()

    # -- ASGI --

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and _is_feed(scope["path"]):
            await self._feed(scope, receive, send)
            return
        if scope["type"] != "http" or not scope["path"].startswith("/v2"):
            await self.app(scope, receive, send)
            return
        if self.feeds:
            await self._catch_up()
        chunks: list[bytes] = []
        answer: dict[str, Any] = {"status": 0, "body": []}

        async def receive_recorded() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
            return message

        def record() -> None:
            try:
                self._record(
                    scope, b"".join(chunks), answer["status"], b"".join(answer["body"]), started
                )
            except Exception as exc:  # noqa: BLE001 - a recording problem must not fail the request
                print(
                    f"sandex: could not record {scope['method']} {scope['path']}: {exc}",
                    file=sys.stderr,
                )

        async def send_recorded(message: Message) -> None:
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
            elif message["type"] == "http.response.body":
                answer["body"].append(message.get("body", b""))
                if not message.get("more_body", False) and not answer.get("recorded"):
                    # Recorded before the answer's end leaves: a client that forks a
                    # snapshot it was just answered finds the snapshot's mark saved.
                    answer["recorded"] = True
                    record()
            await send(message)

        started = self.engine.clock.now()
        await self.app(scope, receive_recorded, send_recorded)
        if not answer.get("recorded"):
            record()

    # -- feed connections into steps --

    async def _feed(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.wall:
            self._comment(f"left out: WebSocket {scope['path']} (a wall clock's feed)")
            await self.app(scope, receive, send)
            return
        self._feeds_opened += 1
        feed = _Feed(f"stream{self._feeds_opened}", scope["path"])

        async def send_recorded(message: Message) -> None:
            kind = message["type"]
            if kind == "websocket.accept":
                self.feeds.append(feed)
            elif kind == "websocket.send" and message.get("text") is not None:
                feed.messages.append(orjson.loads(message["text"]))
                feed.sent += 1
            elif kind == "websocket.close":
                feed.closed = (int(message.get("code", 1000)), str(message.get("reason") or ""))
            await send(message)

        try:
            await self.app(scope, receive, send_recorded)
        finally:
            if feed in self.feeds:
                self.feeds.remove(feed)
                try:
                    self._write_feed(feed, ending=True)
                except Exception as exc:  # noqa: BLE001 - recording must not fail the feed
                    print(f"sandex: could not record {feed.path}: {exc}", file=sys.stderr)

    async def _catch_up(self) -> None:
        """Wait until every open feed was given its first messages and sent everything the
        hub queued for it, then write what they were sent, before this request's step."""
        hub = self.engine.market_feed
        deadline = time.monotonic() + FEED_CATCH_UP_SECONDS
        while True:
            live = [f for f in self.feeds if f.closed is None]
            if (
                hub.subscribers() == len(live)
                and not hub.waiting()
                and hub.pushed() == sum(f.sent for f in live)
            ):
                break
            if time.monotonic() > deadline:
                self._comment(
                    "the feeds had not sent every published message in time: the"
                    " expect_messages below may not replay"
                )
                break
            await asyncio.sleep(0.001)
        for feed in list(self.feeds):
            self._write_feed(feed, ending=False)

    def _write_feed(self, feed: _Feed, *, ending: bool) -> None:
        if not feed.written:
            if feed.closed is not None and not feed.messages:
                code, reason = feed.closed
                self._comment(f"left out: WebSocket {feed.path}, closed at once: {code} {reason}")
                return
            self._append({"stream": {"name": feed.name, "path": feed.path}})
            feed.written = True
        if feed.messages:
            messages, feed.messages = feed.messages, []
            check = {"stream": feed.name, "match": "exact", "messages": self._ids(messages)}
            self._append({"expect_messages": check})
        if ending:
            if feed.closed is not None and feed.closed[0] != 1000:
                code, reason = feed.closed
                self._comment(f"the server closed {feed.name}: {code} {reason}")
            self._append({"close_stream": feed.name})

    # -- requests into steps --

    def _tokens_of(self, scope: Scope) -> Tokens:
        if self._tokens is None:
            self._tokens = scope["app"].state.tokens
        assert self._tokens is not None
        return self._tokens

    def _record(
        self, scope: Scope, raw: bytes, status: int, answer: bytes, started: datetime
    ) -> None:
        method, path = scope["method"], scope["path"]
        fault = _fault_of(scope)
        if status == 429 and fault is None:
            self._comment(f"left out: {method} {path} answered 429 (a wall-time rate limit)")
            return
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            self._comment(f"left out: {method} {path} with a body that is not JSON")
            return
        try:
            response = orjson.loads(answer) if answer else None
        except orjson.JSONDecodeError:
            response = answer.decode("utf-8", "replace")
        if self.wall:
            elapsed = started - self._last_time
            if elapsed > timedelta(0):
                self._append({"advance": format_duration(elapsed)})
            self._last_time = max(self._last_time, self.engine.clock.now())
        request: dict[str, Any] = {"method": method, "path": self._ids(path)}
        headers = dict(scope.get("headers", ()))
        actor, scopes, auth = self._who(scope, headers.get(b"authorization"))
        if actor != ADMIN:
            request["actor"] = actor
        if scopes is not None:
            request["scopes"] = scopes
        query = parse_qsl(scope.get("query_string", b"").decode(), keep_blank_values=True)
        if query:
            merged: dict[str, Any] = {}
            for key, value in query:
                value = self._ids(value)
                if key in merged:
                    previous = merged[key]
                    merged[key] = (
                        [*previous, value] if isinstance(previous, list) else [previous, value]
                    )
                else:
                    merged[key] = value
            request["query"] = merged
        extra = {}
        if auth is not None:
            extra["Authorization"] = auth
        for name, sent in RECORDED_HEADERS.items():
            if name in headers:
                extra[sent] = headers[name].decode("latin-1")
        if extra:
            request["headers"] = extra
        if body is not None:
            request["body"] = self._ids(body)

        # a refused creation made no customer: it is recorded as the request it was
        customer = status == 200 and path == "/v2/sandbox/customers"
        if method == "POST" and customer and isinstance(response, dict):
            self._append(self._new_actor(body, response))
            return
        if fault is not None and fault.get("action") in WIRE_OUTCOMES:
            # What the client got: no answer, or a spoiled one; nothing of it to name.
            self._append({"request": request, "expect": {"wire": fault["action"]}})
            return
        if method == "POST" and path == FAULTS_PATH and status == 200 and isinstance(body, dict):
            armed: dict[str, Any] = {"fault": self._ids(body)}
            if actor != ADMIN:
                armed["actor"] = actor
            saves = self._capture(response)
            if saves:
                armed["save"] = saves
            self._append(armed)
            return
        if method == "POST" and path == "/v2/sandbox/clock" and status == 200 and actor == ADMIN:
            if isinstance(body, dict) and body.get("advance_seconds") is not None:
                self._append({"advance": f"{body['advance_seconds']}s"})
                return
            if isinstance(body, dict) and body.get("set_to") is not None:
                self._append({"set_to": format_time(parse_time(body["set_to"]))})
                return
        response, hidden = _without_secrets(response)
        saves = self._capture(response)
        expect: dict[str, Any] = {"status": status}
        if response is not None:
            expect["body"] = self._ids(response)
            expect["match"] = "exact"
            ignore = [*hidden, *(TIME_FIELDS if self.wall else ())]
            if ignore:
                expect["ignore"] = ignore
        step: dict[str, Any] = {"request": request, "expect": expect}
        if saves:
            step["save"] = saves
        self._append(step)
        taken = method == "POST" and path == SNAPSHOTS_PATH and status == 200
        if taken and self.resume and isinstance(body, dict):
            # where a fork of this snapshot starts its recording (`fork_recording`)
            self.marks[str(body["name"])] = orjson.loads(orjson.dumps(self._memory()))
            self._save()

    def _capture(self, response: Any) -> dict[str, str]:
        """Name each id a response shows for the first time, so later steps refer to it by
        name: a replay that draws other ids (another sandbox, or a wall-clock session
        replayed on a manual clock) still follows the same objects."""
        saves: dict[str, str] = {}

        def walk(node: Any, path: str) -> None:
            if isinstance(node, dict):
                for key, value in node.items():
                    sub = f"{path}.{key}" if path else str(key)
                    if isinstance(value, str) and value not in self.ids and _is_id(key, value):
                        name = f"v{len(self.captured) + 1}"
                        self.captured.append(name)
                        self.ids[value] = f"{{{name}}}"
                        saves[name] = sub
                    else:
                        walk(value, sub)
            elif isinstance(node, list):
                for i, value in enumerate(node):
                    walk(value, f"{path}.{i}" if path else str(i))

        walk(response, "")
        return saves

    def _who(self, scope: Scope, header: bytes | None) -> tuple[str, list[str] | None, str | None]:
        """(actor, narrowed scopes or None, an Authorization header to send as is)."""
        if header is None:
            return ANONYMOUS, None, None
        text = header.decode("latin-1")
        kind, _, token = text.partition(" ")
        if kind.lower() != "bearer":
            return ANONYMOUS, None, text
        try:
            claims = self._tokens_of(scope).verify(token.strip())
        except AuthError:
            return ANONYMOUS, None, f"{kind} {_unsigned(token.strip())}"
        client_id = claims.get("c", "")
        if client_id in self._bootstrap:
            actor = ADMIN
        elif client_id in self.actors:
            actor = self.actors[client_id]
        else:
            return ANONYMOUS, None, text
        held = self.scopes.get(client_id)
        if held is None:
            client = self.engine.state.clients.get(client_id)
            held = set(client["scopes"]) if client else set()
            self.scopes[client_id] = held
        granted = [s for s in claims.get("s", ()) if s in held]
        return actor, (granted if set(granted) != held else None), None

    def _new_actor(self, body: Any, made: dict[str, Any]) -> dict[str, Any]:
        name = f"customer{len(self.actors) + 1}"
        self.actors[made["client_id"]] = name
        for key in ("customer_id", "profile_id", "client_id"):
            self.ids[made[key]] = f"{{{name}.{key}}}"
        step: dict[str, Any] = {"create_actor": name}
        body = body if isinstance(body, dict) else {}
        if body.get("scopes"):
            step["scopes"] = body["scopes"]
            self.scopes[made["client_id"]] = set(body["scopes"])
        if body.get("self_match_prevention") is True:
            step["self_match_prevention"] = True
            self.scopes.get(made["client_id"], set()).add(SELF_MATCH_PREVENTION)
        if body.get("identity_labels") is True:
            step["identity_labels"] = True
        return step

    def _ids(self, value: Any) -> Any:
        """`value` as a scenario template: its braces escaped, and a recorded customer's
        ids written as variables wherever they appear."""
        if isinstance(value, str):
            if value in self.ids:
                return self.ids[value]
            value = value.replace("{", "{{").replace("}", "}}")
            for known, variable in self.ids.items():
                if known in value:
                    value = value.replace(known, variable)
            return value
        if isinstance(value, dict):
            return {self._ids(k): self._ids(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._ids(v) for v in value]
        return value


def _unsigned(token: str) -> str:
    """A token this sandbox refused, without its signature (what makes it a credential:
    another world's token still opens that world); a replay is refused it alike."""
    parts = token.split(".")
    if len(parts) != 3:
        return token
    return f"{parts[0]}.{parts[1]}.{'0' * len(parts[2])}"


def _fault_of(scope: Scope) -> dict[str, Any] | None:
    """The fault that fired on this request, as the fault gate noted it in its state."""
    fault = scope.get("state", {}).get(FAULT_STATE)
    return fault if isinstance(fault, dict) else None


def _without_secrets(body: Any) -> tuple[Any, list[str]]:
    """`body` without the secrets an answer shows once (a webhook's `secret`), and the
    names left out: the recording keeps no secret, and a replay draws other ones, so
    its expectation ignores them."""
    hidden: list[str] = []

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            kept = {}
            for key, value in node.items():
                if key in SECRET_FIELDS and isinstance(value, str):
                    if key not in hidden:
                        hidden.append(key)
                else:
                    kept[key] = strip(value)
            return kept
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(body), hidden


def _is_id(key: str, value: str) -> bool:
    if len(value) < 8:  # too short to be unique: replacing it could touch an amount
        return False
    return key in _ID_KEYS or key.endswith("_id") or bool(_UUID.match(value))


def _is_bootstrap(engine: Any, client: dict[str, Any]) -> bool:
    customer = engine.state.customers.get(client["customer_id"])
    return bool(customer and customer.get("bootstrap"))
