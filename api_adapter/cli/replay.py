"""`sandex replay`: run scenario files against a fresh sandbox or a running one, one
line per step, and the verdict."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sandex.api_adapter.bootstrap import DEFAULT_SECRET

if TYPE_CHECKING:
    from sandex.api_adapter.scenarios.runner import ScenarioResult, StepResult

# From this many steps a replay shows the progress bar under its lines.
PROGRESS_FROM_STEPS = 40


class _Printer:
    """One line per step, the diffs of a failed one, and for long runs the command
    line's progress bar (api_adapter/cli/progress.py), under the lines."""

    def __init__(self, total_steps: int, progress: bool) -> None:
        from rich.console import Console

        from sandex.api_adapter.cli.progress import Bar

        self.console = Console(highlight=False, soft_wrap=True)
        self.progress: Bar | None = Bar("replaying", "steps", total_steps) if progress else None

    def line(self, text: str) -> None:
        self.console.print(text, markup=False)

    def step(self, r: StepResult) -> None:
        status = f" -> {r.status}" if r.status is not None else ""
        self.line(f"  {'ok  ' if r.ok else 'FAIL'} {r.index:>3}  {r.label}{status}")
        for diff in r.diffs:
            self.line(f"            {diff}")
        if self.progress is not None:
            self.progress.advance()

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _write_answers(path: Path, results: list[ScenarioResult]) -> None:
    """`--answers`: what each request step was answered, as sent, so that a replay's
    answer can be held against the one a failed test saw (docs/testing.md); private,
    like the recording whose answers it repeats."""
    import orjson

    lines = [
        orjson.dumps(
            {
                "scenario": str(result.scenario.source),
                "step": step.index,
                "label": step.label,
                "status": step.status,
                "body": step.answer.decode("utf-8", "replace"),
            }
        )
        + b"\n"
        for result in results
        for step in result.steps
        if step.answer is not None
    ]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(b"".join(lines))


def replay(args: argparse.Namespace) -> int:
    """`sandex replay FILE... [--url URL] [--log-hash] [--answers FILE]`: 0 all green, 1 a mismatch, 2 a
    scenario that cannot be read."""
    from sandex.api_adapter.cli.progress import wanted
    from sandex.api_adapter.logging import configure
    from sandex.api_adapter.scenarios.runner import run_in_process, run_remote
    from sandex.engine.tools.scenario_file import ScenarioError, load_file

    if args.client_secret is None:  # not a default of the parser: --help would show it
        args.client_secret = os.environ.get("SANDEX_CLIENT_SECRET", DEFAULT_SECRET)
    if not args.files:
        print("sandex: give scenario files", file=sys.stderr)
        return 2
    if args.out and (len(args.files) != 1 or args.url):
        print("sandex: --out keeps the database of one scenario run in-process", file=sys.stderr)
        return 2
    if args.out and Path(args.out).exists():  # before the run, which would overwrite it
        print(f"sandex: {args.out} exists already; --out writes a new database", file=sys.stderr)
        return 2
    configure(json_lines=False, level="WARNING")  # the access log would drown the report
    scenarios = []
    unreadable = 0
    for path in args.files:
        try:
            scenarios.append(load_file(path))
        except ScenarioError as exc:
            print(f"sandex: {exc}", file=sys.stderr)
            unreadable += 1
    total = sum(s.step_count() for s in scenarios)
    show_bar = total >= PROGRESS_FROM_STEPS and wanted(args.no_progress)
    printer = _Printer(total, show_bar)
    results: list[ScenarioResult] = []
    try:
        for scenario in scenarios:
            printer.line(f"{scenario.source}: {scenario.purpose}")
            if args.url:
                result = run_remote(
                    scenario,
                    args.url,
                    client_id=args.client_id,
                    client_secret=args.client_secret,
                    on_step=printer.step,
                )
            else:
                result = run_in_process(scenario, on_step=printer.step, keep_db=args.out)
            results.append(result)
            verdict = (
                f"passed, {len(result.steps)} steps"
                if result.ok
                else f"FAILED, {len(result.failed)} of {len(result.steps)} steps differ"
            )
            printer.line(f"  {verdict} in {result.seconds:.2f} s")
            if args.log_hash:
                printer.line(
                    f"  log {result.log_hash}"
                    if result.log_hash
                    else "  log hash: only for an in-process run (no --url)"
                )
    finally:
        printer.stop()
    if args.answers:
        _write_answers(Path(args.answers), results)
    steps = sum(len(r.steps) for r in results)
    failed_steps = sum(len(r.failed) for r in results)
    failed = sum(not r.ok for r in results)
    summary = (
        f"{len(results)} scenarios, {steps} steps: {steps - failed_steps} passed,"
        f" {failed_steps} failed"
    )
    if failed:
        summary += f" (in {failed} scenarios)"
    if unreadable:
        summary += f"; {unreadable} unreadable"
    printer.line(summary)
    if unreadable:
        return 2
    return 1 if failed else 0
