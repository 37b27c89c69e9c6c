"""`sandex`'s argument parser: every verb, its flags and their help, assembled.

Each verb's work is in its own module (serve, verify, rebuild, events, replay,
time_travel, backtest, sweep, clients, keys, wait, openapi); this module only says
which flags reach it.
The verb modules import nothing heavy at import time, so `sandex --help` stays quick.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from sandex.api_adapter.cli.backtest import backtest as backtest_command
from sandex.api_adapter.cli.clients import revoke as revoke_command
from sandex.api_adapter.cli.copy import copy as copy_command
from sandex.api_adapter.cli.events import events as events_command
from sandex.api_adapter.cli.keys import rotate as rotate_command
from sandex.api_adapter.cli.openapi import openapi as openapi_command
from sandex.api_adapter.cli.rebuild import rebuild as rebuild_command
from sandex.api_adapter.cli.replay import replay as replay_command
from sandex.api_adapter.cli.serve import serve as serve_command
from sandex.api_adapter.cli.sweep import sweep as sweep_command
from sandex.api_adapter.cli.time_travel import time_travel as time_travel_command
from sandex.api_adapter.cli.triggers import triggers as triggers_command
from sandex.api_adapter.cli.verify import verify as verify_command
from sandex.api_adapter.cli.wait import wait as wait_command
from sandex.api_adapter.cli.worlds import delete_world, list_worlds
from sandex.api_adapter.version import installed_version

# The spelling of time travel, named where `sandex replay --until` used to take it.
TIME_TRAVEL = "sandex time-travel --db F --until POSITION|TIME --out G"


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default; an option whose default is None says
    in its own words what happens without it (`test_every_argument_has_help_that_shows_its_default` checks both)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help = action.help or ""
        no_default = action.default is None or action.default is False
        if no_default or action.default == argparse.SUPPRESS or "default" in help:
            return help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """The formatter for every parser: subcommands' parsers are of this class too."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


WORLD_HELP = "a world kept beside --db, by its id (w_...) (default: the database itself)"


def _existing_db(path: str) -> str:
    """A sandex database, or one line saying what `path` is instead: `CliError` is not a
    usage error, so argparse passes it on to `main` (no usage text, nothing opened)."""
    from sandex.api_adapter.cli.errors import sandex_database

    return sandex_database(path)


def _allowed_hosts(value: str) -> list[str]:
    """`--webhook-allow`'s comma-separated hosts, each checked as the setting checks it."""
    from sandex.engine.config.destinations import parse_allowed

    hosts = [h.strip() for h in value.split(",") if h.strip()]
    for host in hosts:
        try:
            parse_allowed(host)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return hosts


class MovedOption(argparse.Action):
    """A spelling that moved to another verb: hidden from help, it stops the command with
    one line naming the verb that took it over (`CliError` passes through argparse)."""

    def __init__(self, *args: Any, to: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", argparse.SUPPRESS)
        kwargs.setdefault("nargs", "?")  # with or without its value: the same one line
        super().__init__(*args, **kwargs)
        self.to = to

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from sandex.api_adapter.cli.errors import CliError

        verb = parser.prog.removeprefix("sandex ")
        raise CliError(f"{verb} {option_string}: {self.to}")


def _run_settings(p: argparse.ArgumentParser, source: str, seed_help: str | None = None) -> None:
    """The engine settings of a backtest's run, shared by `backtest` and `sweep`."""
    seed_help = seed_help or "seed of every random choice (default: the flow's, else 0)"
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help=seed_help,
    )
    p.add_argument(
        "--config", default=None, help="YAML file of engine settings (default: none, built-ins)"
    )
    p.add_argument(
        "--maker-fee",
        default=None,
        help=f"fraction of notional, e.g. 0.0005 (default: {source}, else 0)",
    )
    p.add_argument(
        "--taker-fee",
        default=None,
        help=f"fraction of notional, e.g. 0.001 (default: {source}, else 0)",
    )
    p.add_argument(
        "--spread-bps",
        default=None,
        help=f"synthetic spread; 0 allowed (default: {source}, else 10)",
    )
    p.add_argument(
        "--levels",
        type=int,
        default=None,
        help=f"synthetic levels per side (default: {source}, else 10)",
    )
    p.add_argument(
        "--level-step-bps",
        default=None,
        help=f"spacing of the synthetic levels (default: {source}, else 5)",
    )
    p.add_argument(
        "--level-notional",
        default=None,
        help=f"quote value of each level (default: {source}, else 50000)",
    )
    p.add_argument(
        "--bar-seconds",
        type=float,
        default=None,
        help="length of a bar (default: the shortest gap between two bars of the file)",
    )
    p.add_argument(
        "--fill-at",
        default="close",
        metavar="close|next-open",
        help="where an order sent once a bar is complete fills: at that bar's close, or at"
        " the next bar's open (bars of one market)",
    )


def parser() -> argparse.ArgumentParser:
    """The `sandex` parser: each verb's parser sets `func`, the verb's function."""
    p = _Parser(prog="sandex", description="an event-sourced exchange sandbox")
    p.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="start the HTTP API")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8080, help="TCP port to listen on")
    serve.add_argument("--db", default="sandex.db", help="the database (created if missing)")
    serve.add_argument(
        "--clock",
        choices=["wall", "manual"],
        default=None,
        help="wall time, or a clock moved only by POST /v2/sandbox/clock"
        " (default: the --config file's, else wall)",
    )
    serve.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the price paths and the ids, for a reproducible sandbox (default: the"
        " --config file's, else none: price seed 0, ids keyed by a secret in the key file)",
    )
    serve.add_argument(
        "--config", default=None, help="YAML file of engine settings (default: none, built-ins)"
    )
    serve.add_argument(
        "--durability",
        choices=["FULL", "NORMAL"],
        default=None,
        help="SQLite synchronous mode of the log (default: the --config file's, else FULL)",
    )
    serve.add_argument(
        "--no-rate-limits",
        action="store_true",
        help="answer every request however fast it comes (load tests)",
    )
    serve.add_argument(
        "--webhook-allow",
        action="append",
        type=_allowed_hosts,
        default=None,
        metavar="HOST[,HOST...]",
        help="let webhooks reach these names, addresses or networks though not public"
        " (e.g. 127.0.0.1 for a receiver on this machine); replaces the config file's list"
        " (default: the --config file's list, else none)",
    )
    serve.add_argument(
        "--record",
        default=None,
        metavar="FILE",
        help="write the session as a scenario to FILE (default: no recording)",
    )
    serve.add_argument(
        "--force", action="store_true", help="with --record: overwrite FILE if it exists"
    )
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="time a client has to send a request's head (default: 10)",
    )
    serve.add_argument(
        "--body-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="time a client has to send a request's body after its head (default: 10)",
    )
    serve.add_argument(
        "--keep-alive-timeout",
        type=int,
        default=None,
        metavar="SECONDS",
        help="time an idle connection is kept open between requests (default: 5)",
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=None,
        metavar="N",
        help="connections held at once; more are answered 503 (default: 1000)",
    )
    serve.add_argument(
        "--max-connections-per-ip",
        type=int,
        default=None,
        metavar="N",
        help="connections one client address holds at once; more are answered 429 (default: 100)",
    )
    serve.add_argument(
        "--lease-seconds",
        type=float,
        default=None,
        metavar="SECONDS",
        help="on PostgreSQL: how long a hung writer keeps the database from a standby (default: 5)",
    )
    serve.add_argument(
        "--log-format",
        choices=["auto", "json", "console"],
        default="auto",
        help="log lines on stderr; auto is console on a terminal, else JSON",
    )
    serve.add_argument("--log-level", default="INFO", help="the least level logged")
    serve.add_argument(
        "--console",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve the console at /console (default: on a loopback --host only)",
    )
    serve.set_defaults(func=serve_command)

    rebuild = sub.add_parser("rebuild", help="drop the read models and replay the log")
    rebuild.add_argument("--db", required=True, type=_existing_db, help="the database")
    rebuild.set_defaults(func=rebuild_command)

    verify = sub.add_parser("verify", help="check every invariant of a database")
    verify.add_argument("--db", required=True, type=_existing_db, help="the database")
    verify.add_argument("--world", default=None, help=WORLD_HELP)
    verify.set_defaults(func=verify_command)

    events = sub.add_parser("events", help="print the event log as JSON lines")
    events.add_argument("--db", required=True, type=_existing_db, help="the database")
    events.add_argument("--world", default=None, help=WORLD_HELP)
    events.add_argument(
        "--stream", default=None, help="only this stream's events (default: every stream)"
    )
    events.add_argument("--after", type=int, default=0, help="only events after this position")
    events.add_argument(
        "--limit", type=int, default=None, help="at most this many events (default: all)"
    )
    events.set_defaults(func=events_command)

    copying = sub.add_parser(
        "copy", help="copy a whole database to another store (SQLite or PostgreSQL), verified"
    )
    copying.add_argument(
        "--from", dest="source", required=True, type=_existing_db, help="the database to copy"
    )
    copying.add_argument(
        "--world",
        default=None,
        help="a world kept beside --from, by its id (default: --from itself)",
    )
    copying.add_argument(
        "--to",
        dest="target",
        required=True,
        help="the new database: a file, or postgresql://user@host/dbname (an empty database)",
    )
    copying.set_defaults(func=copy_command)

    replay = sub.add_parser("replay", help="run scenario files")
    replay.add_argument("files", nargs="*", metavar="FILE", help="scenario YAML files")
    replay.add_argument(
        "--url", default=None, help="a running sandbox (default: a new one in-process)"
    )
    replay.add_argument(
        "--client-id",
        default=os.environ.get("SANDEX_CLIENT_ID", "sandex"),
        help="bootstrap client of the --url sandbox ($SANDEX_CLIENT_ID)",
    )
    replay.add_argument(
        "--client-secret",
        default=None,
        help="its secret (default: $SANDEX_CLIENT_SECRET, else the bootstrap default)",
    )
    replay.add_argument("--log-hash", action="store_true", help="print each run's log hash")
    replay.add_argument("--no-progress", action="store_true", help="no progress bar")
    replay.add_argument(
        "--out", default=None, help="keep the database of a run in-process (default: none)"
    )
    replay.add_argument(
        "--db",
        "--until",
        action=MovedOption,
        to=f"time travel is its own verb now: {TIME_TRAVEL}",
    )
    replay.set_defaults(func=replay_command)

    travel = sub.add_parser(
        "time-travel", help="write a new database holding the log as it was at a position or time"
    )
    travel.add_argument("--db", required=True, type=_existing_db, help="the source database")
    travel.add_argument("--world", default=None, help=WORLD_HELP)
    travel.add_argument(
        "--until",
        required=True,
        help="a log position, or an RFC 3339 time (every event at or before it)",
    )
    travel.add_argument("--out", required=True, help="the new database (must not exist)")
    travel.set_defaults(func=time_travel_command)

    backtest = sub.add_parser(
        "backtest", help="run an order flow over historical prices and report on it"
    )
    backtest.add_argument(
        "--data",
        action="append",
        default=None,
        help="CSV or Parquet prices; repeatable (default: the --flow file's data)",
    )
    backtest.add_argument(
        "--market",
        default=None,
        help="the market traded, e.g. BTCUSD (default: the flow's, else every one in the data)",
    )
    flow_or_strategy = backtest.add_mutually_exclusive_group(required=True)
    flow_or_strategy.add_argument(
        "--strategy", default=None, help="path.py:ClassName (default: none; or --flow)"
    )
    flow_or_strategy.add_argument(
        "--flow", default=None, help="a YAML order-flow file (default: none; or --strategy)"
    )
    backtest.add_argument(
        "--param",
        action="append",
        default=None,
        metavar="NAME=VALUE",
        help="a strategy parameter (a class attribute), typed like its default; repeatable"
        " (default: none, the class's defaults)",
    )
    backtest.add_argument(
        "--deposit",
        action="append",
        default=None,
        metavar="ASSET=AMOUNT",
        help="starting balance; repeatable (default: the flow's, else 100000 of the quote)",
    )
    backtest.add_argument("--out", default=None, help="folder for the report (default: none)")
    backtest.add_argument(
        "--db",
        default=None,
        help="keep the event log in this new database (default: a temporary one)",
    )
    _run_settings(backtest, "the --config or flow setting")
    backtest.add_argument("--no-progress", action="store_true", help="no progress bar")
    backtest.set_defaults(func=backtest_command)

    sweep = sub.add_parser(
        "sweep",
        help="backtest a strategy over a grid or an Optuna search of its parameters",
    )
    sweep.add_argument(
        "--data", action="append", required=True, help="CSV or Parquet prices; repeatable"
    )
    sweep.add_argument(
        "--market", default=None, help="the market traded (default: every one in the data)"
    )
    sweep.add_argument("--strategy", required=True, help="path.py:ClassName")
    sweep.add_argument(
        "--grid",
        action="append",
        default=None,
        metavar="NAME=VALUES",
        help="a parameter's values, A,B,C or LOW:HIGH:STEP (HIGH included); repeatable, every"
        " combination runs (default: none; or --optuna)",
    )
    sweep.add_argument(
        "--optuna",
        type=int,
        default=None,
        metavar="N",
        help="an Optuna search of N trials over the --range parameters (default: none; or --grid)",
    )
    sweep.add_argument(
        "--range",
        action="append",
        default=None,
        metavar="NAME=LOW:HIGH[:STEP]",
        help="a searched parameter: an int or decimal range (step: 1, or the finest decimal"
        " place), or A,B,C; repeatable (default: none)",
    )
    goal = sweep.add_mutually_exclusive_group()
    goal.add_argument(
        "--maximize",
        default=None,
        metavar="METRIC",
        help="the search's objective: return_pct, sharpe, max_drawdown_pct or trades"
        " (default: sharpe)",
    )
    goal.add_argument(
        "--minimize", default=None, metavar="METRIC", help="or minimize it (default: maximize)"
    )
    sweep.add_argument(
        "--search-seed",
        type=int,
        default=0,
        help="seed of the Optuna sampler: same seed, same trials",
    )
    sweep.add_argument(
        "--batch",
        type=int,
        default=4,
        help="trials asked of Optuna at a time (the same batch gives the same trials on any executor)",
    )
    sweep.add_argument(
        "--param",
        action="append",
        default=None,
        metavar="NAME=VALUE",
        help="a parameter fixed for every run; repeatable (default: the class's defaults)",
    )
    sweep.add_argument(
        "--deposit",
        action="append",
        default=None,
        metavar="ASSET=AMOUNT",
        help="starting balance of each run; repeatable (default: 100000 of the quote)",
    )
    _run_settings(sweep, "the --config setting", "seed of every run's random choices (default: 0)")
    sweep.add_argument(
        "--executor",
        choices=["joblib", "dask", "serial"],
        default="joblib",
        help="local processes (joblib), a Dask cluster, or one run after another",
    )
    sweep.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="processes of joblib or of a local Dask cluster (default: the cores)",
    )
    sweep.add_argument(
        "--scheduler",
        default=None,
        metavar="tcp://HOST:PORT",
        help="a Dask scheduler to run on (default: a local cluster, started and closed)",
    )
    sweep.add_argument(
        "--db-dir",
        default=None,
        help="keep each run's event log here, NNNN.db for the NNNN-th row (default: none kept)",
    )
    sweep.add_argument("--out", required=True, help="folder for sweep.csv and heatmap.html")
    sweep.add_argument(
        "--heatmap",
        default=None,
        metavar="X,Y",
        help="the heatmap's two parameters (default: the first two swept; none with one)",
    )
    sweep.add_argument(
        "--metric",
        default=None,
        help="the heatmap's and the best row's metric (default: the search's, else sharpe)",
    )
    sweep.set_defaults(func=sweep_command)

    clients = sub.add_parser("clients", help="manage API clients")
    clients_sub = clients.add_subparsers(dest="action", required=True)
    revoke = clients_sub.add_parser("revoke", help="revoke a client: its tokens stop working")
    revoke.add_argument("client_id", help="the client to revoke")
    revoke.add_argument("--db", required=True, type=_existing_db, help="the database")
    revoke.set_defaults(func=revoke_command)

    worlds = sub.add_parser("worlds", help="the worlds kept beside a database (docs/worlds.md)")
    worlds_sub = worlds.add_subparsers(dest="action", required=True)
    listing = worlds_sub.add_parser("list", help="one line per world")
    listing.add_argument("--db", required=True, type=_existing_db, help="the default database")
    listing.set_defaults(func=list_worlds)
    deleting = worlds_sub.add_parser(
        "delete", help="remove a world's files (not while a server serves the database)"
    )
    deleting.add_argument("world_id", help="the world to delete")
    deleting.add_argument("--db", required=True, type=_existing_db, help="the default database")
    deleting.set_defaults(func=delete_world)

    magic = sub.add_parser(
        "triggers",
        help="print the sandbox's magic memo and metadata values as a Markdown page"
        " (docs/sandbox-triggers.md is its output)",
    )
    magic.set_defaults(func=triggers_command)

    keys = sub.add_parser("keys", help="manage the database's keys (the key file beside it)")
    keys_sub = keys.add_subparsers(dest="action", required=True)
    rotate = keys_sub.add_parser(
        "rotate", help="a new token signing key: every token issued before stops working"
    )
    rotate.add_argument("--db", required=True, type=_existing_db, help="the database")
    rotate.set_defaults(func=rotate_command)

    waiting = sub.add_parser(
        "wait",
        help="wait until a sandex answers URL/healthz 200 (docs/ci.md); exit 1 when none"
        " does within --timeout, 2 when the URL answers but is not a sandex",
    )
    waiting.add_argument(
        "--url",
        required=True,
        help="the server's address, e.g. http://127.0.0.1:8000 (a world's /w/ID, or a base"
        " URL ending in /v2, also)",
    )
    waiting.add_argument(
        "--timeout", type=float, default=30.0, metavar="S", help="seconds to wait at most"
    )
    waiting.set_defaults(func=wait_command)

    document = sub.add_parser(
        "openapi", help="print the OpenAPI document the server serves at /openapi.json"
    )
    document.add_argument(
        "--out", default=None, metavar="FILE", help="write it to FILE (default: stdout)"
    )
    document.set_defaults(func=openapi_command)
    return p
