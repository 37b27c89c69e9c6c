"""What `sandex backtest` and `sandex sweep` read alike from their flags: `NAME=VALUE`
pairs, and the keywords every run takes (deposits, settings file, fees, liquidity)."""

from __future__ import annotations

import argparse
from typing import Any


class Usage(Exception):
    """A flag written wrong: one line, exit status 2."""


def pairs(items: list[str] | None, flag: str, what: str) -> dict[str, str]:
    """`NAME=VALUE` flags as a dict (a name given twice: the last one)."""
    found: dict[str, str] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise Usage(f"{flag} {item!r}: write {what}")
        found[name.strip()] = value.strip()
    return found


def run_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords of `sandex.engine.backtest.run` (and `sweep`) the shared flags set; raises
    `Usage` for a `--deposit` written wrong."""
    deposits = {k.upper(): v for k, v in pairs(args.deposit, "--deposit", "ASSET=AMOUNT").items()}
    settings = None
    if args.config:
        from sandex.engine.config.settings import Settings

        settings = Settings.from_file(args.config)
    return {
        "deposits": deposits or None,
        "maker_fee": args.maker_fee,
        "taker_fee": args.taker_fee,
        "spread_bps": args.spread_bps,
        "levels": args.levels,
        "level_step_bps": args.level_step_bps,
        "level_notional": args.level_notional,
        "settings": settings,
        "seed": args.seed,
        "bar_seconds": args.bar_seconds,
        "fill_at": args.fill_at,
    }


__all__ = ["Usage", "pairs", "run_options"]
