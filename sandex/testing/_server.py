"""The session's sandbox: started in this process on a thread, or as a `sandex serve`
subprocess, or one already running; under pytest-xdist, one for all the workers."""

from __future__ import annotations

import fcntl
import json
import os
import queue
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from sandex.client import NO_RETRIES, Client

CLIENT_ID = "sandex"
# How long a starter waits for a worker that never registered (it died starting).
REGISTER_TIMEOUT = 60.0
# How long a server may take to answer after it was started.
START_TIMEOUT = 60.0
# The settings of a server the plugin starts, in either mode: a suite forks a world per
# test, faster than the worlds' rate limit allows; and its data is thrown away with the
# session (or kept for a look after a failure), so it needs to survive a process crash
# but not a power cut (NORMAL durability: no sync to the disk per commit or per fork).
SERVER_SETTINGS: dict[str, Any] = {"rate_limits_enabled": False, "durability": "NORMAL"}


@dataclass(frozen=True)
class Address:
    """Where a sandbox answers and its default world's bootstrap client (its operator)."""

    url: str
    client_id: str
    client_secret: str


class Running:
    """A server this process started: `stop` stops it and removes its database."""

    def __init__(self, address: Address, stop: Callable[[], None]) -> None:
        self.address = address
        self._stop = stop
        self.pid: int | None = None  # a subprocess's

    def stop(self) -> None:
        self._stop()


def thread_server(folder: Path) -> tuple[Any, Any, socket.socket, str]:
    """(the default world, its uvicorn server, the listening socket, the operator's
    secret), built as `start_thread` serves them, not yet running (bench_fork_cpu runs
    the server on a thread of its own, to profile it)."""
    import uvicorn

    from sandex.api_adapter.bootstrap import fixed
    from sandex.api_adapter.server.connections import uvicorn_options
    from sandex.api_adapter.server.listen import listen
    from sandex.api_adapter.world import World
    from sandex.engine.config.settings import Settings
    from sandex.engine.kernel.logs import hand_to_logging

    hand_to_logging()
    secret = secrets.token_urlsafe(30)
    settings = Settings(**SERVER_SETTINGS)
    listener = listen("127.0.0.1", 0)
    world = World.open(folder / "sandex.db", settings, bootstrap=fixed(CLIENT_ID, secret))
    world.start()
    options: dict[str, Any] = {"log_config": None, "access_log": False}
    options.update(uvicorn_options(settings))  # type: ignore[arg-type]
    return world, uvicorn.Server(uvicorn.Config(world.front, **options)), listener, secret


def start_thread(folder: Path) -> Running:
    """The app `sandex serve` builds (the default world with its worlds), served by
    uvicorn on a loopback ephemeral port on a daemon thread of this process. The
    process's structlog configuration is the suite's own: left as it is (configured
    here, it would filter the suite's own log lines, and its captures, process-wide);
    but the server's lines, which it would print to the standard output a user's test
    captures, go to `logging` (`hand_to_logging`), which pytest keeps with each test."""
    world, server, listener, secret = thread_server(folder)
    port = listener.getsockname()[1]
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [listener]}, name="sandex-server", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            listener.close()
            world.stop()
            raise RuntimeError("sandex: the in-process server did not start (see its log)")
        time.sleep(0.01)

    def stop() -> None:
        server.should_exit = True
        thread.join(30)
        listener.close()
        world.stop()

    return Running(Address(f"http://127.0.0.1:{port}", CLIENT_ID, secret), stop)


def start_process(folder: Path, *, detached: bool = False) -> Running:
    """`sandex serve` as a subprocess on a loopback ephemeral port (its banner names
    the port), its log in `folder`; the bootstrap secret is handed to it in its
    environment, never on its command line. `detached`: in a session of its own, so
    that it outlives pytest (`--sandex-reuse`)."""
    secret = secrets.token_urlsafe(30)
    log_path = folder / "sandex-serve.log"
    log = log_path.open("ab")
    env = {**os.environ, "SANDEX_CLIENT_ID": CLIENT_ID, "SANDEX_CLIENT_SECRET": secret}
    command = [
        sys.executable,
        "-m",
        "sandex.api_adapter.cli",
        "serve",
        "--db",
        str(folder / "sandex.db"),
    ]
    command += ["--host", "127.0.0.1", "--port", "0", "--no-rate-limits", "--log-format", "json"]
    command += ["--durability", str(SERVER_SETTINGS["durability"])]
    proc = subprocess.Popen(
        [*command, "--log-level", "WARNING"],
        stdout=log,
        stderr=log,
        env=env,
        start_new_session=detached,
    )
    pid = proc.pid

    def stop() -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()

    deadline = time.monotonic() + START_TIMEOUT
    while True:
        found = re.search(r"sandex serving (http://\S+)/v2 ", log_path.read_text())
        if found:
            url = found.group(1)
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    running = Running(Address(url, CLIENT_ID, secret), stop)
                    running.pid = pid
                    return running
            except httpx.TransportError:
                pass
        if proc.poll() is not None or time.monotonic() > deadline:
            stop()
            tail = log_path.read_text()[-2000:]
            raise RuntimeError(f"sandex: `sandex serve` did not start:\n{tail}")
        time.sleep(0.02)


STARTERS = {"thread": start_thread, "process": start_process}


class Shared:
    """The server the workers of one pytest-xdist run share, through `folder` (made by
    the controller): the first worker to need it starts it under a file lock and writes
    its address there (a 0600 file); each worker marks itself done when its session
    ends, and the one that started it stops it once every worker is done (a server on
    a thread lives as long as its process, so the starter is the one that stops it)."""

    def __init__(self, folder: Path, worker: str, count: int) -> None:
        self.folder = folder
        self.worker = worker
        self.count = count
        (folder / "workers").mkdir(exist_ok=True)
        (folder / "workers" / f"{worker}.pid").write_text(str(os.getpid()))

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with (self.folder / "lock").open("a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def acquire(self, start: Callable[[Path], Running]) -> tuple[Address, Running | None]:
        """The shared server's address, and the server when this worker started it."""
        path = self.folder / "server.json"
        with self._locked():
            if path.exists():
                return Address(**json.loads(path.read_text())["address"]), None
            home = self.folder / "server"
            home.mkdir()
            running = start(home)
            record = {"address": asdict(running.address), "started_by": self.worker}
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(record, f)
            with (self.folder / "starts.log").open("a") as f:
                f.write(f"{self.worker} {running.address.url}\n")
            return running.address, running

    def done(self, running: Running | None) -> None:
        """This worker needs the server no more; the starter waits for the others (or
        their end: a worker that died is done) and then stops it."""
        (self.folder / "workers" / f"{self.worker}.done").touch()
        if running is None:
            return
        registered_by = time.monotonic() + REGISTER_TIMEOUT
        while not self._all_done(registering=time.monotonic() < registered_by):
            time.sleep(0.05)
        running.stop()

    def _all_done(self, registering: bool) -> bool:
        workers = self.folder / "workers"
        pids = list(workers.glob("*.pid"))
        if registering and len(pids) < self.count:
            return False
        for pid_file in pids:
            if (workers / f"{pid_file.stem}.done").exists():
                continue
            if _alive(int(pid_file.read_text() or 0)):
                return False
        return True


def _alive(pid: int) -> bool:
    """Whether process `pid` still runs. One that ended but is not yet reaped (a zombie)
    has ended, though signal 0 still finds it: a child of this process (a kept server
    it started, then stopped) is reaped here; another's is read from its state."""
    if pid <= 0:
        return False
    try:
        ended, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not this process's child
    else:
        return ended != pid  # reaped now: it had ended
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Whether `pid` ended and waits for its parent to reap it (Linux's /proc; where
    there is none, a process signal 0 finds is taken as running)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].startswith("Z")  # the field after the name


@dataclass(frozen=True)
class Kept:
    """The server `--sandex-reuse` keeps, as found answering: where, its pid, and the
    sandex version its answers carry (`X-Sandex-Version`; "" when they carry none)."""

    address: Address
    pid: int
    version: str

    @property
    def named_version(self) -> str:
        return f"sandex {self.version}" if self.version else "no sandex version"


class Reused:
    """The server `--sandex-reuse` keeps running between runs: a detached `sandex
    serve` whose address, credentials and pid are in the state folder ($SANDEX_STATE_DIR,
    else ~/.sandex) as `pytest-server.json` (0600), its database and log beside it. It is
    reused only while it runs this sandex's version: one kept from an older (or newer)
    install is stopped and replaced, since its API is not the one the suite was written
    against."""

    def __init__(self) -> None:
        from sandex.engine.store.locations import STATE_DIR_ENV

        self.folder = Path(os.environ.get(STATE_DIR_ENV) or Path.home() / ".sandex")
        self.record = self.folder / "pytest-server.json"

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        with (self.folder / "pytest-server.lock").open("a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def running(self) -> Kept | None:
        """The kept server, where it still answers."""
        from sandex.api_adapter.version import VERSION_HEADER

        if not self.record.exists():
            return None
        kept = json.loads(self.record.read_text())
        address, pid = Address(**kept["address"]), int(kept["pid"])
        try:
            answer = httpx.get(f"{address.url}/healthz", timeout=2)
        except httpx.TransportError:
            return None
        if answer.status_code != 200 or not _alive(pid):
            return None
        return Kept(address, pid, answer.headers.get(VERSION_HEADER, ""))

    def acquire(self) -> tuple[Kept, bool, Kept | None]:
        """The kept server, or a new one started and kept; whether it was reused; and
        the server it replaced, one kept from another sandex version (stopped)."""
        from sandex.api_adapter.version import installed_version

        mine = installed_version()
        with self._locked():
            found = self.running()
            if found is not None and found.version == mine:
                return found, True, None
            if found is not None:
                _stop(found.pid)
            home = self.folder / "pytest-server"
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir(mode=0o700)
            started = start_process(home, detached=True)
            assert started.pid is not None
            self.record.unlink(missing_ok=True)
            fd = os.open(self.record, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump({"address": asdict(started.address), "pid": started.pid}, f)
            return Kept(started.address, started.pid, mine), False, found

    def stop(self) -> Kept | None:
        """Stop the kept server (SIGINT, as Ctrl-C): the one stopped, if one ran."""
        with self._locked():
            found = self.running()
            if found is not None:
                _stop(found.pid)
            self.record.unlink(missing_ok=True)
            return found


def _stop(pid: int, timeout: float = 30.0) -> None:
    """Stop a kept server as Ctrl-C does and wait for it to end; one that has not ended
    by `timeout` is killed, so that its database is not removed under it."""
    for sent, wait in ((signal.SIGINT, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sent)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not _alive(pid):
            return


class SandexServer:
    """The session's sandbox as the `sandex_server` fixture gives it: its address, its
    operator's credentials, how it runs and whether this process started it."""

    def __init__(self, address: Address, mode: str, started_here: bool) -> None:
        self.url = address.url
        self.client_id = address.client_id
        self.client_secret = address.client_secret
        self.mode = mode
        self.started_here = started_here
        self.http = httpx.Client(timeout=60)
        self.api = Client(
            f"{self.url}/v2",
            f"{self.url}/oauth2/token",
            self.client_id,
            self.client_secret,
            http=self.http,
            retries=NO_RETRIES,
        )

    @property
    def base_url(self) -> str:
        """The default world's API, ending in /v2."""
        return f"{self.url}/v2"

    @property
    def token_url(self) -> str:
        return f"{self.url}/oauth2/token"

    def create_world(self, **body: Any) -> dict[str, Any]:
        """`POST /v2/sandbox/worlds` with `body`: the new world's answer."""
        made: dict[str, Any] = self.api.request("POST", "/sandbox/worlds", json=body)
        return made

    def delete_world(self, world_id: str) -> None:
        self.api.request("DELETE", f"/sandbox/worlds/{world_id}")

    def world_exists(self, world_id: str) -> bool:
        r = self.http.get(
            f"{self.base_url}/sandbox/worlds/{world_id}",
            headers={"Authorization": f"Bearer {self.api.token()}"},
        )
        return r.status_code == 200

    def close(self) -> None:
        self.http.close()


class Deleter:
    """Deletes the tests' worlds on a thread of its own, through a client of its own, so
    that a test's teardown does not wait for it: the server deletes one world while the
    next test runs. `close` waits for the rest, or drops them when the server stops with
    the session anyway."""

    def __init__(self, server: SandexServer) -> None:
        self._server = server
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._dropping = False
        self.failures: list[str] = []

    def put(self, world_id: str) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="sandex-deleter", daemon=True)
            self._thread.start()
        self._queue.put(world_id)

    def _run(self) -> None:
        server = self._server
        with Client(
            server.base_url,
            server.token_url,
            server.client_id,
            server.client_secret,
            timeout=60,
            retries=NO_RETRIES,
        ) as api:
            while (world_id := self._queue.get()) is not None:
                if self._dropping:
                    continue
                try:
                    api.request("DELETE", f"/sandbox/worlds/{world_id}")
                except Exception as exc:  # said at the session's end, not lost
                    self.failures.append(f"{world_id}: {type(exc).__name__}: {exc}")

    def close(self, *, drain: bool) -> None:
        """Delete the worlds still queued (`drain`), or drop them; then stop."""
        if self._thread is None:
            return
        self._dropping = not drain
        self._queue.put(None)
        self._thread.join()


def private_folder(prefix: str) -> Path:
    """A new folder readable by its owner only (mkdtemp's 0700)."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
