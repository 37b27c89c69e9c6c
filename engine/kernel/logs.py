"""The engine's loggers, made at their first line logged.

structlog imports asyncio, ssl and rich when it is imported: about 50 ms that a command
which logs nothing (a backtest, `sandex verify`) paid at start. `get_logger` answers a
stand-in that imports structlog and asks it for the logger when first used; structlog's
own logger is as lazy (it reads the configuration when it first logs), so what is
logged, and where, is unchanged.

A process that runs sandex inside its own (the pytest plugin's in-process server)
calls `hand_to_logging`: from then on, a sandex line that structlog would print to
standard output, its default, goes to Python's `logging` under the same logger name
instead, where that process's handlers and levels decide what becomes of it (pytest
keeps it with the test that was running, and a test capturing its standard output never
reads it). The process's structlog configuration still renders it, and the process's
own lines stay where it sends them."""

from __future__ import annotations

import sys
from typing import Any

# Whether sandex's lines bound for standard output go to `logging` (`hand_to_logging`).
_handed = False
# One structlog logger per name over `logging`'s logger of that name, made when first needed.
_handed_loggers: dict[str, Any] = {}


def hand_to_logging() -> None:
    """From now on, sandex's lines that would reach standard output go to `logging`."""
    global _handed
    _handed = True


def _to_stdout() -> bool:
    """Whether structlog's configured logger prints to standard output (its default)."""
    import structlog

    factory = structlog.get_config()["logger_factory"]
    if not isinstance(factory, structlog.PrintLoggerFactory):
        return False
    file = factory._file
    return file is None or file is sys.stdout or file is sys.__stdout__


def _handed_logger(name: str) -> Any:
    logger = _handed_loggers.get(name)
    if logger is None:
        import logging

        import structlog

        # the configuration's processors and wrapper (its level), `logging`'s logger
        logger = _handed_loggers[name] = structlog.wrap_logger(logging.getLogger(name))
    return logger


class _Logger:
    __slots__ = ("_name", "_logger")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, method: str) -> Any:
        if _handed and _to_stdout():
            return getattr(_handed_logger(self._name), method)
        logger = self._logger
        if logger is None:
            import structlog

            logger = self._logger = structlog.get_logger(self._name)
        return getattr(logger, method)


def get_logger(name: str) -> Any:
    """structlog's logger `name`, imported and made when first used."""
    return _Logger(name)
