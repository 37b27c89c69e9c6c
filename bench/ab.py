"""Paired A/B of two revisions on `make bench`'s figures, so that a refactor can be shown
not to make any figure worse beyond the machine's noise.

    python bench/ab.py --base REV [--head REV] [--rounds N] [--only NAME ...] [--quick]
                       [--out FILE] [--keep]

Both revisions are exported (`git archive`) to a temporary folder and run with this
interpreter, PYTHONPATH and the working directory set to their tree. For each benchmark
of bench/run.py's table (its arguments and figure regexes), N rounds each run base then
head, every run a separate process, so that both sides of a pair see the same moment of a
shared, noisy machine; pair i is round i.

Which code measures: a benchmark script whose imports of the engine are only the public
`from sandex.engine import Engine, Settings` (the HTTP ones drive `python -m sandex.api_adapter.cli`)
is the head's copy for both sides (one copy of head's bench/, pointed at each tree with
SANDEX_BENCH_TREE): the same benchmark code on both sides. A script that imports engine
internals cannot import a revision of another module layout, so each tree runs its own
bench/ script there: the figure compares the two revisions' scripts as well as their
engines. The table says which way each figure was measured.

Per figure: base and head median [min–max], the median of the paired ratios head/base
with their min–max, and **worse** when every pair agrees it got worse (a higher-is-better
figure whose largest ratio is below 1, or a lower-is-better one — latency, seconds,
bytes — whose smallest is above 1). Reference figures (the trivial FastAPI endpoint, raw
SQLite, the plain book, backtesting.py) do not run sandex code: they show the noise.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import TREE_VARIABLE, machine  # noqa: E402
from bench.run import BENCHES, Bench  # noqa: E402

SIDES = ("base", "head")
# what the engine may be imported through for one copy of a script to measure any revision
PUBLIC_ENGINE_NAMES = {"Engine", "Settings"}
# figures that measure no sandex code (the noise shows in them) or are counts, not speed
REFERENCE = re.compile(r"^(raw|raw_min|raw_max|scan|plain|ma_theirs|trivial_\w+|trivial\.[\w.]+)$")
COUNT = re.compile(
    r"^(replay_n|matching_n|tail|.*\.offered|alive|answered|threads_before|differing)$"
)
# lower is better: latencies, seconds, milliseconds, bytes, MB, MiB, KiB, µs, the
# wall-time ratio to backtesting.py, calls per order, threads, shares of a suite's time
LOWER = re.compile(
    r"(\.(p50|p99|p99\.9|max)$|_s$|^startup|_mb$|^per_order$|^ma_ours$|^ma_ratio$|_kib$"
    r"|_us(_min|_max)?$|calls$|_ms(_min|_max)?$|_mib(_min|_max)?$|^threads_after$"
    r"|_s_(min|max)$|_pct(_min|_max)?$)"
)


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def export(rev: str, into: Path) -> None:
    """The revision's files, without a worktree to clean up after."""
    into.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", rev], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"git archive {rev} failed")


def internal_imports(script: Path, seen: set[Path] | None = None) -> list[str]:
    """The engine or adapter imports of `script` (and of the bench modules it imports)
    that are not the public `from sandex.engine import Engine, Settings`."""
    seen = set() if seen is None else seen
    if script in seen or not script.exists():
        return []
    seen.add(script)
    found: list[str] = []
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = {a.name for a in node.names}
            top = node.module.split(".")[0]
            inner = _inner(node.module)
            if inner == "engine" and names <= PUBLIC_ENGINE_NAMES:
                continue
            if inner is not None:
                found.append(f"{inner} ({', '.join(sorted(names))})")
            elif top == "bench":
                module = script.parents[1].joinpath(*node.module.split(".")).with_suffix(".py")
                found += internal_imports(module, seen)
        elif isinstance(node, ast.Import):
            found += [inner for a in node.names if (inner := _inner(a.name)) is not None]
    return found


def _inner(module: str) -> str | None:
    """`module` without its `sandex.` when it is of the engine or the adapter, else None."""
    head, _, rest = module.partition(".")
    if head == "sandex" and rest.split(".")[0] in ("engine", "api_adapter"):
        return rest
    return None


@dataclass
class Side:
    tree: Path
    script: Path
    env: dict[str, str]
    runs: list[dict[str, float] | None] = field(default_factory=list)  # None: failed
    seconds: float = 0.0


@dataclass
class Plan:
    name: str
    bench: Bench
    shared: bool
    why: str
    sides: dict[str, Side]


def plan(name: str, b: Bench, trees: dict[str, Path], code: Path) -> Plan | None:
    head_script = code / "bench" / b.script
    if not head_script.exists():
        return None
    internal = internal_imports(head_script)
    sides: dict[str, Side] = {}
    for side, tree in trees.items():
        env = {**os.environ, "PYTHONPATH": str(tree)}
        if internal:
            script = tree / "bench" / b.script
            env.pop(TREE_VARIABLE, None)
        else:
            script, env[TREE_VARIABLE] = head_script, str(tree)
        sides[side] = Side(tree, script, env)
    if internal:
        why = f"each tree's own bench/{b.script} (imports {internal[0]})"
    else:
        why = f"head's bench/{b.script} on both (public engine, CLI, HTTP)"
    return Plan(name, b, not internal, why, sides)


def run_once(b: Bench, side: Side, quick: bool) -> dict[str, float] | None:
    if not side.script.exists():
        return None
    cmd = [sys.executable, str(side.script), *(b.quick if quick else b.args)]
    started = time.perf_counter()
    try:
        done = subprocess.run(
            cmd,
            cwd=side.tree,
            env=side.env,
            capture_output=True,
            text=True,
            check=False,
            timeout=b.timeout,
        )
    except subprocess.TimeoutExpired:
        print(f"    killed after {b.timeout:.0f} s", file=sys.stderr)
        return None
    finally:
        side.seconds += time.perf_counter() - started
    if done.returncode != 0:
        print(f"    exit {done.returncode}: {done.stderr.strip()[-1500:]}", file=sys.stderr)
        return None
    out = "\n".join(line for line in done.stdout.splitlines() if "[info" not in line[:40])
    return b.parse(out)


def direction(figure: str) -> str:
    if REFERENCE.match(figure):
        return "reference"
    if COUNT.match(figure):
        return "count"
    return "lower" if LOWER.search(figure) else "higher"


def every_pair_worse(way: str, ratios: list[float]) -> bool:
    """Worse beyond the noise: no pair of runs says head/base went the better way."""
    if not ratios:
        return False
    return (way == "higher" and max(ratios) < 1) or (way == "lower" and min(ratios) > 1)


def _fmt(x: float) -> str:
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"


def _spread(values: list[float]) -> str:
    if not values:
        return "—"
    return f"{_fmt(statistics.median(values))} [{_fmt(min(values))}–{_fmt(max(values))}]"


def rows(p: Plan) -> list[list[str]]:
    base, head = p.sides["base"].runs, p.sides["head"].runs
    names = list(p.bench.figures)
    names += [f"{r}.{k}" for r in p.bench.routes for k in ("offered", "p50", "p99", "p99.9", "max")]
    out = []
    for figure in names:
        b = [r[figure] for r in base if r and figure in r]
        h = [r[figure] for r in head if r and figure in r]
        ratios = [
            hr[figure] / br[figure]
            for br, hr in zip(base, head, strict=True)
            if br and hr and figure in br and figure in hr and br[figure]
        ]
        way = direction(figure)
        worse = "**worse**" if every_pair_worse(way, ratios) else ""
        ratio = (
            "—"
            if not ratios
            else f"{statistics.median(ratios):.3f} [{min(ratios):.3f}–{max(ratios):.3f}]"
        )
        how = "same script" if p.shared else "own scripts"
        out.append(
            [p.name, figure, how, way, _spread(b), _spread(h), ratio, str(len(ratios)), worse]
        )
    return out


HEADER = [
    "benchmark",
    "figure",
    "measured by",
    "better",
    "base median [min–max]",
    "head median [min–max]",
    "head/base, paired: median [min–max]",
    "pairs",
    "",
]


def report(plans: list[Plan], revs: dict[str, str], args: argparse.Namespace, took: float) -> str:
    lines = [
        f"# A/B: base {revs['base']} vs head {revs['head']}",
        "",
        f"Machine: {machine()}. {args.rounds} round(s) of base then head per benchmark,"
        f" each run a separate process{'; --quick sizes (a smoke test)' if args.quick else ''};"
        f" {took / 60:.1f} minutes. Load average (1 min) at the end {os.getloadavg()[0]:.2f}.",
        "",
        "How each benchmark was measured:",
        "",
    ]
    for p in plans:
        failed = {s: sum(1 for r in p.sides[s].runs if r is None) for s in SIDES}
        note = ", ".join(f"{n} {s} run(s) failed" for s, n in failed.items() if n)
        secs = " / ".join(f"{p.sides[s].seconds:.0f} s" for s in SIDES)
        lines.append(f"- {p.name}: {p.why}; base / head {secs}{'; ' + note if note else ''}")
    lines += [
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "---|" * len(HEADER),
        *("| " + " | ".join(r) + " |" for p in plans for r in rows(p)),
        "",
        "**worse**: every pair agrees (with one pair that means nothing: use 3 rounds or more)."
        " `reference` figures run no sandex code and show the noise; `count` ones are sizes."
        " Open-loop latencies are at each side's own offered rate (half its closed-loop"
        " throughput, `.offered`): a faster side is offered more.",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--base", required=True, help="the revision to compare against")
    p.add_argument("--head", default="HEAD", help="the revision measured (default HEAD)")
    p.add_argument("--rounds", type=int, default=5, help="pairs of runs per benchmark")
    p.add_argument("--only", nargs="*", default=None, help="benchmarks (default: all)")
    p.add_argument("--quick", action="store_true", help="run.py's tiny sizes: a smoke test")
    p.add_argument("--out", type=Path, default=None, help="also write the table here")
    p.add_argument("--keep", action="store_true", help="keep the exported trees")
    args = p.parse_args()
    unknown = set(args.only or ()) - set(BENCHES)
    if unknown:
        p.error(f"unknown benchmark(s) {', '.join(sorted(unknown))}; known: {', '.join(BENCHES)}")
    revs = {"base": args.base, "head": args.head}
    commits = {s: git("rev-parse", "--verify", f"{r}^{{commit}}") for s, r in revs.items()}
    labels = {s: f"{revs[s]} ({commits[s][:9]})" for s in SIDES}
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="sandex-ab-"))
    try:
        trees = {s: tmp / s for s in SIDES}
        for s in SIDES:
            export(commits[s], trees[s])
        # head's bench/ alone: `bench.*` from it, the engine from the tree measured
        code = tmp / "bench-code"
        shutil.copytree(trees["head"] / "bench", code / "bench")
        plans = [
            pl
            for name, b in BENCHES.items()
            if not args.only or name in args.only
            if (pl := plan(name, b, trees, code)) is not None
        ]
        print(f"base {labels['base']}, head {labels['head']}, trees in {tmp}", flush=True)
        for pl in plans:
            print(f"== {pl.name}: {pl.why}", flush=True)
            for i in range(args.rounds):
                for s in SIDES:
                    print(f"  [{i + 1}/{args.rounds}] {s}", flush=True)
                    pl.sides[s].runs.append(run_once(pl.bench, pl.sides[s], args.quick))
        text = report(plans, labels, args, time.perf_counter() - started)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(text)
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out}")
    failed = any(r is None for pl in plans for s in SIDES for r in pl.sides[s].runs)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
