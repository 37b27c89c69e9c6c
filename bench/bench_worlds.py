"""Worlds (issue 30): what a world costs a server, through HTTP against `sandex serve` on
loopback (wall clock, FULL durability, rate limits off), each figure on a server of its
own started here.

    python bench/bench_worlds.py [--rounds 5] [--creates 20] [--unloads 10]
        [--alive 1000] [--seconds 3] [--warmup 1] [--connections 32]

- **create**: `POST /v2/sandbox/worlds` with no body, `--creates` a round (the worlds of
  a round deleted after it, outside the timing); per round the p50 and p99.
- **first request**: a funded world unloaded by the idle sweep (`world_idle_unload_seconds`
  set to 1 s on this server; `GET /v2/sandbox/worlds/{id}` says `loaded: false`), then
  its balances read with a token taken before: the request that loads it again. Per
  round the p50 over `--unloads` worlds; beside it the same request once it is loaded.
- **world / default**: HTTP orders/s (bench_http_orders's ten bodies, wrk when installed,
  closed loop) in a non-default world over the same in the default world of the same
  server, a round each way, the side that goes first alternating: per round one ratio.
- **8 worlds / one**: the same bodies spread over 8 non-default worlds at once (each
  request to the next world, over the same connections) over one world alone, alternating.
- **alive**: `--alive` worlds made one after another (fewer if `--alive-seconds` is
  spent first: the line says how many; their read-back is bounded the same way), each with a customer (its
  bootstrap client), a deposit and a resting order, on a server whose `max_loaded_worlds`
  is raised above `--alive`: every world stays loaded (engine, threads, caches), which is
  what the figure is about (an unloaded world holds no memory). The server's RSS from
  /proc before the first and after the last, over `--alive`; then every world answers a
  read of its order (counted). Per round the growth of one slice of the worlds, so the
  rounds are the slices (`--rounds` of them), and the whole growth beside.

Each figure: the median over the rounds with min–max. Ratios are paired: each round
measures both sides back to back. `sandex verify` checks a world and the default
database of the orders' server at the end.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, percentiles  # noqa: E402
from bench.bench_http_orders import BODIES, _load  # noqa: E402
from bench.bench_withdrawals import (  # noqa: E402
    ROOT,
    _cli_verify,
    _free_port,
    _request,
    _start,
    _stop,
    run_wrk,
)

FUNDS = (("USD", "1000000000"), ("BTC", "100000"), ("ETH", "1000000"))
RESTING = {"side": "BUY", "market": "BTCUSD", "type": "LIMIT", "price": "20000", "base_amount": "0.0001"}  # fmt: skip
# A keep-alive connection idle this long is opened again rather than reused (the server
# closes idle ones).
IDLE_SECONDS = 0.5
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def spread(values: list[float]) -> str:
    """median [min–max], as bench/run.py reads it."""
    return f"{statistics.median(values):.2f} [{min(values):.2f}–{max(values):.2f}]"


class Server:
    """A `sandex serve` of this run, on a fresh database, with `config` as its settings."""

    def __init__(self, folder: Path, name: str, config: dict[str, Any]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.db = folder / f"{name}.db"
        self.port = _free_port()
        self.root = f"http://127.0.0.1:{self.port}"
        settings = folder / f"{name}.yaml"
        settings.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in config.items()))
        cmd = [
            sys.executable, "-m", "sandex.api_adapter.cli", "serve", "--db", str(self.db),
            "--port", str(self.port), "--clock", "wall", "--durability", "FULL",
            "--log-level", "WARNING", "--log-format", "json", "--config", str(settings),
        ]  # fmt: skip
        self.proc = _start(cmd, f"{self.root}/healthz")
        self.admin = self.token("", "sandex", "sandex-secret")
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        self._used = 0.0

    def token(self, prefix: str, client_id: str, secret: str) -> dict[str, str]:
        form = f"grant_type=client_credentials&client_id={client_id}&client_secret={secret}"
        got = _request(f"{self.root}{prefix}/oauth2/token", form.encode(), FORM)
        return {"Authorization": f"Bearer {got['access_token']}"}

    def call(self, method: str, path: str, auth: dict[str, str], body: Any = None) -> tuple[int, Any]:  # fmt: skip
        """One request on this run's keep-alive connection: (status, JSON answer)."""
        data = None if body is None else json.dumps(body).encode()
        heads = {**auth, **({"Content-Type": "application/json"} if data is not None else {})}
        if time.monotonic() - self._used > IDLE_SECONDS:
            self.conn.close()  # the server may have closed it meanwhile: a new one
        self.conn.request(method, path, body=data, headers=heads)
        answer = self.conn.getresponse()
        raw = answer.read()
        self._used = time.monotonic()
        return answer.status, json.loads(raw) if raw else None

    def rss_mib(self) -> float:
        return self._status("VmRSS") / 1024

    def threads(self) -> int:
        return self._status("Threads")

    def _status(self, key: str) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1])
        raise KeyError(key)

    def stop(self) -> None:
        self.conn.close()
        _stop(self.proc)


@contextmanager
def serving(folder: Path, name: str, **config: Any) -> Iterator[Server]:
    server = Server(folder, name, {"rate_limits_enabled": False, **config})
    try:
        yield server
    finally:
        server.stop()


class Sandbox:
    """One world of a server (or its default world): its path prefix, token and profile."""

    def __init__(self, server: Server, prefix: str, auth: dict[str, str], profile: str) -> None:
        self.server, self.prefix, self.auth, self.profile = server, prefix, auth, profile

    def url(self, path: str) -> str:
        return f"{self.prefix}/v2{path}"

    def bodies(self) -> list[dict[str, Any]]:
        """bench_http_orders's bodies, the takers priced for this world now."""
        tickers = {}
        for market in {b["market"] for b in BODIES}:
            status, tickers[market] = self.server.call("GET", self.url(f"/markets/{market}/ticker"), self.auth)  # fmt: skip
            assert status == 200, status
        return priced(BODIES, tickers)

    def fund(self) -> None:
        for asset, amount in FUNDS:
            status, _ = self.server.call(
                "POST",
                self.url(f"/sandbox/profiles/{self.profile}/deposit"),
                self.auth,
                {"asset": asset, "amount": amount},
            )
            assert status == 200, status


def priced(bodies: list[dict[str, Any]], tickers: dict[str, Any]) -> list[dict[str, Any]]:
    """`bodies` with each IOC limit order priced 5% beyond its market's best price on the
    other side (`tickers`: each market's ticker): it takes, and stays inside the taker
    band around the mid (15%), wherever this world's prices have gone. A fixed price
    fell outside the band as the wall clock moved the prices: a tenth of the answers
    were 400s and the phase stopped."""
    found = []
    for body in bodies:
        if body.get("time_in_force") == "IOC":
            ticker = tickers[body["market"]]
            if body["side"] == "BUY":
                price = Decimal(ticker["best_ask"]["price"]) * Decimal("1.05")
            else:
                price = Decimal(ticker["best_bid"]["price"]) * Decimal("0.95")
            body = {**body, "price": str(price.to_integral_value())}
        found.append(body)
    return found


def new_world(server: Server, body: dict[str, Any] | None = None) -> tuple[Sandbox, str]:
    """A new world, its bootstrap client's token taken: (the world, its id)."""
    status, made = server.call("POST", "/v2/sandbox/worlds", server.admin, body or {})
    assert status == 200, (status, made)
    prefix = f"/w/{made['id']}"
    auth = server.token(prefix, made["client_id"], made["client_secret"])
    return Sandbox(server, prefix, auth, made["profile_id"]), made["id"]


def default_world(server: Server) -> Sandbox:
    return Sandbox(server, "", server.admin, "default")


def timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


# -- the lines bench/run.py reads ------------------------------------------------------


def create_line(p50s: list[float], p99s: list[float]) -> str:
    return f"create an empty world, ms: p50 {spread(p50s)}; p99 {spread(p99s)}"


def first_line(firsts: list[float], loadeds: list[float]) -> str:
    return (
        f"first request to an unloaded world, ms: p50 {spread(firsts)};"
        f" the same request to it loaded: p50 {spread(loadeds)}"
    )


def ratio_line(
    name: str, ratios: list[float], b: tuple[str, list[float]], a: tuple[str, list[float]]
) -> str:
    return (
        f"{name}: ratio {spread(ratios)}; {b[0]} {spread(b[1])} req/s; {a[0]} {spread(a[1])} req/s"
    )


def alive_line(
    count: int,
    per_slice: list[float],
    whole: float,
    rss: tuple[float, float],
    threads: tuple[int, int],
) -> str:
    return (
        f"{count} worlds alive, each with a customer and a resting order:"
        f" RSS per world, MiB: {spread(per_slice)} (slices of {count // max(1, len(per_slice))});"
        f" whole: {whole:.3f} MiB a world ({rss[0]:.0f} to {rss[1]:.0f} MiB);"
        f" threads {threads[0]} to {threads[1]}"
    )


# -- create ------------------------------------------------------------------------------


def creates(folder: Path, rounds: int, per_round: int) -> None:
    with serving(folder, "create") as server:
        made: list[str] = []

        def create() -> None:
            status, answer = server.call("POST", "/v2/sandbox/worlds", server.admin, {})
            assert status == 200, (status, answer)
            made.append(answer["id"])

        create()  # warm-up: the routes' first use, the worlds folder
        p50s, p99s = [], []
        for _ in range(rounds):
            times = [timed(create) for _ in range(per_round)]
            p = percentiles(times)
            p50s.append(p["p50"])
            p99s.append(p["p99"])
            for world_id in made:
                status, _ = server.call("DELETE", f"/v2/sandbox/worlds/{world_id}", server.admin)
                assert status == 200, status
            made.clear()
    print(create_line(p50s, p99s))


# -- first request to an unloaded world --------------------------------------------------


def first_requests(folder: Path, rounds: int, per_round: int) -> None:
    with serving(folder, "unload", world_idle_unload_seconds=1) as server:
        worlds = []
        for _ in range(per_round):
            world, world_id = new_world(server)
            world.fund()
            status, _ = server.call("POST", world.url(f"/profiles/{world.profile}/orders"), world.auth, RESTING)  # fmt: skip
            assert status == 200, status
            worlds.append((world, world_id))

        def read(world: Sandbox) -> None:
            status, _ = server.call("GET", world.url(f"/profiles/{world.profile}/balances"), world.auth)  # fmt: skip
            assert status == 200, status

        firsts, loadeds = [], []
        for _ in range(rounds):
            for _, world_id in worlds:  # each unloaded by the idle sweep
                deadline = time.monotonic() + 30
                while True:
                    status, info = server.call("GET", f"/v2/sandbox/worlds/{world_id}", server.admin)  # fmt: skip
                    assert status == 200, status
                    if not info["loaded"]:
                        break
                    assert time.monotonic() < deadline, f"{world_id} was not unloaded"
                    time.sleep(0.2)
            first, loaded = [], []
            for world, _ in worlds:
                first.append(timed(lambda world=world: read(world)))
                loaded.append(timed(lambda world=world: read(world)))
            firsts.append(statistics.median(first))
            loadeds.append(statistics.median(loaded))
    print(first_line(firsts, loadeds))


# -- orders/s: a world over the default world; 8 worlds over one ------------------------


def _lua(targets: list[Sandbox]) -> str:
    """wrk's script: the order bodies in turn, each request to the next of `targets`
    (each target's bodies priced for it)."""
    quoted = ",\n".join(
        "{" + ", ".join(f"[[{json.dumps(b)}]]" for b in t.bodies()) + "}" for t in targets
    )
    paths = ", ".join(f'"{t.url(f"/profiles/{t.profile}/orders")}"' for t in targets)
    tokens = ", ".join(f'"{t.auth["Authorization"]}"' for t in targets)
    return f"""
local bodies = {{{quoted}}}
local paths = {{{paths}}}
local tokens = {{{tokens}}}
local i, j = 0, 0
request = function()
  i = i % #bodies[1] + 1
  j = j % #paths + 1
  return wrk.format("POST", paths[j], {{["Content-Type"] = "application/json",
    ["Authorization"] = tokens[j]}}, bodies[j][i])
end
"""


def orders_per_second(targets: list[Sandbox], seconds: int, warmup: int, conns: int) -> float:
    server = targets[0].server
    if len(targets) == 1 or shutil.which("wrk"):
        if shutil.which("wrk"):
            lua = _lua(targets)
            run_wrk(server.root + "/", lua, warmup, conns)
            got = run_wrk(server.root + "/", lua, seconds, conns)
        else:
            t = targets[0]
            url = server.root + t.url(f"/profiles/{t.profile}/orders")
            bodies = t.bodies()
            _load(url, bodies, t.auth, warmup, conns)
            got = _load(url, bodies, t.auth, seconds, conns)
        assert not got["non_2xx"], got
        return float(got["rps"])
    raise SystemExit("8 worlds at once needs wrk (apt-get install wrk)")


def paired(
    name: str,
    a: tuple[str, Callable[[], float]],
    b: tuple[str, Callable[[], float]],
    rounds: int,
) -> None:
    """Rounds of a and b back to back, the one that goes first alternating: b/a per round."""
    got: dict[str, list[float]] = {a[0]: [], b[0]: []}
    ratios = []
    for i in range(rounds):
        order = (a, b) if i % 2 == 0 else (b, a)
        this = {label: run() for label, run in order}
        for label, value in this.items():
            got[label].append(value)
        ratios.append(this[b[0]] / this[a[0]])
    print(ratio_line(name, ratios, (b[0], got[b[0]]), (a[0], got[a[0]])))


def throughputs(folder: Path, rounds: int, seconds: int, warmup: int, conns: int) -> None:
    with serving(folder, "orders") as server:
        default = default_world(server)
        default.fund()
        worlds = []
        for _ in range(8):
            world, _ = new_world(server)
            world.fund()
            worlds.append(world)
        print(f"orders: {'wrk -t2' if shutil.which('wrk') else 'python asyncio'} -c{conns},"
              f" {seconds} s after {warmup} s warm-up")  # fmt: skip
        paired(
            "HTTP orders/s, a non-default world over the default world",
            ("default world", lambda: orders_per_second([default], seconds, warmup, conns)),
            ("a world", lambda: orders_per_second(worlds[:1], seconds, warmup, conns)),
            rounds,
        )
        paired(
            "HTTP orders/s, 8 worlds at once over one world alone",
            ("one world", lambda: orders_per_second(worlds[:1], seconds, warmup, conns)),
            ("8 worlds", lambda: orders_per_second(worlds, seconds, warmup, conns)),
            rounds,
        )
        said, _ = _cli_verify(server.db)
    print(f"  sandex verify (the default database): {said}")


# -- 1,000 worlds alive ------------------------------------------------------------------


def alive(folder: Path, count: int, slices: int, budget: float) -> None:
    with serving(folder, "alive", max_loaded_worlds=count + 10, max_worlds=count + 10) as server:
        warm, _ = new_world(server)  # the worlds' code imported and used once
        warm.fund()
        server.call("POST", warm.url(f"/profiles/{warm.profile}/orders"), warm.auth, RESTING)
        time.sleep(1)
        rss = [server.rss_mib()]
        threads = server.threads()
        started = time.perf_counter()
        worlds = []
        per_slice_count = max(1, count // slices)
        for n in range(1, count + 1):
            if time.perf_counter() - started > budget and n > per_slice_count:
                print(f"alive: stopped making worlds after {n - 1}: {budget:.0f} s spent")
                break
            world, world_id = new_world(server)
            status, _ = server.call(
                "POST",
                world.url(f"/sandbox/profiles/{world.profile}/deposit"),
                world.auth,
                {"asset": "USD", "amount": "1000"},
            )
            assert status == 200, status
            status, order = server.call("POST", world.url(f"/profiles/{world.profile}/orders"), world.auth, RESTING)  # fmt: skip
            assert status == 200, (status, order)
            worlds.append((world, order["id"]))
            if n % per_slice_count == 0:
                rss.append(server.rss_mib())
        took = time.perf_counter() - started
        made = len(worlds)
        time.sleep(1)
        rss.append(server.rss_mib())
        answered = 0
        read_until = time.perf_counter() + budget  # every world asked, unless that is spent
        for world, order_id in worlds:
            if time.perf_counter() > read_until:
                break
            status, order = server.call("GET", world.url(f"/profiles/{world.profile}/orders/{order_id}"), world.auth)  # fmt: skip
            answered += status == 200 and order["status"] == "OPEN"
        per_slice = [
            (after - before) / per_slice_count
            for before, after in zip(rss, rss[1:-1], strict=False)
        ]
        whole = (rss[-1] - rss[0]) / made
        print(
            alive_line(made, per_slice, whole, (rss[0], rss[-1]), (threads, server.threads()))
            + f"; answered {answered} of {made}; made in {took:.0f} s"
        )
        said, _ = _cli_verify_world(server.db, worlds[-1][0].prefix.removeprefix("/w/"))
    print(f"  sandex verify (a world): {said}")


def _cli_verify_world(db: Path, world_id: str) -> tuple[str, float]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "sandex.api_adapter.cli", "verify", "--db", str(db), "--world", world_id],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    ok = done.returncode == 0 and lines and lines[-1].startswith("OK")
    return ("OK" if ok else f"exit {done.returncode}: {done.stdout[-300:]}"), time.perf_counter() - started  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--creates", type=int, default=20)
    p.add_argument("--unloads", type=int, default=10)
    p.add_argument("--alive", type=int, default=1000)
    p.add_argument(
        "--alive-seconds",
        type=float,
        default=300,
        help="at most this long making the alive worlds, and as long reading them back",
    )
    p.add_argument("--seconds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--only", nargs="*", default=["create", "first", "orders", "alive"])
    args = p.parse_args()
    print(f"machine: {machine()}; load average at the start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="sandex-bench-worlds-") as tmp:
        folder = Path(tmp)
        os.environ["SANDEX_STATE_DIR"] = str(folder / "state")
        phases: dict[str, Callable[[], None]] = {
            "create": lambda: creates(folder, args.rounds, args.creates),
            "first": lambda: first_requests(folder, args.rounds, args.unloads),
            "orders": lambda: throughputs(
                folder, args.rounds, args.seconds, args.warmup, args.connections
            ),
            "alive": lambda: alive(folder, args.alive, args.rounds, args.alive_seconds),
        }
        failed = []
        for name, phase in phases.items():
            if name not in args.only:
                continue
            try:  # a phase that fails leaves the others' figures printed
                phase()
            except Exception as exc:  # noqa: BLE001 - said, and the exit code says it
                failed.append(name)
                print(f"phase {name} failed: {exc!r}", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
