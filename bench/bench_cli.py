"""How long the `sandex` command line takes to start (issue 20): wall time of whole
processes, as a user waits for them.

    python bench/bench_cli.py [--runs 5] [--base-tree PATH]

Three figures, each the median of `--runs` processes with min and max, in wall time
and in the CPU time of the process (which a machine busy with other work inflates less):
- `sandex --help`;
- a small backtest: the shipped 600-bar file with the MA-cross strategy
  (docs/backtests.md's first example, without a report);
- `sandex serve` on an empty database: from starting the process to the first answer of
  `GET /healthz` (the client polls a connection every 2 ms).

Each process is `python -m sandex.api_adapter.cli` of a source tree (this one, or the one
$SANDEX_BENCH_TREE names as bench/ab.py sets it; and with `--base-tree` another, e.g. a worktree of main: the "before" of a pair), run alternately
base then head in each round so that both sides see the same moment of a shared machine,
and each side's ratio to the other per round. Bytecode is cached as an installed package
caches it: in a folder of this run's own (PYTHONPYCACHEPREFIX, so that nothing is written
into the trees), after one process of each kind that is not counted. `sandex verify` runs
on the last database each `serve` made.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import machine, measured_tree  # noqa: E402


def backtest_args(tree: Path) -> list[str]:
    """The small backtest, on the files a tree ships (bench/ab.py runs a copy of bench/
    that has no scenarios/ beside it)."""
    examples = tree / "scenarios" / "backtests"
    return [
        "backtest",
        "--data",
        str(examples / "btcusd_hourly.csv"),
        "--market",
        "BTCUSD",
        "--strategy",
        f"{examples / 'ma_cross.py'}:MaCross",
        "--taker-fee",
        "0.001",
        "--no-progress",
    ]


FIRST_ANSWER_LIMIT = 60.0  # seconds: a server that never answers fails the run


class Tree:
    """One source tree's `sandex`: `python -m sandex.api_adapter.cli` with the tree first on the
    path, run from a scratch folder (so no file of the tree is read by accident)."""

    def __init__(self, label: str, path: Path, scratch: Path, pycache: Path) -> None:
        self.label = label
        self.path = path
        self.scratch = scratch
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPATH"] = str(path)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
        env.pop("CI", None)
        self.env = env
        self.last_db: Path | None = None

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "sandex.api_adapter.cli", *args]

    def wall(self, *args: str) -> tuple[float, float]:
        """Seconds from spawning `sandex args` to its exit (status 0 required), and the
        CPU seconds it used (user and system)."""
        with tempfile.TemporaryFile() as errors:
            started = time.perf_counter()
            proc = subprocess.Popen(
                self.command(*args),
                cwd=self.scratch,
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=errors,
            )
            _, status, usage = os.wait4(proc.pid, 0)
            seconds = time.perf_counter() - started
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                errors.seek(0)
                said = errors.read().decode(errors="replace")[-2000:]
                raise SystemExit(
                    f"{self.label}: sandex {' '.join(args)} ended {proc.returncode}: {said}"
                )
        return seconds, usage.ru_utime + usage.ru_stime

    def help(self) -> tuple[float, float]:
        return self.wall("--help")

    def backtest(self) -> tuple[float, float]:
        return self.wall(*backtest_args(measured_tree()))

    def serve(self) -> tuple[float, float]:
        """Seconds from spawning `sandex serve` on a new database to its first answer,
        and the CPU seconds the server had used by then (/proc, in clock ticks)."""
        db = Path(tempfile.mkdtemp(dir=self.scratch)) / "empty.db"
        port = _free_port()
        started = time.perf_counter()
        server = subprocess.Popen(
            self.command("serve", "--db", str(db), "--port", str(port), "--log-level", "WARNING"),
            cwd=self.scratch,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            while not _answers(port):
                if server.poll() is not None:
                    raise SystemExit(f"{self.label}: serve ended: {server.stderr.read().decode()}")  # type: ignore[union-attr]
                if time.perf_counter() - started > FIRST_ANSWER_LIMIT:
                    raise SystemExit(
                        f"{self.label}: serve gave no answer in {FIRST_ANSWER_LIMIT} s"
                    )
                time.sleep(0.002)
            seconds = time.perf_counter() - started
            cpu = _cpu_seconds(server.pid)
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        self.last_db = db
        return seconds, cpu

    def verify(self) -> str:
        if self.last_db is None:
            return "no database"
        done = subprocess.run(
            self.command("verify", "--db", str(self.last_db)),
            cwd=self.scratch,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        said = (done.stdout.strip().splitlines() or [done.stderr.strip()])[-1]
        return "OK" if done.returncode == 0 else f"FAILED ({said})"


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a running process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    """Whether `GET /healthz` on the port gets an HTTP answer (any status)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            return s.recv(12).startswith(b"HTTP/1.1 ")
    except OSError:
        return False


def _stat(values: list[float]) -> str:
    return (
        f"{statistics.median(values):.3f} s [{min(values):.3f}–{max(values):.3f}]"
        f" (median of {len(values)})"
    )


def _ratios(values: dict[str, list[float]]) -> str:
    """The median and range of after/before, round by round."""
    ratios = [a / b for a, b in zip(values["after"], values["before"], strict=True)]
    return f"{statistics.median(ratios):.2f} [{min(ratios):.2f}–{max(ratios):.2f}]"


# what is printed, how it is measured, the goal of issue 20 in seconds
FIGURES: list[tuple[str, Callable[[Tree], tuple[float, float]], float]] = [
    ("sandex --help", Tree.help, 0.4),
    ("sandex backtest, 600 hourly bars, MA cross", Tree.backtest, 0.4),
    ("sandex serve, empty database, to its first answer", Tree.serve, 1.0),
]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5, help="processes of each figure and tree")
    p.add_argument(
        "--base-tree",
        type=Path,
        default=None,
        help="another source tree measured alternately with this one (default: none)",
    )
    args = p.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as folder:
        scratch = Path(folder)
        trees = []
        if args.base_tree is not None:
            trees.append(Tree("before", args.base_tree.resolve(), scratch, scratch / "pyc-base"))
        trees.append(Tree("after", measured_tree(), scratch, scratch / "pyc-head"))
        for tree in trees:  # bytecode cached, as after a first run of an installed sandex
            for _, fn, _ in FIGURES:
                fn(tree)
        for title, fn, goal in FIGURES:
            wall: dict[str, list[float]] = {t.label: [] for t in trees}
            cpu: dict[str, list[float]] = {t.label: [] for t in trees}
            for _ in range(args.runs):
                for tree in trees:
                    seconds, used = fn(tree)
                    wall[tree.label].append(seconds)
                    cpu[tree.label].append(used)
            met = "met" if statistics.median(wall["after"]) < goal else "not met"
            line = f"{title}: {_stat(wall['after'])}; CPU {_stat(cpu['after'])}; goal < {goal} s: {met}"
            if "before" in wall:
                line += (
                    f"; before ({args.base_tree}) {_stat(wall['before'])}; CPU"
                    f" {_stat(cpu['before'])}; after/before, paired: wall {_ratios(wall)},"
                    f" CPU {_ratios(cpu)}"
                )
            print(line, flush=True)
        for tree in trees:
            print(f"verify {tree.label} serve database: {tree.verify()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
