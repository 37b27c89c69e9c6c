"""The command line's progress bar, one for every long command: verify, rebuild, replay
and backtest.

It is drawn with rich on stderr, and only when stderr is a terminal and `CI` is not
set: piped, redirected or in CI a command prints exactly what it printed before. The
bar is transient (it is gone when the command ends) and what the command prints on
stdout meanwhile scrolls above it when stdout is the terminal too. The engine draws
nothing: it calls the bar as `bar(done, total)` (engine/kernel/progress.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def wanted(off: bool = False) -> bool:
    """Whether to draw: not `off` (`--no-progress`), stderr a terminal, not in CI."""
    return not off and sys.stderr.isatty() and not os.environ.get("CI")


class Bar:
    """A started bar: call it with (done, total), or `advance()` it by one."""

    def __init__(self, label: str, unit: str, total: int | None = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(unit),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
            # Lines printed on stdout go above the bar only when stdout is the terminal
            # too: redirected, they must reach the file, not the bar's terminal.
            redirect_stdout=sys.stdout.isatty(),
        )
        self.task: Any = self.progress.add_task(label, total=total)
        self.progress.start()

    def __call__(self, done: int, total: int) -> None:
        self.progress.update(self.task, completed=done, total=total)

    def advance(self) -> None:
        self.progress.advance(self.task)

    @property
    def completed(self) -> float:
        return float(self.progress.tasks[0].completed)

    def stop(self) -> None:
        self.progress.stop()


@contextmanager
def progress_bar(
    label: str, unit: str, *, total: int | None = None, off: bool = False
) -> Iterator[Bar | None]:
    """A bar while the block runs, or None when there is none to draw (see `wanted`):
    what an engine function takes as its `progress`."""
    if not wanted(off):
        yield None
        return
    bar = Bar(label, unit, total)
    try:
        yield bar
    finally:
        bar.stop()
