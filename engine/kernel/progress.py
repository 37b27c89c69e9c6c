"""How far a long run has got, told to a callback: the engine reports, it draws nothing.

`verify`, `rebuild` and a backtest take `progress`, a callable `progress(done, total)`:
for a log, the position reached and the log's last position; for a backtest, the price
points done and their number. It is called every `EVERY` items and once at the end, so
it costs nothing per item. The command line passes its progress bar
(`api_adapter/cli/progress.py`); a test passes a list's `append`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from sandex.engine.kernel.events import Event

Progress = Callable[[int, int], None]

# Items between two reports: a report draws a bar at most, far less often than items.
EVERY = 4096


def reporting(events: Iterable[Event], progress: Progress | None, total: int) -> Iterable[Event]:
    """`events` as they are, with `progress(position, total)` every `EVERY` events and
    after the last one (`total`: the log's last position, read before). Without a
    callback, `events` itself: a replay pays nothing for a report no one asked for."""
    if progress is None:
        return events
    return _reported(events, progress, total)


def _reported(events: Iterable[Event], progress: Progress, total: int) -> Iterator[Event]:
    every = EVERY
    position = 0
    for n, event in enumerate(events, start=1):
        yield event
        position = event.position
        if n % every == 0:
            progress(position, max(total, position))
    progress(position, max(total, position))
