"""The command line on what it cannot use: a corrupt, foreign, missing or damaged
database, a directory, a bad config file, a busy port, an earlier recording. Each time
one line on stderr (`sandex: ...`), a non-zero exit, no traceback, and nothing created
or changed beside the file named."""

from __future__ import annotations

import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from sandex.api_adapter.cli import main
from sandex.engine import open_engine
from sandex.engine.kernel.commands import CreateCustomer
from tests.conftest import make_settings

ROOT = Path(__file__).resolve().parents[2]
SANDEX = [sys.executable, "-m", "sandex.api_adapter.cli"]


@pytest.fixture(autouse=True)
def _logging_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve` and `replay` configure logging onto the stderr of the moment, which in a
    test run in-process is capsys's, closed when the test ends: every later test of the
    worker would then log into a closed file. In-process runs here leave it alone."""
    import sandex.api_adapter.logging

    monkeypatch.setattr(sandex.api_adapter.logging, "configure", lambda *a, **k: None)


def _sandex(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [*SANDEX, *args], cwd=cwd, capture_output=True, text=True, timeout=60, env=env
    )


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("sandex: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def _sandex_db(path: Path) -> Path:
    with open_engine(path, make_settings()) as engine:
        engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
    return path


def _corrupt(folder: Path) -> Path:
    path = folder / "corrupt.db"
    path.write_bytes(os.urandom(20_000))
    return path


def _foreign(folder: Path) -> Path:
    path = folder / "foreign.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE contacts (name TEXT)")
    conn.execute("INSERT INTO contacts VALUES ('ada')")
    conn.commit()
    conn.close()
    return path


def _missing(folder: Path) -> Path:
    return folder / "missing.db"


def _directory(folder: Path) -> Path:
    path = folder / "adir"
    path.mkdir()
    return path


def _empty(folder: Path) -> Path:
    path = folder / "empty.db"
    path.touch()
    return path


def _damaged(folder: Path) -> Path:
    """A sandex database whose header and schema read well but whose log does not: the
    events table's root page (page 2) overwritten."""
    path = _sandex_db(folder / "damaged.db")
    with path.open("r+b") as f:
        f.seek(4096)
        f.write(b"\xa5" * 4096)
    return path


BAD = {
    "corrupt": (_corrupt, "not an SQLite file"),
    "foreign": (_foreign, "not a sandex one (no event log; its tables: contacts)"),
    "missing": (_missing, "no database at"),
    "directory": (_directory, "it is a directory"),
    "empty": (_empty, "an empty file"),
    "damaged": (_damaged, "database disk image is malformed"),
}

COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "verify": lambda db, tmp: ["verify", "--db", str(db)],
    "events": lambda db, tmp: ["events", "--db", str(db)],
    "rebuild": lambda db, tmp: ["rebuild", "--db", str(db)],
    "time travel": lambda db, tmp: [
        "time-travel",
        "--db",
        str(db),
        "--until",
        "1",
        "--out",
        str(tmp / "then.db"),
    ],
    "clients revoke": lambda db, tmp: ["clients", "revoke", "someone", "--db", str(db)],
    "keys rotate": lambda db, tmp: ["keys", "rotate", "--db", str(db)],
}


def _files(folder: Path) -> dict[str, bytes | None]:
    return {p.name: (p.read_bytes() if p.is_file() else None) for p in sorted(folder.iterdir())}


def _unchanged(before: dict[str, bytes | None], after: dict[str, bytes | None], bad: str) -> bool:
    if bad == "damaged":
        companions = ("-wal", "-shm", ".lock")
        before = {k: v for k, v in before.items() if not k.endswith(companions)}
        after = {k: v for k, v in after.items() if not k.endswith(companions)}
    return before == after


@pytest.mark.parametrize(
    ("command", "bad"),
    # Rotating the key file reads nothing of the log: a damaged one is no matter to it.
    [(c, b) for c in COMMANDS for b in BAD if (c, b) != ("keys rotate", "damaged")],
)
def test_a_database_it_cannot_use_is_one_line_and_nothing_is_touched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, bad: str
) -> None:
    make, said = BAD[bad]
    db = make(tmp_path)
    before = _files(tmp_path)
    code = main(COMMANDS[command](db, tmp_path))
    out, err = capsys.readouterr()
    assert code == 2
    line = _one_line(err)
    assert said in line and str(db) in line
    assert out == ""
    # Nothing created (no database for a missing one, no -wal, no .lock, no output
    # database of time travel) and nothing written (no sandex tables in a foreign file).
    # A damaged sandex database is opened, so SQLite's and sandex's own companion files
    # (-wal, -shm, .lock) may appear beside it, as for any read; it is not changed.
    assert _unchanged(before, _files(tmp_path), bad)


@pytest.mark.parametrize("bad", ["corrupt", "foreign", "directory", "damaged"])
def test_serve_refuses_a_database_it_cannot_use_before_creating_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    make, said = BAD[bad]
    db = make(tmp_path)
    before = _files(tmp_path)
    code = main(["serve", "--db", str(db), "--port", "0", "--log-format", "json"])
    out, err = capsys.readouterr()
    assert code == 2
    assert said in _one_line(err)
    assert "sandex serving" not in out
    assert _unchanged(before, _files(tmp_path), bad)


@pytest.mark.parametrize("db", [":memory:", "file::memory:?cache=shared"])
def test_serve_refuses_an_in_memory_database(
    db: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It served one whose read side opened another, empty database: every read was a
    500 ("no such table")."""
    monkeypatch.chdir(tmp_path)
    code = main(["serve", "--db", db, "--port", "0", "--log-format", "json"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "an in-memory database has no second connection" in _one_line(err)
    assert "sandex serving" not in out
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["verify", "events", "rebuild"])
def test_the_installed_command_says_one_line_too(tmp_path: Path, command: str) -> None:
    """The same through `python -m sandex.api_adapter.cli`, as a user runs it: the exit status
    reaches the shell, and a missing database is not created."""
    for bad in ("corrupt", "foreign", "missing", "directory"):
        folder = tmp_path / bad
        folder.mkdir()
        make, said = BAD[bad]
        done = _sandex(command, "--db", str(make(folder)))
        assert done.returncode == 2, done
        assert said in _one_line(done.stderr)
    assert not (tmp_path / "missing" / "missing.db").exists()
    assert list((tmp_path / "missing").iterdir()) == []


CONFIGS = {
    "missing": (None, "missing.yaml: cannot read: No such file or directory"),
    "unknown key": ("seed: 1\nbogus_key: 3\n", "config.yaml line 2: bogus_key: not a setting"),
    "misspelt key": ("sed: 1\n", "line 1: sed: not a setting (did you mean seed?)"),
    "wrong type": (
        "clock: manual\nseed: abc\n",
        "config.yaml line 2: seed: Input should be a valid integer",
    ),
    "nested": (
        "seed: 1\nrate_limits:\n  orders: 5\n  login: -1\n",
        "config.yaml line 4: rate_limits.login: Input should be greater than 0 (got -1)",
    ),
    "bad YAML": ("seed: [1\nclock: wall\n", "config.yaml line 2 column 6: not valid YAML"),
    "not a mapping": ("- seed\n", "config.yaml: a config file is a mapping of settings"),
    "directory": ("/", "config.yaml: cannot read: Is a directory"),
}


@pytest.mark.parametrize("case", list(CONFIGS))
def test_a_config_file_it_cannot_use_is_one_line_naming_line_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    text, said = CONFIGS[case]
    config = tmp_path / ("missing.yaml" if text is None else "config.yaml")
    if text == "/":
        config.mkdir()
    elif text is not None:
        config.write_text(text)
    db = tmp_path / "new.db"
    code = main(["serve", "--db", str(db), "--port", "0", "--config", str(config)])
    out, err = capsys.readouterr()
    assert code == 2
    assert said in _one_line(err)
    assert "sandex serving" not in out
    assert not db.exists()


def test_backtest_says_the_same_of_its_config_file(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("maker_fee_rate: 0.001\nbogus_key: 3\n")
    done = _sandex(
        "backtest",
        "--data",
        "scenarios/backtests/btcusd_hourly.csv",
        "--market",
        "BTCUSD",
        "--flow",
        "scenarios/backtests/grid.yaml",
        "--config",
        str(config),
    )
    assert done.returncode == 2
    assert "config.yaml line 2: bogus_key: not a setting" in _one_line(done.stderr)


GRID = "scenarios/backtests/grid.yaml"
HOURLY = "scenarios/backtests/btcusd_hourly.csv"
SCENARIO = "scenarios/fee_quote_used.yaml"


def _file_cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    binary = tmp / "binary.bin"
    binary.write_bytes(b"\xdb\xff" + os.urandom(2000))
    bad_yaml = tmp / "bad.yaml"
    bad_yaml.write_text("version: 1\nsteps: [1\nmarket: BTCUSD\n")
    folder = tmp / "folder"
    folder.mkdir()
    kept = tmp / "kept.db"
    kept.write_bytes(b"precious")
    backtest = ["backtest", "--market", "BTCUSD"]
    return {
        "data is a directory": (
            [*backtest, "--data", str(folder), "--flow", GRID],
            "folder: a directory, not a data file",
        ),
        "data is binary": (
            [*backtest, "--data", str(binary), "--flow", GRID],
            "binary.bin: not a CSV file (not UTF-8 text)",
        ),
        "flow is binary": (
            [*backtest, "--data", HOURLY, "--flow", str(binary)],
            "binary.bin: not an order flow (not UTF-8 text)",
        ),
        "flow is bad YAML": (
            [*backtest, "--data", HOURLY, "--flow", str(bad_yaml)],
            "bad.yaml line 3 column 7: not valid YAML: expected ',' or ']'",
        ),
        "strategy is a directory": (
            [*backtest, "--data", HOURLY, "--strategy", f"{folder}:Grid"],
            f"no module {folder} (a file is written path.py:ClassName)",
        ),
        "strategy file is a directory": (
            [*backtest, "--data", HOURLY, "--strategy", f"{folder}.py:Grid"],
            "folder.py: no such file",
        ),
        "backtest db folder missing": (
            [*backtest, "--data", HOURLY, "--flow", GRID, "--db", str(tmp / "no" / "x.db")],
            "x.db: no folder",
        ),
        "backtest out is a file": (
            [*backtest, "--data", HOURLY, "--flow", GRID, "--out", str(kept)],
            "kept.db is a file; the report is written into a folder",
        ),
        "scenario is binary": (["replay", str(binary)], "binary.bin: not a scenario"),
        "scenario is bad YAML": (["replay", str(bad_yaml)], "bad.yaml line 3 column 7"),
        "replay out exists": (
            ["replay", SCENARIO, "--out", str(kept)],
            "kept.db exists already; --out writes a new database",
        ),
        "time travel out folder missing": (
            ["time-travel", "--db", "DB", "--until", "1", "--out", str(tmp / "no" / "then.db")],
            "then.db: no folder",
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "data is a directory",
        "data is binary",
        "flow is binary",
        "flow is bad YAML",
        "strategy is a directory",
        "strategy file is a directory",
        "backtest db folder missing",
        "backtest out is a file",
        "scenario is binary",
        "scenario is bad YAML",
        "replay out exists",
        "time travel out folder missing",
    ],
)
def test_backtest_and_replay_file_arguments_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """Refused before anything runs: nothing is written (a kept file is not overwritten,
    no database or report is made), and the line names the file and what is wrong."""
    monkeypatch.chdir(ROOT)
    argv, said = _file_cases(tmp_path)[case]
    argv = [str(_sandex_db(tmp_path / "source.db")) if a == "DB" else a for a in argv]
    before = _files(tmp_path)
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 2
    assert said in _one_line(err)
    # (time travel reads its source database: SQLite's companion files may appear)
    assert _unchanged(before, _files(tmp_path), "damaged")
    assert (tmp_path / "kept.db").read_bytes() == b"precious"


def test_serve_on_a_busy_port_says_so_before_making_a_database_or_a_banner(
    tmp_path: Path,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _sandex("serve", "--db", str(tmp_path / "new.db"), "--port", str(port))
    assert done.returncode == 2
    line = _one_line(done.stderr)
    assert f"cannot listen on 127.0.0.1:{port}: the port is in use" in line
    assert "sandex serving" not in done.stdout
    assert list(tmp_path.iterdir()) == []  # no database, -wal, .lock or key file


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--port", "70000"], "cannot listen on 127.0.0.1:70000: a port is 0 to 65535"),
        (["--host", "no-such-host.invalid"], "cannot listen on no-such-host.invalid:8080"),
    ],
)
def test_serve_on_an_address_it_cannot_take_is_one_line(
    tmp_path: Path, flags: list[str], said: str
) -> None:
    # In a process of its own: were the address taken after all, a server would run.
    done = _sandex("serve", "--db", str(tmp_path / "new.db"), *flags)
    assert done.returncode == 2
    assert said in _one_line(done.stderr)
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_serve_on_port_0_takes_a_free_port_and_says_which(tmp_path: Path) -> None:
    """The socket is bound before the banner, so the banner names the port taken."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    db = tmp_path / "new.db"
    proc = subprocess.Popen(
        [*SANDEX, "serve", "--db", str(db), "--port", "0", "--log-format", "json"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/v2", first).group(1))  # type: ignore[union-attr]
        assert port != 0
        assert httpx.get(f"http://127.0.0.1:{port}/v2/sandbox/clock", timeout=10).status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)
    assert proc.returncode == 0


def test_serve_does_not_overwrite_an_earlier_recording(tmp_path: Path) -> None:
    earlier = tmp_path / "session.yaml"
    earlier.write_text("# yesterday's session\n")
    db = tmp_path / "new.db"
    done = _sandex("serve", "--db", str(db), "--port", "0", "--record", str(earlier))
    assert done.returncode == 2
    assert "session.yaml exists already; it is not overwritten (--force" in _one_line(done.stderr)
    assert done.stdout == ""
    assert earlier.read_text() == "# yesterday's session\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.yaml"]  # no database
    folder = tmp_path / "adir"
    folder.mkdir()
    done = _sandex("serve", "--db", str(db), "--record", str(folder), "--force")
    assert done.returncode == 2
    assert "adir: a directory; a recording is a file" in _one_line(done.stderr)


def test_serve_force_overwrites_an_earlier_recording(tmp_path: Path) -> None:
    from sandex.engine.tools.scenario_file import load_file

    earlier = tmp_path / "session.yaml"
    earlier.write_text("# yesterday's session\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [*SANDEX, "serve", "--db", str(tmp_path / "new.db"), "--port", "0"]
        + ["--clock", "manual", "--log-format", "json", "--record", str(earlier), "--force"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        port = re.search(r":(\d+)/v2", proc.stdout.readline()).group(1)  # type: ignore[union-attr]
        r = httpx.get(f"http://127.0.0.1:{port}/v2/sandbox/clock", timeout=10)
        assert r.status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)
    assert "yesterday" not in earlier.read_text()
    assert load_file(earlier).purpose == "a session recorded by sandex serve --record"


def test_ctrl_c_ends_quietly_and_a_bug_keeps_its_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sandex.api_adapter.cli.errors import reported

    with reported() as outcome:
        raise KeyboardInterrupt
    assert outcome.code == 130
    assert capsys.readouterr().err == ""
    with pytest.raises(ZeroDivisionError), reported():
        _ = 1 / 0  # not an error of the environment: not turned into a line
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["replay", "--db", "DB", "--until", "1", "--out", "OUT"],
        ["replay", "--until", "1"],
        ["replay", "--until"],
        ["replay", "x.yaml", "--db", "DB"],
    ],
)
def test_replay_until_names_the_time_travel_verb_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Time travel moved to its own verb: the old spelling says where, and does nothing."""
    source = str(_sandex_db(tmp_path / "source.db"))
    out = tmp_path / "then.db"
    argv = [source if a == "DB" else str(out) if a == "OUT" else a for a in argv]
    before = _files(tmp_path)
    assert main(argv) == 2
    line = _one_line(capsys.readouterr().err)
    assert "sandex time-travel --db F --until POSITION|TIME --out G" in line, line
    assert line.startswith("sandex: replay --"), line
    assert _unchanged(before, _files(tmp_path), "damaged")
