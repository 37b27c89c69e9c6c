"""Where a sweep's runs execute: one after another, in local processes (joblib's loky,
the default) or on a Dask cluster (a scheduler's address, a `distributed.Client`, or a
local cluster of processes started and closed here). No pool of our own: each is the
library's, and every one answers the results in the order of the tasks."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from sandex.engine.backtest.errors import BacktestError

T = TypeVar("T")
R = TypeVar("R")
EXECUTORS = ("serial", "joblib", "dask")
# Runs every task with `fn`; answers the results in the tasks' order.
MapFn = Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]


def cores() -> int:
    """The cores this process may use (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@contextmanager
def executor(
    kind: str = "joblib", n_jobs: int | None = None, scheduler: Any = None
) -> Iterator[MapFn]:
    """A map over tasks on `kind`, open for the `with` block (its workers started once
    and reused by every call). `n_jobs` defaults to the cores; `scheduler` (dask only)
    is a `tcp://host:port` address or a `distributed.Client`."""
    if kind not in EXECUTORS:
        raise BacktestError(f"executor {kind!r}: one of {', '.join(EXECUTORS)}")
    if scheduler is not None and kind != "dask":
        raise BacktestError("a scheduler is for the dask executor")
    if n_jobs is not None and n_jobs < 1:
        raise BacktestError(f"n_jobs {n_jobs}: at least 1")
    if kind == "serial":
        yield _serial
    elif kind == "joblib":
        with _joblib(n_jobs or cores()) as run:
            yield run
    else:
        with _dask(n_jobs or cores(), scheduler) as run:
            yield run


def _serial(fn: Callable[[Any], Any], tasks: Sequence[Any]) -> list[Any]:
    return [fn(t) for t in tasks]


@contextmanager
def _joblib(n_jobs: int) -> Iterator[MapFn]:
    from joblib import Parallel, delayed

    with Parallel(n_jobs=n_jobs, backend="loky") as parallel:

        def run(fn: Callable[[Any], Any], tasks: Sequence[Any]) -> list[Any]:
            return list(parallel(delayed(fn)(t) for t in tasks))

        yield run


@contextmanager
def _dask(n_jobs: int, scheduler: Any) -> Iterator[MapFn]:
    from distributed import Client, LocalCluster

    cluster = None
    if isinstance(scheduler, Client):
        client = scheduler
    elif scheduler is not None:
        try:
            client = Client(scheduler, timeout="10s")
        except OSError as exc:
            raise BacktestError(f"scheduler {scheduler}: {exc}") from None
    else:
        cluster = LocalCluster(
            n_workers=n_jobs, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = Client(cluster)

    def run(fn: Callable[[Any], Any], tasks: Sequence[Any]) -> list[Any]:
        # pure=False: equal tasks are still run, each once
        return list(client.gather(client.map(fn, list(tasks), pure=False)))

    try:
        yield run
    finally:
        if client is not scheduler:
            client.close()
        if cluster is not None:
            cluster.close()


__all__ = ["EXECUTORS", "MapFn", "cores", "executor"]
