"""The engine's loggers, made at their first line logged.

structlog imports asyncio, ssl and rich when it is imported: about 50 ms that a command
which logs nothing (a backtest, `sandex verify`) paid at start. `get_logger` answers a
stand-in that imports structlog and asks it for the logger when first used; structlog's
own logger is as lazy (it reads the configuration when it first logs), so what is
logged, and where, is unchanged."""

from __future__ import annotations

from typing import Any


class _Logger:
    __slots__ = ("_name", "_logger")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, method: str) -> Any:
        logger = self._logger
        if logger is None:
            import structlog

            logger = self._logger = structlog.get_logger(self._name)
        return getattr(logger, method)


def get_logger(name: str) -> Any:
    """structlog's logger `name`, imported and made when first used."""
    return _Logger(name)
