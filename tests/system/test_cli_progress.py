"""Progress of the long commands: the engine reports through a callback (verify, rebuild,
backtest), the command line draws one bar for all of them (api_adapter/cli/progress.py),
on stderr, and only on a terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import sandex.engine.kernel.progress as progress
from sandex.engine import open_engine
from sandex.engine.kernel.commands import Actor, CreateCustomer, SandboxDeposit
from sandex.engine.tools.verify import rebuild, verify
from tests.conftest import make_settings

ROOT = Path(__file__).resolve().parents[2]
SANDEX = [sys.executable, "-m", "sandex.api_adapter.cli"]


def _database(path: Path, deposits: int = 20) -> tuple[Path, int]:
    """A database and its last position."""
    with open_engine(path, make_settings()) as engine:
        made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
        actor = Actor(made["customer_id"], "c")
        for _ in range(deposits):
            engine.execute(
                SandboxDeposit(actor=actor, profile_id="default", asset="USD", amount="1")
            )
        last = engine.state.position
    return path, last


@pytest.mark.parametrize("run", [verify, rebuild])
def test_verify_and_rebuild_report_the_position_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Any
) -> None:
    db, last = _database(tmp_path / "log.db")
    told: list[tuple[int, int]] = []
    monkeypatch.setattr(progress, "EVERY", 3)
    run(str(db), progress=lambda done, total: told.append((done, total)))
    assert told, "the callback was never called"
    assert all(total == last for _, total in told)
    positions = [done for done, _ in told]
    assert positions == sorted(positions)
    assert positions[:3] == [3, 6, 9]  # every 3 events, by log position
    assert told[-1] == (last, last)  # and once at the end


def test_without_a_callback_nothing_is_reported_and_the_answer_is_the_same(
    tmp_path: Path,
) -> None:
    db, last = _database(tmp_path / "log.db", deposits=3)
    assert verify(str(db)) == verify(str(db), progress=lambda done, total: None) == []
    assert rebuild(str(db)) == last


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    return {**env, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLUMNS": "100"}


def _commands(db: Path, tmp: Path) -> dict[str, tuple[list[str], str]]:
    scenarios = [
        "scenarios/order_gtt_expiry.yaml",
        "scenarios/order_stop_trigger.yaml",
        "scenarios/sandbox_snapshot_restore_reset.yaml",
    ]  # 53 steps: a bar from 40
    return {
        "verify": (["verify", "--db", str(db)], "verifying"),
        "rebuild": (["rebuild", "--db", str(db)], "rebuilding"),
        "replay": (["replay", *scenarios], "replaying"),
        "backtest": (
            ["backtest", "--flow", "scenarios/backtests/grid.yaml", "--out", str(tmp / "r")],
            "backtest",
        ),
    }


@pytest.mark.parametrize("command", ["verify", "rebuild", "replay", "backtest"])
def test_no_progress_output_when_stderr_is_not_a_terminal(tmp_path: Path, command: str) -> None:
    db, _ = _database(tmp_path / "log.db")
    argv, label = _commands(db, tmp_path)[command]
    done = subprocess.run(
        [*SANDEX, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120, env=_env()
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    assert label not in done.stdout and "\x1b" not in done.stdout


@pytest.mark.parametrize("command", ["verify", "rebuild", "replay", "backtest"])
def test_a_bar_on_stderr_when_it_is_a_terminal_and_stdout_stays_clean(
    tmp_path: Path, command: str
) -> None:
    db, _ = _database(tmp_path / "log.db")
    argv, label = _commands(db, tmp_path)[command]
    main, terminal = pty.openpty()
    proc = subprocess.Popen(
        [*SANDEX, *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=terminal,
        text=True,
        env=_env(),
    )
    os.close(terminal)
    shown = b""
    while True:  # read the terminal as the command writes it, until it closes
        ready, _, _ = select.select([main], [], [], 120)
        assert ready, "no output, no end"
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + shown.decode(errors="replace")
    assert label in shown.decode(errors="replace")
    # Redirected stdout gets the command's lines, without the bar's drawing.
    assert out.strip() and "\x1b" not in out
