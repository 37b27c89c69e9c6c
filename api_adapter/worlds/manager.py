"""The non-default worlds of a server: each a store kept beside the default database (an
SQLite file in the worlds folder `<db>.worlds/`, or on PostgreSQL a schema of the same
database: engine/store/locations.py's `beside`), with its key file and a manifest in that
folder; opened on its first request and stopped when deleted or when the server stops.

Worlds share nothing but the process: each has its own engine (log, clock, seed,
settings, books, timers, feeds), key file (tokens of one are refused by another), app
(rate limits, webhooks) and bootstrap client. The manifest, written atomically, is what
lists a world, so a restarted server serves the same worlds."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import closing, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from fastapi import FastAPI
from pydantic import ValidationError

if TYPE_CHECKING:
    from sandex.api_adapter.world import World

from sandex.api_adapter.bootstrap import Bootstrap, Credentials
from sandex.engine import Engine
from sandex.engine.config.settings import Settings
from sandex.engine.domain.sandbox_snapshots import snapshots
from sandex.engine.kernel.clock import format_time
from sandex.engine.kernel.commands import CreateCustomer
from sandex.engine.kernel.errors import Forbidden, Invalid, NotFound, Unavailable
from sandex.engine.kernel.logs import get_logger
from sandex.engine.read.clients import customer_ids
from sandex.engine.runtime import key_file
from sandex.engine.runtime.shared_writer import SharedWriter
from sandex.engine.store import (
    EventStore,
    Forking,
    Location,
    StoreUnavailable,
    capability,
    drop_store,
    locate,
    open_reader,
    private_files,
    store_size,
    take_lease,
)

log = get_logger("sandex.worlds")

PREFIX = "w_"
_ID = re.compile(r"^w_[A-Za-z0-9_-]{16,64}$")
# Settings a world may not choose: the server's connection limits are the server's.
SERVER_SETTINGS = frozenset(
    {
        "header_timeout_seconds",
        "body_timeout_seconds",
        "keep_alive_timeout_seconds",
        "max_connections",
        "max_connections_per_ip",
        "max_url_bytes",
        "max_header_bytes",
        "writer_lease_seconds",
        "max_worlds",
        "max_loaded_worlds",
        "world_idle_unload_seconds",
        "world_expires_after_idle_seconds",
    }
)
# How long a deletion waits for the world's requests in flight before it stops the engine.
DRAIN_SECONDS = 5.0
# How often the housekeeping thread unloads idle worlds and deletes expired ones.
_SWEEP_SECONDS = 1.0
# The WebSocket close code of a feed whose world is deleted (RFC 6455: going away).
GOING_AWAY = 1001
# The bootstrap client's id in a new world (each world has its own clients).
BOOTSTRAP_CLIENT = "sandex"


def folder_for(db: str | Path) -> Path:
    """The worlds folder of the default database `db` (beside a file; for a server's
    database, under the local state folder): the worlds' manifests and key files, and
    on SQLite their databases."""
    return locate(db).beside_folder()


def location_of(db: str | Path, world_id: str) -> Location:
    """Where the log of the world `world_id` beside the default database `db` lives: the
    one place the manager, `sandex worlds` and `--world` ask."""
    return locate(db).beside(world_id)


def records(db: str | Path) -> list[Record]:
    """The worlds kept beside the default database `db` (a manifest, and its store
    where one may look), oldest first."""
    folder = folder_for(db)
    found = []
    for manifest in folder.glob(f"{PREFIX}*.json") if folder.is_dir() else ():
        if not _ID.match(manifest.stem):
            continue  # a world's own file, such as its webhook delivery progress
        try:
            record = Record(**orjson.loads(manifest.read_bytes()))
            where = location_of(db, record.id)
        except (OSError, ValueError, TypeError) as exc:
            log.warning("world manifest unreadable", path=str(manifest), error=str(exc))
            continue
        if where.exists():
            found.append(record)
    return sorted(found, key=lambda r: r.seq)


@dataclass
class Served:
    """A loaded world: its assembly (engine, scheduler, webhook deliverer, app), and
    its HTTP requests in flight (a deletion lets them end first)."""

    world: World
    in_flight: int = 0  # HTTP requests
    sockets: int = 0  # WebSocket feeds

    @property
    def busy(self) -> bool:
        return bool(self.in_flight or self.sockets)

    @property
    def engine(self) -> Engine:
        return self.world.engine

    @property
    def app(self) -> FastAPI:
        return self.world.app

    def stop(self) -> None:
        self.world.stop()


def assemble(
    db: Location,
    settings: Settings,
    bootstrap: Bootstrap,
    recording: Path | None = None,
    *,
    console: bool = True,
    store: EventStore | None = None,
    writer: SharedWriter | None = None,
) -> Served:
    """A started world on `db`, assembled as `sandex serve` assembles the default one,
    but with no worlds of its own; `bootstrap` makes its bootstrap client. `recording`:
    the file its requests are recorded to, as a scenario; `console`: whether it serves
    the console; `store`: `db` already open (a fork's), the world's from now on;
    `writer`: the writer thread its engine shares with the other worlds."""
    from sandex.api_adapter.world import World

    try:
        world = World.open(
            db.text,
            settings,
            store=store,
            bootstrap=bootstrap,
            background=True,
            worlds=False,
            record=recording,
            record_world=True,
            console=console,
            writer=writer,
        )
    except StoreUnavailable as exc:
        raise store_refused(exc) from exc
    return Served(world.start())


def store_refused(exc: StoreUnavailable) -> Unavailable:
    """The 503 of a world its database would not open. A database server at a connection
    limit (its `max_connections`, or a database's or role's CONNECTION LIMIT: each
    loaded world holds a connection) is named as such, so the client knows to delete
    worlds, lower `max_loaded_worlds` or raise that limit."""
    text = str(exc)
    if "too many clients" in text or "too many connections" in text:
        return Unavailable(
            "the database server refused another connection (its connection limit, such as"
            " max_connections, is reached; each loaded world holds a connection): delete"
            f" worlds, lower max_loaded_worlds or raise that limit ({text.strip()})",
            meta={"limit": "database_connections"},
        )
    return Unavailable(f"the world's database cannot be opened: {text.strip()}")


def _new_client(secret: str) -> Bootstrap:
    """The bootstrap client of a new world, with a secret drawn from the OS; a world
    that has its clients (a fork, a restart) keeps them."""

    def made(engine: Engine) -> Credentials:
        if engine.state.customers:
            client_id, _ = _bootstrap_of(engine)
            return Credentials(client_id, None, "(not shown)")
        engine.execute(
            CreateCustomer(client_id=BOOTSTRAP_CLIENT, client_secret=secret, bootstrap=True)
        )
        return Credentials(BOOTSTRAP_CLIENT, secret, secret)

    return made


def _kept_clients(engine: Engine) -> Credentials:
    """A world opened again: its bootstrap client is in its log."""
    client_id, _ = _bootstrap_of(engine)
    return Credentials(client_id, None, "(not shown)")


@dataclass
class Record:
    """A world as its manifest holds it: what it was created with."""

    id: str
    name: str
    created_at: str
    clock: str
    seed: int | None
    start_time: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    from_world: str | None = None
    from_snapshot: str | None = None
    expires_after_idle_seconds: int | None = None
    record: bool = False  # its requests are recorded as a scenario
    seq: int = 0  # creation order: what a list's cursor holds

    def as_json(self) -> bytes:
        return orjson.dumps(self.__dict__, option=orjson.OPT_INDENT_2)


class WorldManager:
    """The worlds of one server beside its default database `db`. `base` is the default
    world's settings, under every world's own choices. Thread-safe: `create` and
    `remove` run in worker threads; `enter`, on the event loop, may wait for a world's
    loading (milliseconds)."""

    def __init__(self, db: str | Path, base: Settings, *, tidy: bool = False) -> None:
        """`tidy`: the caller holds the default database (its writer lease), so no other
        process is making a world here, and what a crash cut off may go."""
        self.db = str(db)
        self.folder = folder_for(db)
        self.base = base
        self.console = True  # whether each world serves the console (its default world's)
        self._lock = threading.RLock()
        self._records: dict[str, Record] = {}
        self._served: dict[str, Served] = {}
        self._last_used: dict[str, float] = {}
        self._opened_at = time.time()  # a world unused since the server started: since then
        self._stopping = threading.Event()
        self._sweeper: threading.Thread | None = None
        self._making = 0  # worlds being made (counted against max_worlds)
        self._seq = 0  # the last world's seq
        # The one writer thread (and committer) of every loaded world: driven at once,
        # worlds of their own threads each woke two per group and convoyed on the GIL.
        self._writer = SharedWriter()
        # The bootstrap client of each new world (not of a fork, which keeps its
        # template's): None draws a secret from the OS; set in-process only, by a test
        # harness that needs known credentials in every world.
        self.new_worlds_bootstrap: Bootstrap | None = None
        if self.folder.is_dir():
            self._make_folder()  # private, whatever its mode was
            self._records = {r.id: r for r in records(db)}
            if tidy:
                self._remove_unfinished()
            self._seq = max((r.seq for r in self._records.values()), default=0)
            if self._records:
                self._start_housekeeping()  # worlds unused since the restart expire too

    @classmethod
    def beside(cls, db: str | Path, base: Settings) -> WorldManager | None:
        """The worlds of the default database `db`, whose engine the caller has open
        (so it tidies what a crash left); None for an in-memory one."""
        return None if locate(db).in_memory else cls(db, base, tidy=True)

    # -- where a world lives --

    def db_of(self, world_id: str) -> Location:
        """The world's store: a file in the folder, or a schema of the server database."""
        return location_of(self.db, world_id)

    def _manifest_of(self, world_id: str) -> Path:
        return self.folder / f"{world_id}.json"

    def _recording_of(self, world_id: str) -> Path:
        return self.folder / f"{world_id}.scenario.yaml"

    def recording(self, world_id: str) -> str:
        """The scenario a world created with `record` recorded so far (docs/worlds.md)."""
        record = self._record(world_id)
        path = self._recording_of(world_id)
        if not record.record:
            raise NotFound(f"world {world_id} is not recorded (create it with record: true)")
        served = self._served_of(world_id)  # a world's recording starts when it loads
        if not path.exists():
            from sandex.api_adapter.scenarios.recorder import Recorder

            # nothing was asked of it yet: its recorder, made by its first request, not
            # either; made now, it writes its header
            Recorder(served.app, path=path, engine=served.engine, resume=True)
        return path.read_text()

    def _side_files_of(self, world_id: str) -> Iterator[Path]:
        """Its files in the folder: the manifest, key file, lease's lock, and on SQLite
        the database itself and its companions. Listed by their names' prefix: a
        glob's pattern, new for each world, was compiled anew at each deletion."""
        start = f"{world_id}."
        try:
            names = [e.name for e in os.scandir(self.folder) if e.name.startswith(start)]
        except FileNotFoundError:
            names = []
        return iter([self.folder / name for name in names])

    def _make_folder(self) -> None:
        self.folder.mkdir(mode=0o700, exist_ok=True)
        os.chmod(self.folder, 0o700)

    def _remove_unfinished(self) -> None:
        """Remove what a creation or a deletion cut off by a crash left behind: the files
        of a world with no manifest (a creation writes it last, a deletion removes it
        first), its store with them (on PostgreSQL, its schema), and temporaries. Never
        listed, they would stay forever otherwise."""
        cut_off: set[str] = set()
        for path in self.folder.iterdir():
            name = path.name
            if name.startswith(f".{PREFIX}") and name.endswith(".tmp"):
                path.unlink(missing_ok=True)
                continue
            world_id = name.split(".", 1)[0]
            if not _ID.match(world_id) or self._manifest_of(world_id).exists():
                continue
            cut_off.add(world_id)
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            log.warning("unfinished world's file removed", path=str(path))
        for world_id in cut_off:
            try:
                drop_store(self.db_of(world_id))
            except (ValueError, StoreUnavailable) as exc:  # not a schema's name; the next start
                log.warning("unfinished world's store kept", world=world_id, error=str(exc))

    # -- the worlds --

    def counts(self) -> dict[str, int]:
        """How many worlds there are and are loaded, and the server's caps of both (the
        default world's health answers them)."""
        with self._lock:
            total, loaded = len(self._records), len(self._served)
        return {
            "total": total,
            "loaded": loaded,
            "max_worlds": self.base.max_worlds,
            "max_loaded_worlds": self.base.max_loaded_worlds,
        }

    def ids(self) -> list[tuple[int, str]]:
        """Every world's (seq, id), oldest first."""
        with self._lock:
            return sorted((r.seq, r.id) for r in self._records.values())

    def settings_of(self, record: Record) -> Settings:
        """A world's settings: the server's, under the world's clock, seed and overrides."""
        chosen = {k: v for k, v in self.base.model_dump().items() if k not in {"seed"}}
        chosen.update(record.settings)
        chosen["clock"] = record.clock
        chosen["seed"] = record.seed
        if record.start_time is not None:
            chosen["clock_start"] = record.start_time
        made = Settings(**chosen)
        most = self.base.world_max_events  # the server's, which bounds every world's
        if _above(made.world_max_events, most):
            made = made.model_copy(update={"world_max_events": most})
        return made

    def create(
        self,
        *,
        name: str | None = None,
        clock: str = "wall",
        start_time: str | None = None,
        seed: int | None = None,
        settings: dict[str, Any] | None = None,
        from_world: str | None = None,
        from_snapshot: str | None = None,
        expires_after_idle_seconds: int | None = None,
        recorded: bool = False,
    ) -> dict[str, Any]:
        """Make a world, start it and answer its id and its bootstrap client (the secret
        is drawn from the OS and answered here only). With `from_world` and
        `from_snapshot` the world is a fork: that world as it was at that snapshot.
        `recorded`: its requests are recorded as a scenario (a fork's after its template's,
        which must be recorded too)."""
        if (from_world is None) != (from_snapshot is None):
            missing = "from_snapshot" if from_snapshot is None else "from_world"
            raise Invalid(f"{missing} is required with a fork", field=missing)
        # lower-case hex: a PostgreSQL schema's name as it is
        world_id = PREFIX + secrets.token_hex(18)
        overrides = dict(settings or {})
        for key in overrides:
            if key in SERVER_SETTINGS or key in {"clock", "seed", "clock_start"}:
                raise Invalid(
                    f"settings invalid: {key} cannot be set per world", field=f"settings.{key}"
                )
        if from_world is not None:
            assert from_snapshot is not None
            template = self._record(from_world, field_name="from_world")
            record = Record(
                id=world_id,
                name=name or world_id,
                created_at="",
                clock=template.clock,
                seed=template.seed,
                start_time=template.start_time,
                settings={**template.settings, **overrides},
                from_world=from_world,
                from_snapshot=from_snapshot,
                expires_after_idle_seconds=expires_after_idle_seconds,
                record=recorded,
            )
            if recorded and not template.record:
                raise Invalid(
                    f"record invalid: world {from_world} is not recorded, so a fork of it"
                    " cannot replay from an empty sandbox",
                    field="record",
                )
        else:
            record = Record(
                id=world_id,
                name=name or world_id,
                created_at="",
                clock=clock,
                seed=seed,
                start_time=start_time,
                settings=overrides,
                expires_after_idle_seconds=expires_after_idle_seconds,
                record=recorded,
            )
        try:
            world_settings = self.settings_of(record)
            if "world_max_events" in overrides:
                self._check_max_events(
                    Settings(**{"world_max_events": overrides["world_max_events"]})
                )
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            name_of = {"clock_start": "start_time"}.get(where, where)
            if where not in {"clock_start"}:
                name_of = f"settings.{where}"
            raise Invalid(f"{name_of} invalid: {error['msg']}", field=name_of) from exc
        with self._lock:
            most = self.base.max_worlds
            if len(self._records) + self._making >= most:
                raise Forbidden(
                    f"max_worlds reached: this server keeps at most {most} worlds; delete one",
                    meta={"limit": "max_worlds", "max_worlds": most},
                )
            self._make_room()
            self._seq += 1
            record.seq = self._seq
            self._make_folder()
            self._making += 1
        # Made outside the lock (its id is new to everyone): the other worlds' requests
        # go on meanwhile.
        db = self.db_of(world_id)
        # A world's files are synced to the disk as its log is: FULL survives a power cut,
        # NORMAL (a throwaway server's, such as the pytest plugin's) a process crash,
        # which the atomic renames already give.
        durable = world_settings.durability == "FULL"
        try:
            try:
                forked: EventStore | None = None
                if from_world is not None:
                    assert from_snapshot is not None
                    forked = self._fork(from_world, from_snapshot, db, world_settings)
                    try:
                        if recorded:
                            self._fork_recording(
                                from_world, from_snapshot, world_id, world_settings
                            )
                    except BaseException:
                        forked.close()
                        raise
                bootstrap = self.new_worlds_bootstrap if from_world is None else None
                served = assemble(
                    db,
                    world_settings,
                    bootstrap or _new_client(secrets.token_urlsafe(30)),
                    self._recording_of(world_id) if recorded else None,
                    console=self.console,
                    store=forked,
                    writer=self._writer,
                )
                try:
                    credentials = served.world.credentials
                    _, profile_id = _bootstrap_of(served.engine)
                    record.created_at = format_time(served.engine.clock.now())
                    private_files.write(self._manifest_of(world_id), record.as_json(), sync=durable)
                except BaseException:
                    served.stop()
                    raise
            except BaseException:
                self._remove_files(world_id)
                raise
            with self._lock:
                self._records[world_id] = record
                self._served[world_id] = served
                self._last_used[world_id] = time.time()
                self._start_housekeeping()
        finally:
            with self._lock:
                self._making -= 1
        log.info("world created", world=world_id, fork_of=from_world)
        return {
            "id": world_id,
            "name": record.name,
            "client_id": credentials.client_id,
            "client_secret": credentials.client_secret,
            "profile_id": profile_id,
            "clock": {
                "mode": served.engine.clock.mode,
                "now": format_time(served.engine.clock.now()),
            },
            "created_at": record.created_at,
        }

    def _check_max_events(self, asked: Settings) -> None:
        """A world's `world_max_events` is at most its server's (not set there: any)."""
        most = self.base.world_max_events
        if _above(asked.world_max_events, most):
            raise Invalid(
                f"settings.world_max_events invalid: at most {most}, this server's",
                field="settings.world_max_events",
            )

    def _record(self, world_id: str, *, field_name: str | None = None) -> Record:
        with self._lock:
            record = self._records.get(world_id)
        if record is None:
            if field_name is not None:
                raise Invalid(f"{field_name} invalid: no world {world_id}", field=field_name)
            raise NotFound(f"world not found with id {world_id}")
        return record

    def _fork(
        self, template_id: str, snapshot: str, db: Location, settings: Settings
    ) -> EventStore:
        """Write `db`, the world `template_id` as it was at its snapshot `snapshot`, by
        its store's fork: a copy of its database when its log ends at the snapshot, else
        its log up to the snapshot (the read models rebuilt from it when the fork
        opens). Never a replay of commands. The fork keeps the template's sealing and
        id keys (the secrets sealed in its log still open) under a new signing key: no
        token crosses. Returns the fork's store as its fork opened it, holding its
        writer lease, for its world to serve (a database opened once)."""
        template = self.enter(template_id)  # in use while it is copied: not unloaded
        if template is None:
            raise Invalid(f"from_world invalid: no world {template_id}", field="from_world")
        try:
            taken = snapshots(template.engine.state).get(snapshot)
            if taken is None:
                raise Invalid(
                    f"from_snapshot invalid: no snapshot {snapshot} in world {template_id}",
                    field="from_snapshot",
                )
            store = capability(template.engine.store, Forking)
            assert store is not None, "every store forks"
            try:
                forked = store.fork(
                    db.text,
                    up_to=int(taken["position"]),
                    lease=True,
                    lease_seconds=settings.writer_lease_seconds,
                )
            except StoreUnavailable as exc:
                raise store_refused(exc) from exc
        finally:
            self.leave(template_id, template)
        try:
            # synced to the disk as the world's log is (see `create`)
            key_file.fork(self.db_of(template_id).text, db.text, sync=settings.durability == "FULL")
        except BaseException:
            forked.close()
            raise
        return forked

    def _fork_recording(
        self, template_id: str, snapshot: str, world_id: str, settings: Settings
    ) -> None:
        from sandex.api_adapter.scenarios.recorder import fork_recording

        try:
            fork_recording(
                self._recording_of(template_id), snapshot, self._recording_of(world_id), settings
            )
        except LookupError as exc:
            raise Invalid(
                f"record invalid: {exc} (world {template_id}, snapshot {snapshot})",
                field="record",
            ) from exc

    def _served_of(self, world_id: str) -> Served:
        """The world loaded, opened now if it was not."""
        with self._lock:
            served = self._served.get(world_id)
            if served is None:
                record = self._record(world_id)
                self._make_room()
                recording = self._recording_of(world_id) if record.record else None
                served = assemble(
                    self.db_of(world_id),
                    self.settings_of(record),
                    _kept_clients,
                    recording,
                    console=self.console,
                    writer=self._writer,
                )
                self._served[world_id] = served
                self._start_housekeeping()
            self._last_used[world_id] = time.time()
            return served

    def _make_room(self) -> None:
        """Unload the least recently used idle worlds until one more may be loaded."""
        idle = sorted(
            (self._last_used.get(w, 0.0), w) for w, s in self._served.items() if not s.busy
        )
        while len(self._served) >= self.base.max_loaded_worlds and idle:
            self.unload(idle.pop(0)[1])

    def enter(self, world_id: str, *, feed: bool = False) -> Served | None:
        """The world `world_id`, loaded now if it was not, counted in use (an HTTP
        request, or a WebSocket `feed`) until `leave`; None when there is no such world."""
        if not _ID.match(world_id):
            return None
        with self._lock:
            if world_id not in self._records:
                return None
            served = self._served_of(world_id)
            if feed:
                served.sockets += 1
            else:
                served.in_flight += 1
            return served

    def leave(self, world_id: str, served: Served, *, feed: bool = False) -> None:
        with self._lock:
            if feed:
                served.sockets -= 1
            else:
                served.in_flight -= 1
            if self._served.get(world_id) is served:
                self._last_used[world_id] = time.time()

    def is_current(self, world_id: str, served: Served) -> bool:
        """Whether `served` is still the world `world_id` (not deleted nor unloaded)."""
        with self._lock:
            return self._served.get(world_id) is served

    def unload(self, world_id: str) -> bool:
        """Stop a loaded world that nothing uses; its files stay and its next request
        loads it again as it was. False when it is in use or not loaded."""
        with self._lock:
            served = self._served.get(world_id)
            if served is None or served.busy:
                return False
            del self._served[world_id]
            served.stop()  # under the lock: a request meanwhile waits for the lease
        log.info("world unloaded", world=world_id)
        return True

    def sweep(self, now: float | None = None) -> None:
        """Delete the worlds idle past their expiry, unload those idle past
        `world_idle_unload_seconds` (what the housekeeping thread runs every second)."""
        now = time.time() if now is None else now
        expired, idle = [], []
        with self._lock:
            for world_id, record in self._records.items():
                served = self._served.get(world_id)
                if served is not None and served.busy:
                    continue
                idle_for = now - self._last_used.get(world_id, self._opened_at)
                expiry = (
                    record.expires_after_idle_seconds or self.base.world_expires_after_idle_seconds
                )
                if expiry is not None and idle_for >= expiry:
                    expired.append(world_id)
                elif served is not None and idle_for >= self.base.world_idle_unload_seconds:
                    idle.append(world_id)
        for world_id in expired:
            with suppress(NotFound):
                self.delete(world_id)
                log.info("world expired", world=world_id)
        for world_id in idle:
            self.unload(world_id)

    def _housekeeping(self) -> None:
        while not self._stopping.wait(_SWEEP_SECONDS):
            try:
                self.sweep()
            except Exception as exc:  # noqa: BLE001 - the next sweep tries again
                log.warning("world housekeeping failed", error=repr(exc))

    def _start_housekeeping(self) -> None:
        if self._sweeper is None:
            self._sweeper = threading.Thread(
                target=self._housekeeping, name="sandex-worlds", daemon=True
            )
            self._sweeper.start()

    def describe(self, world_id: str) -> dict[str, Any]:
        """A world's status (no secret): clock, events, size on disk, loaded, last used."""
        with self._lock:
            record = self._record(world_id)
            served = self._served.get(world_id)
            last_used = self._last_used.get(world_id)
        db = self.db_of(world_id)
        size = store_size(db)
        clock: dict[str, str]
        if served is not None:
            # through the app's read connection: the store's own is the writer thread's
            events = served.app.state.queries.log_position() or 0
            clock = {
                "mode": served.engine.clock.mode,
                "now": format_time(served.engine.clock.now()),
            }
        else:
            with closing(open_reader(db)) as reader:
                events = reader.last_position()
            clock = {"mode": record.clock}  # its time is known once it is loaded
        expires = record.expires_after_idle_seconds
        return {
            "id": record.id,
            "name": record.name,
            "status": "ACTIVE",
            "clock": clock,
            "events": events,
            "size_bytes": size,
            "loaded": served is not None,
            "last_used_at": _wall(last_used),
            "expires_after_idle_seconds": expires,
            "expires_at": _wall(last_used + expires) if expires and last_used else None,
            "from_world": record.from_world,
            "from_snapshot": record.from_snapshot,
            "created_at": record.created_at,
        }

    def customers(self, world_id: str) -> int | None:
        """How many customers a loaded world holds (None: not loaded, not loaded for it)."""
        with self._lock:
            served = self._served.get(world_id)
        return None if served is None else len(customer_ids(served.app.state.queries))

    def forget(self, world_id: str) -> Served | None:
        """Unlist the world at once (its requests from now on are 404) and end its feeds;
        answer it, loaded, for `remove` once its requests in flight have ended."""
        with self._lock:
            self._record(world_id)
            del self._records[world_id]
            served = self._served.pop(world_id, None)
            self._last_used.pop(world_id, None)
            self._manifest_of(world_id).unlink(missing_ok=True)
        if served is not None:
            served.engine.market_feed.end_all(GOING_AWAY, "the world was deleted")
        return served

    def remove(self, world_id: str, served: Served | None) -> None:
        """Stop a forgotten world (a write still queued is answered 503) and remove its
        files."""
        if served is not None:
            served.stop()
        self._remove_files(world_id)
        log.info("world deleted", world=world_id)

    def delete(self, world_id: str) -> None:
        """`forget`, wait for the world's requests in flight (up to DRAIN_SECONDS), and
        `remove`: for a caller outside the event loop that serves them."""
        served = self.forget(world_id)
        deadline = time.monotonic() + DRAIN_SECONDS
        while served is not None and served.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        self.remove(world_id, served)

    def _remove_files(self, world_id: str) -> None:
        """The manifest first (the world is no longer listed), then its store (files, or
        its schema dropped), then its other files."""
        self._manifest_of(world_id).unlink(missing_ok=True)
        drop_store(self.db_of(world_id))
        for path in list(self._side_files_of(world_id)):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)

    def close(self) -> None:
        """Stop every loaded world (the server is stopping); their files stay."""
        self._stopping.set()
        if self._sweeper is not None:
            self._sweeper.join(10)
            self._sweeper = None
        with self._lock:
            served, self._served = list(self._served.values()), {}
        for world in served:
            world.stop()
        self._writer.close()


def kept_worlds(db: str | Path) -> list[dict[str, Any]]:
    """The worlds kept beside the database `db`, read from their files with no server
    (`sandex worlds list`): id, name, clock, events, size on disk, created, origin."""
    found = []
    for record in records(db):
        where = location_of(db, record.id)
        with closing(open_reader(where)) as reader:
            events = reader.last_position()
        size = store_size(where)
        origin = f"{record.from_world}@{record.from_snapshot}" if record.from_world else None
        found.append(
            {
                "id": record.id,
                "name": record.name,
                "clock": record.clock,
                "events": events,
                "size_bytes": size,
                "created_at": record.created_at,
                "from": origin,
            }
        )
    return found


def delete_kept(db: str | Path, world_id: str) -> None:
    """Remove a kept world with no server (`sandex worlds delete`): its store and files,
    under the default database's writer lease, so `LeaseHeld` while a server serves it
    (which deletes it itself: `DELETE /v2/sandbox/worlds/{id}`)."""
    lease = take_lease(db)
    try:
        manager = WorldManager(db, Settings())
        try:
            manager.delete(world_id)
        finally:
            manager.close()
    finally:
        if lease is not None:
            lease.release()


def _bootstrap_of(engine: Engine) -> tuple[str, str]:
    """The bootstrap client of a forked world and its customer's first profile."""
    state = engine.state
    for client in state.clients.values():
        customer = state.customers.get(client["customer_id"])
        if customer and customer.get("bootstrap") and not client["revoked"]:
            return str(client["client_id"]), str(customer["profile_ids"][0])
    raise NotFound("the template world has no bootstrap client")


def _above(chosen: int | None, most: int | None) -> bool:
    """Whether a world's limit `chosen` (None: none) is beyond its server's `most`."""
    return most is not None and (chosen is None or chosen > most)


def _wall(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return format_time(datetime.fromtimestamp(seconds, UTC))
