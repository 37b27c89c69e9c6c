"""sandex's pytest plugin (sandex.testing.plugin) as a user's suite meets it: example
suites run by pytester in a subprocess, with the plugin loaded from its entry point and
no conftest code."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from tests.support.server_helpers import Server

pytest_plugins = ["pytester"]

# pytester removes the modules a test imported when it ends; httpx imports its transport
# (httpcore) on its first client, so a later test's httpx would map a newer httpcore's
# errors by the older's classes: make that first client here, before any test.
httpx.Client().close()

# An example test that records what it saw, one JSON line per test, in $SANDEX_SEEN.
RECORD = """
import json, os

def record(**seen):
    with open(os.environ["SANDEX_SEEN"], "a") as f:
        f.write(json.dumps(seen) + "\\n")
"""


def seen(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def record_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "seen.jsonl"
    monkeypatch.setenv("SANDEX_SEEN", str(path))
    return path


def test_thread_mode_gives_each_test_its_own_world_and_clock(
    pytester: pytest.Pytester, record_to: Path
) -> None:
    """Two tests that move their own clocks and balances see only their own moves: each
    world starts from the template (the default: a funded DEFAULT profile at a fixed
    time), on a server in the pytest process."""
    pytester.makepyfile(
        RECORD
        + """
from decimal import Decimal
from sandex.testing import DEFAULT_BALANCES, DEFAULT_START

def check(world, seconds):
    assert world.clock.now().startswith(DEFAULT_START[:19])
    usd = world.get(f"/profiles/{world.profile_id}/balances/USD")
    assert Decimal(usd["available"]) == DEFAULT_BALANCES["USD"]
    world.deposit("USD", "1")
    world.clock.advance(seconds=seconds)
    record(world=world.id, now=world.clock.now(), mode=world.clock.mode,
           server=world.base_url.split("/w/")[0], started_here=True)

def test_a(sandex_world, sandex_server):
    assert sandex_server.mode == "thread" and sandex_server.started_here
    check(sandex_world, 3600)

def test_b(sandex_world):
    check(sandex_world, 7200)
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    a, b = seen(record_to)
    assert a["world"] != b["world"]
    assert (a["mode"], b["mode"]) == ("manual", "manual")
    assert str(a["now"]).startswith("2030-01-02T16:00:00")
    assert str(b["now"]).startswith("2030-01-02T17:00:00")
    with pytest.raises(httpx.TransportError):  # stopped with the session
        httpx.get(f"{a['server']}/healthz", timeout=2)


def test_the_thread_servers_forks_sync_nothing_to_the_disk(pytester: pytest.Pytester) -> None:
    """The plugin's server holds throwaway worlds: it runs with NORMAL durability (a
    process crash survived, not a power cut), so the tests' forks, made while the tests
    run, wait for no sync of their files to the disk."""
    pytester.makepyfile(
        """
import os

SYNCED = []
_fsync = os.fsync
os.fsync = lambda fd: SYNCED.append(fd) or _fsync(fd)
SINCE = []

def test_a(sandex_world):
    SINCE.append(len(SYNCED))  # the server, its template and this world are made

def test_b(sandex_world):
    sandex_world.clock.advance(seconds=1)

def test_c(sandex_world):
    sandex_world.clock.advance(seconds=1)
    assert SYNCED[SINCE[0]:] == []
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_the_server_starts_once_the_tests_are_collected_before_one_asks_for_it(
    pytester: pytest.Pytester, record_to: Path
) -> None:
    """A suite whose tests ask for sandex starts its server on a thread as soon as they
    are collected, so the start overlaps what comes before the first test: at the end of
    the collection it is starting (or serving) already. A run whose selected tests ask
    for nothing (or only in tests marked skip), or that only collects, starts none."""
    pytester.makeconftest(
        RECORD
        + """
import threading, pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    record(threads=sorted(t.name for t in threading.enumerate()))
"""
    )
    pytester.makepyfile(
        """
import pytest

def test_first():
    pass

def test_world(sandex_world):
    sandex_world.token()

@pytest.mark.skip(reason="not now")
def test_skipped(sandex_world):
    pass
"""
    )
    unused = ("-k", "not test_world")
    runs = [
        ((), {"passed": 2, "skipped": 1}),
        (unused, {"passed": 1, "skipped": 1, "deselected": 1}),
    ]
    for args, outcomes in runs:
        pytester.runpytest_subprocess("-p", "no:cacheprovider", *args).assert_outcomes(**outcomes)
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only").ret == 0
    starting = {"sandex-start", "sandex-server"}
    full, selected, collected = (set(r["threads"]) for r in seen(record_to))  # type: ignore[call-overload]
    assert starting & full
    assert not starting & selected
    assert not starting & collected


@pytest.mark.slow
def test_xdist_workers_share_one_server(pytester: pytest.Pytester, record_to: Path) -> None:
    """Under `-n 2` one worker starts the server and both use it; it stops when both
    are done."""
    pytester.makepyfile(
        RECORD
        + """
import os, pytest

@pytest.mark.parametrize("n", range(8))
def test_world(sandex_world, sandex_server, n):
    sandex_world.clock.advance(seconds=n)
    record(pid=os.getpid(), url=sandex_server.url, started_here=sandex_server.started_here)
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=8)
    records = seen(record_to)
    assert len({r["pid"] for r in records}) == 2  # both workers ran tests
    assert len({r["url"] for r in records}) == 1  # on one server
    assert len({r["pid"] for r in records if r["started_here"]}) == 1  # started by one
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{records[0]['url']}/healthz", timeout=2)


def test_share_worker_gives_each_xdist_worker_a_server_of_its_own(
    pytester: pytest.Pytester, record_to: Path
) -> None:
    """With `--sandex-share=worker` each worker starts (and stops) its own server."""
    pytester.makepyfile(
        RECORD
        + """
import os, pytest

@pytest.mark.parametrize("n", range(8))
def test_world(sandex_world, sandex_server, n):
    sandex_world.clock.advance(seconds=n)
    record(pid=os.getpid(), url=sandex_server.url, started_here=sandex_server.started_here)
"""
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--sandex-share=worker"
    )
    result.assert_outcomes(passed=8)
    records = seen(record_to)
    servers = {r["pid"]: r["url"] for r in records}
    assert len(servers) == 2 and len(set(servers.values())) == 2  # a server per worker
    assert all(r["started_here"] for r in records)
    for url in servers.values():
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/healthz", timeout=2)


def test_the_thread_server_leaves_the_suites_logging_as_it_is(pytester: pytest.Pytester) -> None:
    """A suite's own structlog lines, and its captures of them, are the same once the
    in-process server runs."""
    pytester.makepyfile(
        """
import structlog
from structlog.testing import capture_logs

def test_logs(sandex_world):
    sandex_world.clock.now()
    with capture_logs() as logs:
        structlog.get_logger("mine").info("mine")
    assert [entry["event"] for entry in logs] == ["mine"]
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_sandex_url_starts_nothing_and_a_failed_tests_world_is_kept(
    pytester: pytest.Pytester, record_to: Path, running: Server
) -> None:
    """`--sandex-url` forks the worlds on the server given; a failed test's world is
    kept there and named in the report, a passing one's deleted, the template too."""
    pytester.makepyfile(
        RECORD
        + """
def test_passes(sandex_world, sandex_server):
    record(world=sandex_world.id, mode=sandex_server.mode, url=sandex_world.base_url,
           started_here=sandex_server.started_here)

def test_fails(sandex_world):
    record(world=sandex_world.id)
    assert False, "on purpose"
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sandex-url", running.base)
    result.assert_outcomes(passed=1, failed=1)
    passed, failed = seen(record_to)
    assert passed["mode"] == "url" and passed["started_here"] is False
    assert str(passed["url"]).startswith(f"{running.base}/w/")
    result.stdout.fnmatch_lines([f"kept world {failed['world']} for *::test_fails: *"])
    admin = running.token()
    worlds = httpx.get(f"{running.base}/v2/sandbox/worlds", headers=admin).json()
    assert [w["id"] for w in worlds["items"]] == [failed["world"]]


def test_marker_ini_and_flags_change_a_tests_world(
    pytester: pytest.Pytester, record_to: Path
) -> None:
    """ini options set every world's start and clock, a flag overrides the ini, and the
    marker changes one test's clock, start and settings (and names a keyword it lacks)."""
    pytester.makeini(
        "[pytest]\nsandex_start = 2031-05-06T07:00:00Z\nsandex_clock = wall\nsandex_keep = none\n"
    )
    pytester.makepyfile(
        """
import pytest
from sandex.client import ProblemError

def test_ini_start_and_flag_clock(sandex_world):
    assert sandex_world.clock.mode == "manual"
    assert sandex_world.clock.now().startswith("2031-05-06T07:00:00")

@pytest.mark.sandex(start="2032-01-01T00:00:00Z")
def test_marker_start(sandex_world):
    assert sandex_world.clock.now().startswith("2032-01-01T00:00:00")

@pytest.mark.sandex(clock="wall")
def test_marker_wall_clock(sandex_world):
    assert sandex_world.clock.mode == "wall"

@pytest.mark.sandex(settings={"world_max_events": 1})
def test_marker_settings(sandex_world):
    with pytest.raises(ProblemError) as refused:
        sandex_world.deposit("USD", "1")
    assert refused.value.status == 403
    assert refused.value.problem["meta"]["limit"] == "world_max_events"

@pytest.mark.sandex(colour="red")
def test_unknown_keyword(sandex_world):
    pass
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sandex-clock=manual")
    result.assert_outcomes(passed=4, errors=1)
    result.stdout.fnmatch_lines(["*@pytest.mark.sandex takes the keywords clock, start*colour*"])


def test_a_seed_makes_every_world_walk_the_same_prices(
    pytester: pytest.Pytester, record_to: Path
) -> None:
    """The ini's seed is the template's, so every world forked from it walks the same
    prices; a marker's seed is a template of its own, walking other prices."""
    pytester.makeini("[pytest]\nsandex_seed = 11\n")
    pytester.makepyfile(
        RECORD
        + """
import pytest

def walked(world, test):
    world.clock.advance(seconds=3600)
    price = world.get("/all-markets/prices", markets="BTCUSD")["items"][0]["current_price"]
    record(test=test, price=price)

def test_a(sandex_world):
    walked(sandex_world, "a")

def test_b(sandex_world):
    walked(sandex_world, "b")

@pytest.mark.sandex(seed=12)
def test_other(sandex_world):
    walked(sandex_world, "other")
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    prices = {line["test"]: line["price"] for line in seen(record_to)}
    assert prices["a"] == prices["b"] != prices["other"]


def test_a_template_override_is_built_once_and_seen_by_every_test(
    pytester: pytest.Pytester, record_to: Path
) -> None:
    """A `sandex_template` fixture of the user's builds the baseline once per session;
    every test forks it; a marker's template replaces it for one test."""
    pytester.makepyfile(
        RECORD
        + """
import pytest

def funded(amount):
    def build(world):
        record(built=amount)
        world.deposit("USD", amount)
    return build

@pytest.fixture(scope="session")
def sandex_template():
    return funded("5")

def usd(world):
    return world.get(f"/profiles/{world.profile_id}/balances/USD")["available"]

@pytest.mark.parametrize("n", range(3))
def test_override(sandex_world, n):
    assert usd(sandex_world) == "5"

@pytest.mark.sandex(template=funded("7"))
def test_marker_template(sandex_world):
    assert usd(sandex_world) == "7"
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    assert seen(record_to) == [{"built": "5"}, {"built": "7"}]


def test_a_worlds_helpers_in_process_mode(pytester: pytest.Pytester) -> None:
    """The world's helpers against a `sandex serve` subprocess: the clock set, a price,
    snapshot and restore, a GTT order waited for in engine time (and a wait that times
    out), an armed fault, the requests and events."""
    pytester.makepyfile(
        """
import pytest
from datetime import datetime, timedelta
from decimal import Decimal
from sandex.client import ProblemError

def usd(w):
    return Decimal(w.get(f"/profiles/{w.profile_id}/balances/USD")["available"])

def test_helpers(sandex_world, sandex_server):
    w = sandex_world
    assert sandex_server.mode == "process" and sandex_server.started_here
    w.snapshot("before")
    w.deposit("USD", "5")
    assert usd(w) == Decimal("100005")
    w.restore("before")
    assert usd(w) == Decimal("100000")

    now = w.clock.set("2030-01-03T00:00:00Z")
    assert now.startswith("2030-01-03T00:00:00")
    w.set_price("BTCUSD", "50000")
    assert Decimal(w.get("/sandbox/markets/BTCUSD/price")["reference_price"]) == 50000

    expiry = datetime.fromisoformat("2030-01-03T00:01:00+00:00")
    order = w.post(f"/profiles/{w.profile_id}/orders", {
        "market": "BTCUSD", "side": "BUY", "type": "LIMIT", "price": "40000",
        "base_amount": "0.1", "time_in_force": "GTT",
        "expiration_date": str(int(expiry.timestamp() * 1000)),
    })
    with pytest.raises(TimeoutError):
        w.wait_for("order", order["id"], "FILLED", timeout_seconds=3)
    done = w.wait_for("order", order["id"], "CANCELLED", timeout_seconds=120, step_seconds=10)
    assert done["status"] == "CANCELLED"  # a GTT order past its expiry
    assert w.clock.now() < "2030-01-03T00:03:00"

    w.faults.arm({"operation": "ListProfiles"}, {"problem": {"status": 503}}, times=1)
    with pytest.raises(ProblemError) as refused:
        w.get("/profiles")
    assert refused.value.status == 503
    assert w.get("/profiles")  # the rule fired its one time

    assert "CreateOrder" in {r.operation for r in w.requests()}
    assert len(w.events()) > 5
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sandex-mode=process")
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_reuse_keeps_the_server_between_runs_until_stopped(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--sandex-reuse`: the first run starts a `sandex serve` and leaves it running, the
    next reuses it and says so; `--sandex-reuse-list` names it, `--sandex-reuse-stop`
    stops it."""
    monkeypatch.setenv("SANDEX_STATE_DIR", str(tmp_path / "state"))
    pytester.makepyfile(
        "def test_world(sandex_world):\n    sandex_world.clock.advance(seconds=1)\n"
    )
    record = tmp_path / "state" / "pytest-server.json"
    try:
        first = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sandex-reuse")
        first.assert_outcomes(passed=1)
        first.stdout.fnmatch_lines(["sandex: server http://127.0.0.1:* started and kept running*"])
        url = json.loads(record.read_text())["address"]["url"]
        assert httpx.get(f"{url}/healthz").status_code == 200  # it outlived the run
        second = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sandex-reuse")
        second.assert_outcomes(passed=1)
        second.stdout.fnmatch_lines([f"sandex: server {url} reused*"])
        listed = pytester.runpytest_subprocess("--sandex-reuse-list")
        listed.stdout.fnmatch_lines([f"sandex: running {url} *"])
        pytester.runpytest_subprocess("--sandex-reuse-stop").stdout.fnmatch_lines(
            [f"sandex: stopped {url} *"]
        )
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/healthz", timeout=2)
    finally:
        if record.exists():  # a failed run leaves no server behind
            os.kill(json.loads(record.read_text())["pid"], signal.SIGKILL)


# A server that says it is an older sandex: it answers every GET 200 with that version.
OLDER_SANDEX = """
import http.server

class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("X-Sandex-Version", "0.0.1")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass

server = http.server.HTTPServer(("127.0.0.1", 0), Answer)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def _kept_older_sandex(state: Path, *, reaped: bool = True) -> tuple[subprocess.Popen[bytes], str]:
    """A server answering as sandex 0.0.1, recorded in `state` as the one --sandex-reuse
    keeps (as an older install's run would have left it), and its URL. `reaped=False`:
    nothing here waits for it, so once stopped it stays a zombie until its stopper reaps
    it (as a kept server this process started does)."""
    older = subprocess.Popen(
        [sys.executable, "-c", OLDER_SANDEX], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    if reaped:
        threading.Thread(target=older.wait, daemon=True).start()  # reaped once stopped
    assert older.stdout is not None
    url = f"http://127.0.0.1:{int(older.stdout.readline())}"
    state.mkdir(parents=True)
    address = {"url": url, "client_id": "sandex", "client_secret": "old"}
    (state / "pytest-server.json").write_text(json.dumps({"address": address, "pid": older.pid}))
    return older, url


def test_a_kept_server_of_another_version_is_stopped_and_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sandex.api_adapter.version import installed_version
    from sandex.testing._server import Reused

    monkeypatch.setenv("SANDEX_STATE_DIR", str(tmp_path / "state"))
    older, old_url = _kept_older_sandex(tmp_path / "state")
    kept = Reused()
    try:
        found = kept.running()
        assert found is not None and found.version == "0.0.1"
        new, reused, replaced = kept.acquire()
        assert not reused and replaced == found
        older.wait(timeout=10)  # stopped
        assert new.address.url != old_url and new.version == installed_version()
        answer = httpx.get(f"{new.address.url}/healthz")
        assert answer.headers["x-sandex-version"] == installed_version()
        assert kept.acquire()[1:] == (True, None)  # this version's server is reused
    finally:
        if older.poll() is None:
            older.kill()
        started = json.loads((tmp_path / "state" / "pytest-server.json").read_text())["pid"]
        if started != older.pid:  # this process's child: stopped and reaped here
            os.kill(started, signal.SIGINT)
            os.waitpid(started, 0)


def test_stopping_a_kept_server_this_process_started_reaps_it_and_sends_no_kill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept server that this process started (and so its child) ends on SIGINT but
    stays a zombie until reaped, which signal 0 still finds: the stopper reaps it and
    sees it gone, instead of counting it alive until its timeout and then killing it."""
    from sandex.testing import _server

    monkeypatch.setenv("SANDEX_STATE_DIR", str(tmp_path / "state"))
    older, _ = _kept_older_sandex(tmp_path / "state", reaped=False)
    sent: list[int] = []
    kill = os.kill

    def recorded(pid: int, signum: int) -> None:
        if pid == older.pid and signum:
            sent.append(signum)
        kill(pid, signum)

    monkeypatch.setattr(_server.os, "kill", recorded)
    try:
        found = _server.Reused().stop()
        assert found is not None and found.pid == older.pid
        assert sent == [signal.SIGINT]  # it ended on the first signal: no SIGKILL
        assert not _server._alive(older.pid)
        with pytest.raises(ChildProcessError):  # reaped by the stopper
            os.waitpid(older.pid, os.WNOHANG)
    finally:
        monkeypatch.undo()
        if older.poll() is None:
            older.kill()
            older.wait()


@pytest.mark.slow
def test_reuse_replaces_a_kept_server_of_another_sandex_version(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server kept by an older sandex's `--sandex-reuse` is not reused: this run stops
    it, starts its own and says so in one line."""
    monkeypatch.setenv("SANDEX_STATE_DIR", str(tmp_path / "state"))
    older, old_url = _kept_older_sandex(tmp_path / "state")
    record = tmp_path / "state" / "pytest-server.json"
    pytester.makepyfile(
        "def test_world(sandex_world):\n    sandex_world.clock.advance(seconds=1)\n"
    )
    try:
        run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sandex-reuse")
        run.assert_outcomes(passed=1)
        url = json.loads(record.read_text())["address"]["url"]
        assert url != old_url
        version = httpx.get(f"{url}/healthz").headers["x-sandex-version"]
        run.stdout.fnmatch_lines(
            [
                f"sandex: server {url} started and kept running (pid *); it replaces {old_url}"
                f" (pid {older.pid}), stopped because it ran sandex 0.0.1, not {version};"
                " stop it with pytest --sandex-reuse-stop"
            ]
        )
        older.wait(timeout=10)  # it was stopped
    finally:
        if older.poll() is None:
            older.kill()
        if record.exists() and json.loads(record.read_text())["pid"] != older.pid:
            os.kill(json.loads(record.read_text())["pid"], signal.SIGKILL)


def test_help_shows_the_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    flags = ("mode", "url", "allow-remote", "clock", "start", "settings", "template", "keep")
    flags += ("failures", "reuse")
    for flag in (*flags, "reuse-list", "reuse-stop"):
        result.stdout.fnmatch_lines([f"*--sandex-{flag}*"])
    result.stdout.fnmatch_lines(["*sandex_start*"])


def test_an_unused_plugin_imports_none_of_the_server_its_client_or_httpx(
    pytester: pytest.Pytester, record_to: Path
) -> None:
    """pytest loads the plugin in every run of an environment sandex is installed in: a
    suite that asks for no sandex fixture pays for its options and marker only, not for
    the server (FastAPI, the engine), `sandex.client` or httpx. (The dev environment's
    other plugins, which import httpx themselves, are left out.)"""
    pytester.makepyfile(
        RECORD
        + """
import sys

def test_nothing_of_sandex(request):
    assert request.config.pluginmanager.has_plugin("sandex")
    heavy = ("httpx", "httpcore", "fastapi", "starlette", "uvicorn", "pydantic",
             "sandex.client", "sandex.engine", "sandex.api_adapter",
             "sandex.testing._server", "sandex.testing._world")
    record(imported=sorted(m for m in sys.modules if m.split(".")[0] in heavy
                           or m.startswith(heavy)))
"""
    )
    others = ["-p", "no:hypothesispytest", "-p", "no:schemathesis", "-p", "no:anyio"]
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *others)
    result.assert_outcomes(passed=1)
    assert seen(record_to) == [{"imported": []}]


def test_the_thread_server_loads_no_command_line(pytester: pytest.Pytester) -> None:
    """The in-process server is the app `sandex serve` builds, but not the command line
    that serves it: no verb's parser is imported at the session's start."""
    pytester.makepyfile(
        """
import sys

def test_world(sandex_world):
    assert sandex_world.id
    loaded = [name for name in sys.modules if name.startswith("sandex.api_adapter.cli.")]
    assert loaded == ["sandex.api_adapter.cli.errors"]
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_freezegun_is_imported_only_by_a_suite_that_imports_it(pytester: pytest.Pytester) -> None:
    """The plugin configures freezegun as a test module imports it, before the module
    makes its `freeze_time`; a suite that never imports it does not pay for its import."""
    pytester.makepyfile(
        test_a="""
import sys

def test_none():
    assert "freezegun" not in sys.modules
""",
        test_b="""
from apscheduler.schedulers import base
from freezegun import freeze_time

made_at_import = freeze_time("2040-01-01")

def test_frozen():
    with made_at_import:
        assert base.datetime.now().year < 2040
""",
    )
    for suite in ("test_a.py", "test_b.py"):  # collected together, both would import it
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", suite)
        result.assert_outcomes(passed=1)


def test_freezegun_leaves_apscheduler_on_real_time() -> None:
    """The plugin (loaded in this suite as in a user's) keeps APScheduler on real time
    under freezegun: frozen years ahead, a thread-mode server's scheduler would
    otherwise list every interval it missed, until memory runs out. sandex's own
    modules still see the frozen time."""
    from apscheduler.schedulers import base
    from freezegun import freeze_time

    from sandex.engine.kernel import clock

    with freeze_time("2040-01-01"):
        assert base.datetime.now().year < 2040  # the scheduler's own `now`
        assert clock.datetime.now().year == 2040
