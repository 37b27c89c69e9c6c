"""One world: everything that serves one sandbox, built and owned in one place.

A `World` holds an engine and what is built around it: the bootstrap client, the
wall clock's scheduler, the webhook deliverer, the read side (paging cursors, rate
limits, the market-data feeds' connections: the app's state) and the FastAPI app, with
the session recorder when asked. `start` starts them and `stop` stops what `start`
started, in reverse order, leaving no thread and no open connection behind, so that one
process can hold many worlds. `sandex serve` runs the default world; a test's sandbox
and a scenario's replay run one each, without the background work."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from sandex.api_adapter.app import create_app
from sandex.api_adapter.bootstrap import Bootstrap, Credentials
from sandex.engine import Engine, open_engine
from sandex.engine.config.settings import Settings
from sandex.engine.runtime.composition import build_engine
from sandex.engine.runtime.scheduler import Scheduler
from sandex.engine.runtime.shared_writer import SharedWriter
from sandex.engine.store.port import EventStore

# The purpose a world's recording says it has.
WORLD_RECORDING = "a world's requests, recorded by sandex (docs/worlds.md)"


class World:
    """The assembly around one engine, which it owns from then on (`stop` stops it)."""

    def __init__(
        self,
        engine: Engine,
        *,
        bootstrap: Bootstrap,
        background: bool = True,
        fast_lane: bool = True,
        fault_gate: bool = True,
        record: str | Path | None = None,
        record_world: bool = False,
        worlds: bool = True,
        console: bool = True,
        writer: SharedWriter | None = None,
    ) -> None:
        """`bootstrap` makes the bootstrap client once the engine runs. `background`:
        run the wall clock's timer ticks and webhook delivery from `start` (`sandex
        serve`); without it nothing moves unless asked (a test, a replay), and the app's
        own lifespan runs its deliverer when a test serves it. `record`: the file of a
        session recording (`sandex serve --record`), or with `record_world` a world's
        own recording (a world created with `record`, docs/worlds.md). `fault_gate`: see `create_app`.
        `worlds`: this is a default world,
        which keeps its server's other worlds beside its database (`front` serves them);
        a non-default world is made with False. `console`: serve the console
        (sandex.api_adapter.console) at this world's `/console`, and at its other worlds'.
        `writer`: the writer thread the engine runs on, shared with its server's other
        worlds (the manager's); None: a thread of its own."""
        self.engine = engine
        self._writer = writer
        self._bootstrap = bootstrap
        self.background = background
        self.app: FastAPI = create_app(
            engine,
            fast_lane=fast_lane,
            webhooks_on_lifespan=not background,
            fault_gate=fault_gate,
        )
        self.app.state.console = console
        if record is not None:
            from sandex.api_adapter.scenarios.recorder import Recorder

            options: dict[str, Any] = {"path": record, "engine": engine}
            if record_world:
                options.update(resume=True, purpose=WORLD_RECORDING)
            self.app.add_middleware(Recorder, **options)
        self._credentials: Credentials | None = None
        # What to stop, in the order it was started; the engine is the world's from now.
        self._stops: list[Callable[[], None]] = [self._stop_engine]
        if worlds:
            from sandex.api_adapter.worlds.manager import WorldManager

            manager = WorldManager.beside(engine.db_path, engine.settings)
            self.app.state.worlds = manager
            if manager is not None:
                manager.console = console
                self._stops.append(manager.close)  # the other worlds stop before this one
        self._phase = "new"  # then "started", then "stopped"

    @classmethod
    def open(
        cls, db: str | Path, settings: Settings, *, store: EventStore | None = None, **options: Any
    ) -> World:
        """A world on the database at `db` (a file or a PostgreSQL URL; made if new), not
        started: `LeaseHeld` while another process writes to it. `store`: that database
        already open, holding its writer lease (a fork's, as its store made it), so it is
        not opened twice; the world's from now on."""
        engine = open_engine(db, settings) if store is None else build_engine(store, settings)
        try:
            return cls(engine, **options)
        except BaseException:
            engine.stop()
            raise

    @property
    def clock_mode(self) -> str:
        """The engine clock's mode: wall (the scheduler ticks) or manual."""
        return self.engine.clock.mode

    @property
    def front(self) -> Any:
        """The ASGI app a server serves: the worlds' dispatcher in front of this world's
        app (`/w/{world}/...` to that world), or the app alone where there are no worlds."""
        if self.app.state.worlds is None:
            return self.app
        from sandex.api_adapter.worlds.dispatch import WorldDispatch

        return WorldDispatch(self.app)

    @property
    def credentials(self) -> Credentials:
        """The bootstrap client, known once the world started."""
        if self._credentials is None:
            raise RuntimeError("the world has not started: its bootstrap client is not made")
        return self._credentials

    def start(self) -> World:
        """Start the engine, make the bootstrap client and start the background work; a
        start that fails stops what it started (the writer lease is given back).
        Starting a started world does nothing; a stopped one does not start again."""
        if self._phase == "started":
            return self
        if self._phase == "stopped":
            raise RuntimeError("this world was stopped; open a new one")
        self._phase = "started"
        try:
            self.engine.start(self._writer)
            self._credentials = self._bootstrap(self.engine)
            if self.background:
                if self.clock_mode == "wall":
                    scheduler = Scheduler(self.engine, self.engine.settings.tick_interval_seconds)
                    self._stops.append(scheduler.stop)
                    scheduler.start()
                deliverer = self.app.state.webhooks
                self._stops.append(deliverer.stop)
                deliverer.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop what `start` started, the last first, and the engine (with its store) last
        of all, even when the world never started. Stopping twice does nothing."""
        self._phase = "stopped"
        failed: BaseException | None = None
        while self._stops:
            try:
                self._stops.pop()()
            except BaseException as exc:  # noqa: BLE001 - stop the rest, then raise it
                failed = failed or exc
        if failed is not None:
            raise failed

    def _stop_engine(self) -> None:
        self.app.state.queries.close()  # the read connections, so the WAL can be checkpointed
        self.engine.stop()

    def __enter__(self) -> World:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
