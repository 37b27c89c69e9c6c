"""The console's figures (issue 33) on a real `sandex serve`, the live one in Chromium.

    python bench/bench_console.py [--events 1000000] [--rounds 5] [--calls 40]
        [--commits 20] [--keep DB]

The default world's log is built with `--events` events quickly: sandbox deposits
appended through the SQLite store in bulk (10,000 a commit, bench_store.build_log, read
models rebuilt after); the server replays it at start-up. A second world, made through the API, holds
one page of deposits: the baseline of the same page on a small log, same server.

Each of `--rounds` rounds, in one process:
- the timeline's first page (`GET /console/timeline`, signed in as the operator), timed
  at the client on loopback (so the server's time plus a loopback round trip, an upper
  bound of it): `--calls` calls on each world, alternating, the world that goes first
  alternating by round; p50 of each and their ratio;
- a commit to its appearance on an open timeline in headless Chromium (the system's,
  driven by Playwright: the console's server-sent event stream and the live part's
  fetch): `--commits` deposits, each from just before its POST until the page's newest
  event is its own (polled every 5 ms in the page), each after a pause drawn in 0-0.3 s
  (seeded) so commits fall at every phase of the stream's 0.2 s look; p50, and the
  deposit POST's own round trip p50 as its baseline;
- the console's first load in a fresh browser context (empty cache): the bytes of every
  response (headers and body as sent) from opening `/console` through sign-in to the
  timeline, the stream excluded (it never ends).
Each figure is printed as the median over rounds with [min-max]. `sandex verify` checks
the default world's database at the end.
"""

from __future__ import annotations

import argparse
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, measured_tree  # noqa: E402

ROOT = measured_tree()

from bench.bench_store import build_log  # noqa: E402
from sandex.engine.tools.verify import verify  # noqa: E402
from tests.support.browser import chromium, launch  # noqa: E402
from tests.support.server_helpers import SANDEX, free_port  # noqa: E402

# bench_store.build_log's bootstrap client, the default world's operator
OPERATOR = ("b", "b")
SMALL_WORLD = {"clock": "manual", "settings": {"market_volatility": "0"}}


class Served:
    """`sandex serve` on `db`, its log in a file, waited for as long as its replay takes
    (a million events on a busy machine outlast the tests' start-up bound)."""

    def __init__(self, db: Path, log: Path, wait: float = 600) -> None:
        self.base = f"http://127.0.0.1:{free_port()}"
        self.log = log.open("ab")
        port = self.base.rsplit(":", 1)[1]
        flags = ["--port", port, "--no-rate-limits", "--clock", "manual"]
        self.proc = subprocess.Popen(
            [*SANDEX, "serve", "--db", str(db), *flags, "--log-level", "WARNING"],
            cwd=ROOT,
            stdout=self.log,
            stderr=self.log,
        )
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, log.read_text()[-2000:]
            try:
                httpx.get(f"{self.base}/v2/markets", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.2)
        self.stop()
        raise AssertionError("server did not start")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=60)
        self.log.close()


def signed_in(base: str, console: str, client_id: str, secret: str) -> httpx.Client:
    """An HTTP client holding a console session (the sign-in form and its token)."""
    client = httpx.Client(base_url=base, timeout=30)
    page = client.get(console + "/signin")
    token = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    form = {"csrf": token, "client_id": client_id, "client_secret": secret}
    answer = client.post(console + "/signin", data=form)
    assert answer.status_code == 303, answer.text
    return client


def bearer(base: str, prefix: str, client_id: str, secret: str) -> dict[str, str]:
    form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
    answer = httpx.post(f"{base}{prefix}/oauth2/token", data=form)
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['access_token']}"}


def _ms(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def timeline_round(
    big: httpx.Client, small: httpx.Client, small_console: str, calls: int, first: str
) -> tuple[float, float]:
    """p50 ms of the first page on the big log and on the small one, alternating."""

    def page(client: httpx.Client, path: str) -> None:
        answer = client.get(path)
        assert answer.status_code == 200 and 'data-testid="timeline-event"' in answer.text

    sides = {
        "big": lambda: page(big, "/console/timeline"),
        "small": lambda: page(small, small_console + "/timeline"),
    }
    order = ["big", "small"] if first == "big" else ["small", "big"]
    times: dict[str, list[float]] = {"big": [], "small": []}
    for _ in range(calls):
        for side in order:
            times[side].append(_ms(sides[side]))
    return statistics.median(times["big"]), statistics.median(times["small"])


NEWEST = "() => Number(document.querySelector('[data-testid=timeline-event]').dataset.position)"


def live_round(
    page: Any, deposit: Callable[[], None], commits: int, pace: random.Random
) -> tuple[float, float]:
    """p50 ms from a commit's POST to its event heading the open timeline, and p50 ms of
    the POST alone."""
    shown: list[float] = []
    posts: list[float] = []
    for _ in range(commits):
        time.sleep(pace.uniform(0, 0.3))
        head = page.evaluate(NEWEST)
        started = time.perf_counter()
        deposit()
        posts.append((time.perf_counter() - started) * 1000)
        try:
            page.wait_for_function(f"p => ({NEWEST})() > p", arg=head, polling=5, timeout=30_000)
        except Exception as exc:  # playwright's TimeoutError: said, and the run fails
            raise SystemExit(f"a commit not shown on the open timeline after 30 s: {exc}") from exc
        shown.append((time.perf_counter() - started) * 1000)
    return statistics.median(shown), statistics.median(posts)


def first_load(browser: Any, base: str) -> tuple[int, int, list[str]]:
    """Bytes transferred (response headers and bodies) opening the console in a fresh
    context through sign-in to the timeline, the number of responses, and their paths."""
    context = browser.new_context()
    sizes: list[tuple[str, int]] = []

    def finished(request: Any) -> None:
        got = request.sizes()
        sizes.append(
            (request.url.removeprefix(base), got["responseBodySize"] + got["responseHeadersSize"])
        )

    context.on("requestfinished", finished)
    page = context.new_page()
    page.goto(base + "/console")
    page.get_by_test_id("signin-client-id").fill(OPERATOR[0])
    page.get_by_test_id("signin-client-secret").fill(OPERATOR[1])
    page.get_by_test_id("signin-submit").click()
    page.wait_for_url("**/console/timeline")
    page.wait_for_load_state("load")
    context.close()
    return sum(s for _, s in sizes), len(sizes), [p for p, _ in sizes]


def _spread(values: list[float], fmt: str) -> str:
    return (
        f"{statistics.median(values):{fmt}} [{min(values):{fmt}}–{max(values):{fmt}}]"
        f" ({len(values)} rounds)"
    )


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=40, help="timeline pages per world per round")
    p.add_argument("--commits", type=int, default=20, help="live commits per round")
    p.add_argument("--keep", type=Path, default=None, help="build the log here and keep it")
    args = p.parse_args()
    executable = chromium()
    if executable is None:
        print("chromium not found on PATH (make browser installs it)", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        db = args.keep or Path(tmp) / "console.db"
        started = time.perf_counter()
        if db.exists():
            print(f"the log of {db} kept from an earlier run")
        else:
            build_log(db, args.events)
            print(
                f"built a log of {args.events:,} events (deposits through the store in bulk)"
                f" in {time.perf_counter() - started:.1f} s"
            )
        started = time.perf_counter()
        server = Served(db, Path(tmp) / "serve.log")
        print(f"sandex serve answered after {time.perf_counter() - started:.1f} s (its replay)")
        try:
            base = server.base
            headers = bearer(base, "", *OPERATOR)
            made = httpx.post(f"{base}/v2/sandbox/worlds", json=SMALL_WORLD, headers=headers)
            assert made.status_code == 200, made.text
            world = made.json()
            prefix = f"/w/{world['id']}"
            world_headers = bearer(base, prefix, world["client_id"], world["client_secret"])
            deposits = httpx.Client(base_url=base + prefix, headers=world_headers, timeout=30)

            def deposit() -> None:
                body = {"asset": "USD", "amount": "1"}
                answer = deposits.post("/v2/sandbox/profiles/default/deposit", json=body)
                assert answer.status_code == 200, answer.text

            for _ in range(50):
                deposit()
            big = signed_in(base, "/console", *OPERATOR)
            small_console = prefix + "/console"
            small = signed_in(base, small_console, world["client_id"], world["client_secret"])
            pages_big, pages_small, ratios, shown, posts, loads = [], [], [], [], [], []
            pace = random.Random(33)
            with sync_playwright() as playwright:
                browser = launch(playwright, executable)
                context = browser.new_context()
                page = context.new_page()
                page.goto(base + small_console + "/signin")
                page.get_by_test_id("signin-client-id").fill(world["client_id"])
                page.get_by_test_id("signin-client-secret").fill(world["client_secret"])
                page.get_by_test_id("signin-submit").click()
                page.wait_for_url("**/console/timeline")
                for r in range(args.rounds):
                    first = "big" if r % 2 == 0 else "small"
                    b, s = timeline_round(big, small, small_console, args.calls, first)
                    pages_big.append(b)
                    pages_small.append(s)
                    ratios.append(b / s)
                    seen, post = live_round(page, deposit, args.commits, pace)
                    shown.append(seen)
                    posts.append(post)
                    total, count, paths = first_load(browser, base)
                    loads.append(float(total))
                context.close()
                browser.close()
            print(
                f"timeline first page, {args.events:,} events, ms at the client p50"
                f" {_spread(pages_big, ',.2f')}"
            )
            print(
                f"timeline first page, a world of one page, ms p50 {_spread(pages_small, ',.2f')}"
            )
            print(
                f"timeline first page, {args.events:,} events over a world of one page:"
                f" ratio {_spread(ratios, '.2f')}"
            )
            print(f"commit to its event on an open timeline, ms p50 {_spread(shown, ',.0f')}")
            print(f"the deposit's POST alone, ms p50 {_spread(posts, ',.1f')}")
            print(
                f"console first load, bytes transferred {_spread(loads, ',.0f')}"
                f" in {count} responses: {' '.join(paths)}"
            )
            big.close()
            small.close()
            deposits.close()
        finally:
            server.stop()
        problems = verify(str(db))
        print("sandex verify:", "OK" if not problems else problems[:3])
        return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
