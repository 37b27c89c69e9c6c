"""Crypto withdrawals created per second through HTTP, against a trivial FastAPI endpoint
measured in the same run, on loopback; then their latencies at a constant arrival rate.

Both servers run as separate processes (uvicorn, one worker). Throughput is wrk's
closed-loop maximum (32 connections each waiting for its answer; a small asyncio
keep-alive client in this file when wrk is missing). Latencies come from an open-loop
run instead (bench._common.open_loop: request i is due at start + i/rate, its latency
counts from then, no coordinated omission), offered a fixed fraction of the withdrawals'
closed-loop throughput measured just before, and the same rate to the trivial endpoint.
Each withdrawal is a real one: USDC on SOLANA from a funded profile, held at once and
confirmed one second later by the scheduler, so the writer also confirms the earlier
withdrawals while it takes new ones. `sandex verify` checks the database at the end.

    python bench/bench_withdrawals.py [--seconds 10] [--connections 32] [--durability FULL]
        [--rate-fraction 0.5 | --rate 400]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import (  # noqa: E402
    BENCH_CODE,
    cpu_line,
    machine,
    measured_tree,
    open_loop,
    open_loop_line,
    percentiles,
    server_cpu,
)

ROOT = measured_tree()  # this checkout, or $SANDEX_BENCH_TREE's

WITHDRAWAL = {
    "profile_id": "default",
    "asset": "USDC",
    "crypto_network": "SOLANA",
    "destination_address": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
    "amount": "1",
}
TRIVIAL = {"asset": "USDC", "amount": "1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(url: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> Any:
    req = urllib.request.Request(url, data=data, headers=headers or {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"null")


def _start(cmd: list[str], ready_url: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd[0]} exited: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        try:
            _request(ready_url)
            return proc
        except OSError:
            time.sleep(0.1)
    _stop(proc)
    raise RuntimeError(f"server did not come up: {' '.join(cmd)}")


def _cli_verify(db: Path) -> tuple[str, float]:
    """`sandex verify` through the command line, not engine internals, so that the same
    script measures any revision (bench/ab.py): "OK" or the first problem, and seconds."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "sandex.api_adapter.cli", "verify", "--db", str(db)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    if done.returncode == 0 and lines and lines[-1].startswith("OK"):
        return "OK", took
    first = next((line for line in lines if line.startswith("FAILED")), None)
    return first or f"exit {done.returncode}: {done.stderr.strip()[-300:]}", took


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- load generators ------------------------------------------------------------------------

_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def _wrk(
    url: str, body: dict[str, Any], headers: dict[str, str], seconds: int, conns: int
) -> dict[str, float]:
    lua = ["wrk.method = 'POST'", f"wrk.body = [[{json.dumps(body)}]]"]
    lua += [
        f"wrk.headers['{k}'] = '{v}'"
        for k, v in {"Content-Type": "application/json", **headers}.items()
    ]
    return run_wrk(url, "\n".join(lua) + "\n", seconds, conns)


def run_wrk(url: str, lua: str, seconds: int, conns: int) -> dict[str, float]:
    """wrk with a Lua script on loopback: throughput, p50/p99 and the refusals counted."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(lua)
        script = f.name
    try:
        out = subprocess.run(
            ["wrk", "-t2", f"-c{conns}", f"-d{seconds}s", "--latency", "-s", script, url],
            capture_output=True,
            text=True,
            check=True,
            timeout=seconds + 60,
        ).stdout
    finally:
        os.unlink(script)

    def latency(q: str) -> float:
        m = re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        assert m, out
        return float(m.group(1)) * _UNITS[m.group(2)]

    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: (.*)", out)
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        "requests": float(re.search(r"(\d+) requests in", out).group(1)),  # type: ignore[union-attr]
        "p50": latency("50"),
        "p99": latency("99"),
        "non_2xx": float(errors.group(1)) if errors else 0.0,
        "socket_errors": socket_errors.group(1) if socket_errors else "",  # type: ignore[dict-item]
    }


async def _client(
    host: str, port: int, raw: bytes, until: float, lat: list[float], bad: list[int]
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.perf_counter() < until:
            start = time.perf_counter()
            writer.write(raw)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
            await reader.readexactly(length)
            lat.append((time.perf_counter() - start) * 1000)
            if not head.startswith(b"HTTP/1.1 2"):
                bad.append(1)
    finally:
        writer.close()


def _python_load(
    url: str, body: dict[str, Any], headers: dict[str, str], seconds: int, conns: int
) -> dict[str, float]:
    """Fallback when wrk is missing: keep-alive HTTP/1.1 clients on one event loop."""
    m = re.match(r"http://([^:/]+):(\d+)(/.*)", url)
    assert m
    host, port, path = m.group(1), int(m.group(2)), m.group(3)
    payload = json.dumps(body).encode()
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", "Content-Type: application/json"]
    lines += [f"{k}: {v}" for k, v in headers.items()] + [f"Content-Length: {len(payload)}"]
    raw = ("\r\n".join(lines) + "\r\n\r\n").encode() + payload
    lat: list[float] = []
    bad: list[int] = []

    async def main() -> float:
        start = time.perf_counter()
        until = start + seconds
        await asyncio.gather(*(_client(host, port, raw, until, lat, bad) for _ in range(conns)))
        return time.perf_counter() - start

    elapsed = asyncio.run(main())
    p = percentiles(lat)
    return {
        "rps": len(lat) / elapsed,
        "requests": float(len(lat)),
        "p50": p["p50"],
        "p99": p["p99"],
        "non_2xx": float(len(bad)),
        "socket_errors": "",
    }  # type: ignore[dict-item]


# -- the two runs ----------------------------------------------------------------------------


def add_open_loop_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--rate-fraction",
        type=float,
        default=0.5,
        help="open-loop rate offered, as a fraction of the route's closed-loop req/s",
    )
    p.add_argument("--rate", type=float, default=None, help="a fixed open-loop rate instead")
    p.add_argument(
        "--open-seconds", type=float, default=None, help="open-loop seconds (default --seconds)"
    )


def open_loop_header(rate: float, args: argparse.Namespace, route: str, r: dict[str, Any]) -> str:
    how = "fixed" if args.rate else f"{args.rate_fraction:.0%} of {route} closed-loop req/s"
    return (
        f"open loop (latency from each request's due time): {rate:,.0f} req/s offered ({how}),"
        f" the same to the trivial endpoint; {args.open_seconds or args.seconds:g} s,"
        f" {args.connections} connections; {r['pinned']}"
    )


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seconds", type=int, default=10, help="measured seconds per server")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--durability", choices=["FULL", "NORMAL"], default="FULL")
    p.add_argument("--load", choices=["auto", "wrk", "python"], default="auto")
    p.add_argument("--no-verify", action="store_true", help="skip `sandex verify` of the database")
    add_open_loop_args(p)
    args = p.parse_args()
    use_wrk = args.load == "wrk" or (args.load == "auto" and shutil.which("wrk") is not None)
    load = _wrk if use_wrk else _python_load
    py = sys.executable
    print(f"machine: {machine()}")
    print(
        f"load: {'wrk -t2' if use_wrk else 'python asyncio'} -c{args.connections}, "
        f"{args.seconds} s measured after {args.warmup} s warm-up, loopback, one uvicorn worker each"
    )

    def baseline(rate: float | None = None) -> tuple[dict[str, float], dict[str, Any] | None]:
        port = _free_port()
        cmd = [py, "-m", "uvicorn", "bench._baseline:app", "--app-dir", str(BENCH_CODE)]
        cmd += ["--port", str(port)]
        base = _start(
            [*cmd, "--log-level", "warning", "--no-access-log"],
            f"http://127.0.0.1:{port}/openapi.json",
        )
        try:
            url = f"http://127.0.0.1:{port}/v2/trivial"
            load(url, TRIVIAL, {}, args.warmup, args.connections)
            cpu_before = server_cpu(base.pid)
            closed = load(url, TRIVIAL, {}, args.seconds, args.connections)
            closed["cpu"] = cpu_line(  # type: ignore[assignment]
                "trivial request", cpu_before, server_cpu(base.pid), closed["requests"]
            )
            body = [json.dumps(TRIVIAL).encode()]
            opened = None
            if rate:
                opened = open_loop(url, body, {}, rate, open_seconds, args.connections, base.pid)
            return closed, opened
        finally:
            _stop(base)

    # The baseline runs before and after, so that a machine busy with something else
    # during one of them shows as a gap between the two instead of a silently wrong ratio.
    open_seconds = args.open_seconds or args.seconds
    trivial_before, _ = baseline()

    tmp = Path(tempfile.mkdtemp(prefix="sandex-bench-"))
    db = tmp / "bench.db"
    port = _free_port()
    serve = [
        py, "-m", "sandex.api_adapter.cli", "serve", "--db", str(db), "--port", str(port),
        "--clock", "wall", "--durability", args.durability, "--log-level", "WARNING", "--log-format", "json",
        "--no-rate-limits",
    ]  # fmt: skip
    server = _start(serve, f"http://127.0.0.1:{port}/v2/sandbox/clock")
    root = f"http://127.0.0.1:{port}"
    try:
        form = b"grant_type=client_credentials&client_id=sandex&client_secret=sandex-secret"
        token = _request(
            f"{root}/oauth2/token", form, {"Content-Type": "application/x-www-form-urlencoded"}
        )
        auth = {"Authorization": f"Bearer {token['access_token']}"}
        _request(
            f"{root}/v2/sandbox/profiles/default/deposit",
            json.dumps({"asset": "USDC", "amount": "1000000000"}).encode(),
            {"Content-Type": "application/json", **auth},
        )
        url = f"{root}/v2/transfer/crypto-withdrawals"
        load(url, WITHDRAWAL, auth, args.warmup, args.connections)
        cpu_before = server_cpu(server.pid)
        sandex = load(url, WITHDRAWAL, auth, args.seconds, args.connections)
        # each withdrawal's confirmation comes a second later: those of the warm-up are
        # inside the window, those of its last second are not
        cpu = cpu_line("withdrawal", cpu_before, server_cpu(server.pid), sandex["requests"])
        # Only answered withdrawals count: a refusal (429, 403) is cheaper than the work.
        ok_rps = sandex["rps"] * (1 - sandex["non_2xx"] / max(sandex["requests"], 1))
        rate = args.rate or args.rate_fraction * ok_rps
        body = [json.dumps(WITHDRAWAL).encode()]
        sandex_open = open_loop(url, body, auth, rate, open_seconds, args.connections, server.pid)
        time.sleep(1.5)  # let the last withdrawals confirm
    finally:
        _stop(server)

    trivial_after, trivial_open = baseline(rate)
    trivial_rps = (trivial_before["rps"] + trivial_after["rps"]) / 2

    conn = sqlite3.connect(db)
    statuses = dict(
        conn.execute(
            "SELECT status, count(*) FROM transfers WHERE type = 'CRYPTO_WITHDRAWAL' GROUP BY status"
        ).fetchall()
    )
    events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    conn.close()

    def line(name: str, r: dict[str, float]) -> str:
        extra = f", {r['non_2xx']:.0f} non-2xx" if r["non_2xx"] else ""
        extra += f", socket errors: {r['socket_errors']}" if r["socket_errors"] else ""
        return f"{name:<34} {r['rps']:>9,.0f} req/s{extra}"

    print("closed loop (throughput):")
    print(line("trivial FastAPI endpoint, before", trivial_before))
    print(line("trivial FastAPI endpoint, after", trivial_after))
    print(line(f"POST crypto-withdrawals ({args.durability})", sandex))
    print(
        f"ratio withdrawals / trivial (mean of before and after), 2xx only: {ok_rps / trivial_rps:.2f}"
    )
    print(str(trivial_before["cpu"]).strip(), "(before)")
    print(str(trivial_after["cpu"]).strip(), "(after)")
    print(cpu.strip())
    print(open_loop_header(rate, args, "POST crypto-withdrawals' 2xx", sandex_open))
    assert trivial_open is not None
    print(open_loop_line("trivial FastAPI endpoint", trivial_open))
    print(open_loop_line(f"POST crypto-withdrawals ({args.durability})", sandex_open))
    print(f"withdrawals in the log by status: {statuses}; {events:,} events")
    if not args.no_verify:
        said, took = _cli_verify(db)
        print(f"sandex verify: {said} ({took:.1f} s)")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
