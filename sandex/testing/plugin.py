"""sandex's pytest plugin, loaded through its `pytest11` entry point (nothing to write in
a conftest): `sandex_server`, one sandbox for the session; `sandex_world`, a world per
test forked from the session's template; the `sandex` marker. docs/testing.md.

pytest imports this module in every run of an environment sandex is installed in, used
or not: at import it needs only pytest and its options, and the server, its client and
httpx are imported by the hooks and fixtures that use them."""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sandex.testing._defaults import DEFAULT_START

if TYPE_CHECKING:
    from sandex.testing._server import Deleter, Running, SandexServer, Shared
    from sandex.testing._world import SandexWorld, Template

# The template world's snapshot that every test's world is forked from.
SNAPSHOT = "sandex-template"
KEEP = ("failed", "all", "none")
# The name of a world forked ahead of the test that will take it.
AHEAD = "sandex test world"
MARKER_FIELDS = ("clock", "start", "seed", "settings", "template")
# Every template world's seed unless one is chosen: its ids are drawn from it, so that a
# replay of a failed test's requests from an empty sandbox draws the same ones (0: the
# price paths of a world made without a seed).
SEED = 0


@dataclass(frozen=True)
class Option:
    """A setting of the plugin: its command-line flag and ini name, said once here."""

    name: str
    help: str
    default: str = ""
    choices: tuple[str, ...] | None = None
    metavar: str | None = None

    @property
    def flag(self) -> str:
        return "--sandex-" + self.name

    @property
    def ini(self) -> str:
        return "sandex_" + self.name


OPTIONS = (
    Option(
        "mode",
        "how the session's sandbox runs: thread (in this process) or process "
        "(a `sandex serve` subprocess)",
        "thread",
        ("thread", "process"),
    ),
    Option(
        "url",
        "use the sandbox already running at URL (its operator's credentials in "
        "SANDEX_CLIENT_ID/SANDEX_CLIENT_SECRET); start nothing. Also SANDEX_URL",
        metavar="URL",
    ),
    Option(
        "share",
        "under pytest-xdist, one server for the whole run (run) or one per worker (worker:"
        " a thread-mode server then serves on its own worker's core)",
        "run",
        ("run", "worker"),
    ),
    Option("clock", "the clock of a test's world", "manual", ("manual", "wall")),
    Option("start", "where a manual clock starts (RFC 3339)", DEFAULT_START, metavar="TIME"),
    Option(
        "seed",
        "the seed of the template world, and so of every world forked from it"
        " (its market walks): the same seed, the same prices run after run",
        metavar="INT",
    ),
    Option("settings", "a JSON object of settings for every test's world", metavar="JSON"),
    Option(
        "template",
        "module:function building the session's template world (default: a funded DEFAULT profile)",
        metavar="MODULE:FUNCTION",
    ),
    Option(
        "keep", "which tests' worlds are kept, not deleted: failed, all or none", "failed", KEEP
    ),
    Option(
        "failures",
        "the folder, under the rootdir, where a failed test leaves its world's events and"
        " the scenario that replays its requests",
        ".sandex/failures",
        metavar="DIR",
    ),
)

_STATE = pytest.StashKey["SessionState"]()
_WORLD = pytest.StashKey["SandexWorld"]()
_FAILED = pytest.StashKey[bool]()
_SHARED_DIR = pytest.StashKey[Path]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sandex", "sandex: a sandbox world per test (docs/testing.md)")
    for option in OPTIONS:
        group.addoption(
            option.flag,
            dest=option.ini,
            default=None,
            choices=option.choices,
            metavar=option.metavar,
            help=f"{option.help} (ini {option.ini}; default {option.default or 'none'})",
        )
        parser.addini(option.ini, option.help, default=option.default)
    group.addoption(
        "--sandex-reuse",
        action="store_true",
        default=None,
        help="keep the session's server (a `sandex serve` subprocess) running after the run"
        " and reuse it in the next (ini sandex_reuse)",
    )
    parser.addini("sandex_reuse", "keep and reuse the session's server", type="bool")
    group.addoption(
        "--sandex-allow-remote",
        action="store_true",
        default=None,
        help="allow a --sandex-url/SANDEX_URL outside loopback (ini sandex_allow_remote;"
        " default: refused, so that a suite never reaches a real service by mistake)",
    )
    parser.addini(
        "sandex_allow_remote", "allow a --sandex-url/SANDEX_URL outside loopback", type="bool"
    )
    group.addoption(
        "--sandex-reuse-list",
        action="store_true",
        help="say which server --sandex-reuse keeps running, and exit",
    )
    group.addoption(
        "--sandex-reuse-stop",
        action="store_true",
        help="stop the server --sandex-reuse keeps running, and exit",
    )


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """`--sandex-reuse-list` and `--sandex-reuse-stop`: one line, and no test run."""
    listing, stopping = config.getoption("sandex_reuse_list"), config.getoption("sandex_reuse_stop")
    if not (listing or stopping):
        return None
    from sandex.testing._server import Reused

    reused = Reused()
    found = reused.stop() if stopping else reused.running()
    verb = "stopped" if stopping else "running"
    if found is None:
        print(f"sandex: no server kept by --sandex-reuse ({reused.record})")
    else:
        print(
            f"sandex: {verb} {found.address.url} (pid {found.pid}, {found.named_version},"
            f" {reused.record})"
        )
    return 0


def switch(config: pytest.Config, name: str) -> bool:
    """A yes/no option's value: its flag, else its ini line."""
    given = config.getoption("sandex_" + name)
    return bool(config.getini("sandex_" + name) if given is None else given)


def reusing(config: pytest.Config) -> bool:
    return switch(config, "reuse")


def given_url(config: pytest.Config) -> str:
    """The running sandbox's root URL the session is given (`--sandex-url`, its ini
    line or `SANDEX_URL`), without a trailing `/v2`; empty when none is."""
    url = setting(config, "url") or os.environ.get("SANDEX_URL", "")
    return url.rstrip("/").removesuffix("/v2")


def guard_url(config: pytest.Config, url: str) -> None:
    """A URL outside loopback is refused unless allowed, before any connection."""
    from sandex.testing._guard import Refused, check_host

    try:
        check_host(url, switch(config, "allow_remote"))
    except Refused as refused:
        raise pytest.UsageError(str(refused)) from None


def setting(config: pytest.Config, name: str) -> str:
    """An option's value: its flag, else its ini line, else its default."""
    given = config.getoption("sandex_" + name)
    if given is None:
        given = config.getini("sandex_" + name)
    return str(given or "")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sandex(clock='manual'|'wall', start=TIME, seed=INT, settings={...}, template=callable):"
        " change this test's sandex_world (docs/testing.md)",
    )
    config.stash[_STATE] = SessionState(config)
    _keep_schedulers_on_real_time()


def _keep_schedulers_on_real_time() -> None:
    """A thread-mode server shares the test process with freezegun, which moves every
    thread's clock. APScheduler, which runs the wall clock's timers, catches up on a
    jump by listing every run its interval missed since: a test frozen years ahead
    made it list hundreds of millions and exhausted the machine's memory. So freezegun,
    when installed, leaves APScheduler's own calls on real time; sandex's clocks still
    see the frozen time, as a test means. Configured as freezegun is imported, before
    anything can make a `freeze_time` (they copy the ignore list when made): a session
    that never imports freezegun does not pay for its import."""
    if "freezegun" in sys.modules:
        _configure_freezegun(sys.modules["freezegun"])
    elif not any(isinstance(finder, _FreezegunWatch) for finder in sys.meta_path):
        sys.meta_path.insert(0, _FreezegunWatch())


def _configure_freezegun(freezegun: Any) -> None:
    freezegun.configure(extend_ignore_list=["apscheduler"])  # kept once, however often


class _FreezegunWatch(importlib.abc.MetaPathFinder):
    """Finds nothing itself: hands freezegun's import to the other finders, and has
    freezegun configured as soon as its module has run."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "freezegun":
            return None
        sys.meta_path.remove(self)  # once: the finders below find the module
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            _configure_freezegun(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller: every worker is handed one folder to share a server."""
    from sandex.testing._server import private_folder

    config = node.config
    if _SHARED_DIR not in config.stash:
        config.stash[_SHARED_DIR] = private_folder("sandex-xdist-")
    node.workerinput["sandex_shared_dir"] = str(config.stash[_SHARED_DIR])


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SHARED_DIR in config.stash:
        from sandex.testing._server import remove

        remove(config.stash[_SHARED_DIR])


def pytest_sessionstart(session: pytest.Session) -> None:
    """A given URL is checked first (by the controller under xdist, before any worker
    starts): refused outside loopback unless allowed, and the session stops in one line
    when it is not a sandex or is too old. With --sandex-reuse the server is found (or
    started) first, so that the run's summary can say which."""
    config = session.config
    if hasattr(config, "workerinput"):
        return
    url = given_url(config)
    if url:
        import httpx

        from sandex.testing._guard import Refused, check_sandex

        guard_url(config, url)
        with httpx.Client() as http:
            try:
                check_sandex(url, http)
            except Refused as refused:
                raise pytest.UsageError(str(refused)) from None
    elif reusing(config):
        config.stash[_STATE].sandbox()


def pytest_collection_finish(session: pytest.Session) -> None:
    """A suite whose tests ask for sandex starts its server as soon as they are known,
    on a thread: the start overlaps what the process does before its first test (under
    xdist, waiting for the other workers' collection and the tests handed out), and the
    first test joins it. A suite that asks for none (or only in tests it skips), or only
    collects, starts nothing."""
    if session.config.option.collectonly:
        return
    if any(_asks_for_sandex(item) for item in session.items):
        session.config.stash[_STATE].start_ahead()


def _asks_for_sandex(item: pytest.Item) -> bool:
    """Whether `item` will set up `sandex_server` (`sandex_world` asks for it): not when
    it is marked to be skipped outright."""
    asks = "sandex_server" in getattr(item, "fixturenames", ())
    return asks and item.get_closest_marker("skip") is None


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """After the session's fixtures: the templates go and the server stops (under
    xdist, once every worker is done)."""
    session.config.stash[_STATE].finish()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed:
        item.stash[_FAILED] = True
    world = item.stash.get(_WORLD, None)
    if world is not None:
        keep = setting(item.config, "keep")
        if report.when in ("setup", "call") and report.failed:
            report.sections.append(("sandex", _failed(item, world, keep)))
        if report.when == "teardown":
            if getattr(world, "kept", False):
                report.sections.append(("sandex kept", f"{world.id} {world.base_url}"))
            if not item.stash.get(_FAILED, False):
                from sandex.testing._failures import forget

                forget(failures_folder(item.config), item.nodeid)
    return report


def failures_folder(config: pytest.Config) -> Path:
    return config.rootpath / setting(config, "failures")


def _failed(item: pytest.Item, world: SandexWorld, keep: str) -> str:
    """The failed test's section of the report: its world, and the folder it left (read
    now, while the world exists, whatever `--sandex-keep` does with it after)."""
    from sandex.testing._failures import console, leave

    server = item.config.stash[_STATE].sandbox()
    if keep == "none":
        lines = [f"world {world.id}: deleted after the test (--sandex-keep=none)"]
    else:
        lines = [f"world {world.id} kept: {world.base_url}"]
        shown = console(server, world)
        if shown:
            lines.append(f"console: {shown}")
    try:
        left = leave(failures_folder(item.config), item.nodeid, server, world)
    except Exception as exc:  # noqa: BLE001 - the report must still say what failed
        lines.append(f"its failure folder could not be written: {exc!r}")
    else:
        lines.append(f"folder: {left.folder}")
        lines.append(f"replay: {left.command}")
    return "\n".join(lines)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    state = terminalreporter.config.stash[_STATE]
    if state.reuse_line:
        terminalreporter.write_line(state.reuse_line)
    failures = state.deleting.failures if state.deleting is not None else []
    if failures:
        terminalreporter.write_line(
            f"sandex: {len(failures)} test worlds could not be deleted (first: {failures[0]})"
        )
    kept = [
        (report.nodeid, content)
        for report in terminalreporter.getreports("")
        for title, content in getattr(report, "sections", [])
        if title == "sandex kept"
    ]
    if kept:
        terminalreporter.write_sep("-", "sandex: worlds kept")
        for nodeid, content in kept:
            world_id, base_url = content.split(" ", 1)
            terminalreporter.write_line(f"kept world {world_id} for {nodeid}: {base_url}")


@dataclass
class SessionState:
    """The session's server (started when first asked for) and template worlds."""

    config: pytest.Config
    server: SandexServer | None = None
    running: Running | None = None
    shared: Shared | None = None
    folder: Path | None = None
    templates: dict[tuple[Any, ...], SandexWorld] = field(default_factory=dict)
    reuse_line: str = ""
    deleting: Deleter | None = None
    ahead: ThreadPoolExecutor | None = None
    spares: dict[tuple[str, str], Future[SandexWorld]] = field(default_factory=dict)
    starting: Future[SandexServer] | None = None

    def __post_init__(self) -> None:
        shared = getattr(self.config, "workerinput", {}).get("sandex_shared_dir")
        if shared and setting(self.config, "share") == "run":
            from sandex.testing._server import Shared

            workerinput = self.config.workerinput  # type: ignore[attr-defined]
            self.shared = Shared(Path(shared), workerinput["workerid"], workerinput["workercount"])

    def start_ahead(self) -> None:
        """Start the session's server on a thread now; `sandbox` joins it (and raises
        its error, the first test's to report). A server already there, or one given by
        a URL (nothing to start), is left as it is."""
        if self.server is not None or self.starting is not None or given_url(self.config):
            return
        starting: Future[SandexServer] = Future()

        def start() -> None:
            try:
                starting.set_result(self._start())
            except BaseException as exc:  # noqa: BLE001 - handed to whoever joins it
                starting.set_exception(exc)

        self.starting = starting
        threading.Thread(target=start, name="sandex-start", daemon=True).start()

    def sandbox(self) -> SandexServer:
        if self.server is not None:
            return self.server
        if self.starting is not None:
            return self.starting.result()
        return self._start()

    def _start(self) -> SandexServer:
        from sandex.testing._server import STARTERS, Address, Reused, SandexServer, private_folder

        url = given_url(self.config)
        if url:
            guard_url(self.config, url)
            address = Address(
                url,
                os.environ.get("SANDEX_CLIENT_ID", "sandex"),
                # a loopback `sandex serve`'s documented default secret
                os.environ.get("SANDEX_CLIENT_SECRET", "sandex-secret"),
            )
            self.server = SandexServer(address, "url", started_here=False)
            return self.server
        if reusing(self.config):
            kept, reused, replaced = Reused().acquire()
            how = "reused" if reused else "started and kept running"
            instead = ""
            if replaced is not None:
                instead = (
                    f"; it replaces {replaced.address.url} (pid {replaced.pid}), stopped"
                    f" because it ran {replaced.named_version}, not {kept.version}"
                )
            self.reuse_line = (
                f"sandex: server {kept.address.url} {how} (pid {kept.pid}){instead};"
                " stop it with pytest --sandex-reuse-stop"
            )
            self.server = SandexServer(kept.address, "process", started_here=not reused)
            return self.server
        mode = setting(self.config, "mode")
        start = STARTERS[mode]
        if self.shared is not None:
            address, self.running = self.shared.acquire(start)
        else:
            self.folder = private_folder("sandex-")
            self.running = start(self.folder)
            address = self.running.address
        self.server = SandexServer(address, mode, started_here=self.running is not None)
        return self.server

    def template(self, build: Template, clock: str, start: str, seed: str = "") -> SandexWorld:
        """The template world of `build` on this clock and seed: made, built and
        snapshotted once."""
        key = (build, clock, start if clock == "manual" else None, seed)
        if key not in self.templates:
            from sandex.testing._world import SandexWorld

            server = self.sandbox()
            body: dict[str, Any] = {"name": "sandex template", "clock": clock}
            body.update(seed=SEED, record=True)
            if clock == "manual":
                body["start_time"] = start
            if seed:
                body["seed"] = int(seed)
            made = server.create_world(**body)
            world = SandexWorld(made, made["client_id"], made["client_secret"], server.http)
            self.templates[key] = world
            build(world)
            world.snapshot(SNAPSHOT)
        return self.templates[key]

    def fork(
        self, template: SandexWorld, clock: str, settings: dict[str, Any], name: str
    ) -> SandexWorld:
        """A test's world, forked from `template` and logged in. On a server that stops
        with the session and a manual clock, the next test's world of the same template
        and settings is forked ahead, on a thread, while this test runs (named for no
        test: a world forked ahead does not know whose it will be)."""
        server = self.sandbox()
        body: dict[str, Any] = {
            "from_world": template.id,
            "from_snapshot": SNAPSHOT,
            "record": True,
        }
        if settings:
            body["settings"] = settings
        if clock != "manual" or self.outlives():
            return _forked(server, template, {**body, "name": name})
        key = (template.id, json.dumps(settings, sort_keys=True))
        spare = self.spares.pop(key, None)
        world = None
        if spare is not None:
            try:
                world = spare.result()
            except Exception:  # forked now instead, so that its error is this test's
                world = None
        if world is None:
            world = _forked(server, template, {**body, "name": name})
        if self.ahead is None:
            self.ahead = ThreadPoolExecutor(1, thread_name_prefix="sandex-fork-ahead")
        self.spares[key] = self.ahead.submit(_forked, server, template, {**body, "name": AHEAD})
        return world

    def outlives(self) -> bool:
        """Whether the server outlives the session (a URL's, or kept by --sandex-reuse)."""
        return self.server is not None and (self.server.mode == "url" or reusing(self.config))

    def deleter(self) -> Deleter:
        """The session's deleter of the tests' worlds (made when first asked for)."""
        if self.deleting is None:
            from sandex.testing._server import Deleter

            self.deleting = Deleter(self.sandbox())
        return self.deleting

    def finish(self) -> None:
        if self.starting is not None:
            self.starting.exception()  # a start under way ends before its server stops
        try:
            outlives = self.outlives()
            if self.ahead is not None:  # the worlds forked ahead go with the server
                self.ahead.shutdown(wait=True, cancel_futures=True)
            if self.deleting is not None:
                # a server that stops with the session takes its worlds with it
                self.deleting.close(drain=outlives)
            if self.server is not None and outlives:
                for template in self.templates.values():
                    self.server.delete_world(template.id)
        finally:
            if self.server is not None:
                self.server.close()
            if self.shared is not None:
                self.shared.done(self.running)
            elif self.running is not None:
                self.running.stop()
            if self.folder is not None:
                from sandex.testing._server import remove

                remove(self.folder)


def _forked(server: SandexServer, template: SandexWorld, body: dict[str, Any]) -> SandexWorld:
    """A fork of `template` (`body`: the creation's), its bootstrap client logged in."""
    from sandex.testing._world import SandexWorld

    made = server.create_world(**body)
    world = SandexWorld(made, template.client_id, template.client_secret, server.http)
    world.token()
    return world


@pytest.fixture(scope="session")
def sandex_server(request: pytest.FixtureRequest) -> SandexServer:
    """The session's sandbox: on a thread of this process by default."""
    return request.config.stash[_STATE].sandbox()


@pytest.fixture(scope="session")
def sandex_template(request: pytest.FixtureRequest) -> Template:
    """How the session's template world is built (override it to build your own)."""
    named = setting(request.config, "template")
    if not named:
        from sandex.testing._world import default_template

        return default_template
    module, _, name = named.partition(":")
    built: Template = getattr(importlib.import_module(module), name)
    return built


@pytest.fixture
def sandex_world(
    request: pytest.FixtureRequest, sandex_server: SandexServer, sandex_template: Template
) -> Iterator[SandexWorld]:
    """A fresh world for this test, forked from the template, with its own clock; deleted
    afterwards unless kept (`--sandex-keep`: the failed tests' by default)."""
    config = request.config
    marker = request.node.get_closest_marker("sandex")
    chosen = dict(marker.kwargs) if marker else {}
    unknown = sorted(set(chosen) - set(MARKER_FIELDS))
    if unknown or (marker is not None and marker.args):
        raise pytest.UsageError(
            f"@pytest.mark.sandex takes the keywords {', '.join(MARKER_FIELDS)} only"
            f" ({request.node.nodeid}: {unknown or list(marker.args if marker else ())})"
        )
    clock = chosen.get("clock") or setting(config, "clock")
    start = chosen.get("start") or setting(config, "start")
    settings = json.loads(setting(config, "settings") or "{}")
    settings.update(chosen.get("settings") or {})
    seed = str(chosen.get("seed", "") or setting(config, "seed"))
    state = request.config.stash[_STATE]
    template = state.template(chosen.get("template") or sandex_template, clock, start, seed)
    world = state.fork(template, clock, settings, request.node.name[:100])
    request.node.stash[_WORLD] = world
    yield world
    keep = setting(config, "keep")
    failed = request.node.stash.get(_FAILED, False)
    if keep == "all" or (keep == "failed" and failed):
        world.kept = True
        return
    request.config.stash[_STATE].deleter().put(world.id)
