"""The `sandex` command line: serve, rebuild, verify, events, clients, keys."""

from __future__ import annotations

import argparse
import ipaddress
import os
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

# The bootstrap client's secret on a loopback host when SANDEX_CLIENT_SECRET is unset.
DEFAULT_SECRET = "sandex-secret"

# serve flags that override connection settings (api_adapter/connections.py)
_CONNECTION_FLAGS = {
    "header_timeout": "header_timeout_seconds",
    "body_timeout": "body_timeout_seconds",
    "keep_alive_timeout": "keep_alive_timeout_seconds",
    "max_connections": "max_connections",
}


def _settings(args: argparse.Namespace) -> object:
    from engine.config.settings import Settings

    overrides = {"seed": args.seed, "clock": args.clock}
    if args.durability:
        overrides["durability"] = args.durability
    if getattr(args, "no_rate_limits", False):
        overrides["rate_limits_enabled"] = False
    for flag, setting in _CONNECTION_FLAGS.items():
        if getattr(args, flag, None) is not None:
            overrides[setting] = getattr(args, flag)
    if getattr(args, "webhook_allow", None):
        overrides["webhook_allowed_hosts"] = [h for hosts in args.webhook_allow for h in hosts]
    if args.config:
        return Settings.from_file(args.config, **overrides)
    return Settings(**{k: v for k, v in overrides.items() if v is not None})


def cmd_serve(args: argparse.Namespace) -> int:
    from api_adapter.app import create_app
    from api_adapter.cli.errors import new_or_sandex_database
    from api_adapter.logging import configure
    from api_adapter.server.connections import uvicorn_options
    from api_adapter.server.listen import listen, serve_on
    from engine import Engine
    from engine.runtime.scheduler import Scheduler
    from engine.store import StoreUnavailable

    json_logs = args.log_format == "json" or (args.log_format == "auto" and not sys.stderr.isatty())
    configure(json_lines=json_logs, level=args.log_level)
    settings = _settings(args)
    new_or_sandex_database(args.db)
    if args.record:
        from api_adapter.scenarios.recorder import check_target

        check_target(args.record, force=args.force)
    listener = listen(args.host, args.port)  # a busy port: no database made, no banner
    args.port = listener.getsockname()[1]  # the one taken, for --port 0
    try:
        engine = Engine(args.db, settings).start()  # type: ignore[arg-type]
    except StoreUnavailable as exc:
        listener.close()
        print(f"sandex: {exc}", file=sys.stderr)
        return 2
    client_id, shown_secret = _bootstrap(engine, args.host)
    scheduler = (
        Scheduler(engine, engine.settings.tick_interval_seconds)
        if engine.clock.mode == "wall"
        else None
    )
    app = create_app(engine, scheduler=scheduler)
    if args.record:
        from api_adapter.scenarios.recorder import Recorder

        app.add_middleware(Recorder, path=args.record, engine=engine)
    base = f"http://{args.host}:{args.port}"
    print(
        f"sandex serving {base}/v2 on {args.db} ({engine.clock.mode} clock, seed {engine.seed})\n"
        f"  token:       POST {base}/oauth2/token\n"
        f"  client_id:     {client_id}\n"
        f"  client_secret: {shown_secret}\n"
        f"  docs:        {base}/docs",
        flush=True,
    )
    try:
        serve_on(
            listener,
            app,
            host=args.host,
            port=args.port,
            log_config=None,
            access_log=False,
            **uvicorn_options(engine.settings),
        )
    finally:
        engine.stop()
    return 0


def _bootstrap(engine: Any, host: str) -> tuple[str, str]:
    """Create the bootstrap client of a new database; answer its id and what the banner
    shows for its secret. The secret is `SANDEX_CLIENT_SECRET` when set, and then never
    shown. Otherwise it is the documented default on a loopback host (a sandbox on
    127.0.0.1 needs no configuration) and a new random one on any other (shown once: it
    is kept only as a salted hash). On a restart the secret is shown only when it is
    still the default."""
    from engine.domain.customers import secret_matches
    from engine.kernel.commands import CreateCustomer

    given = os.environ.get("SANDEX_CLIENT_SECRET")
    if not engine.state.customers:
        client_id = os.environ.get("SANDEX_CLIENT_ID", "sandex")
        if given:
            secret, shown = given, "(from SANDEX_CLIENT_SECRET)"
        elif _is_loopback(host):
            secret = shown = DEFAULT_SECRET
        else:
            secret = secrets.token_urlsafe(30)
            shown = f"{secret}\n    (generated; shown this once, it cannot be shown again)"
        engine.execute(CreateCustomer(client_id=client_id, client_secret=secret, bootstrap=True))
        return client_id, shown
    client = _bootstrap_client(engine)
    if client is None:
        return os.environ.get("SANDEX_CLIENT_ID", "sandex"), "(not shown)"
    if secret_matches(DEFAULT_SECRET, client["salt"], client["secret_hash"]):
        shown = DEFAULT_SECRET
        if not _is_loopback(host):
            shown += "\n    (the default: anyone who reaches this host is admin; set a secret)"
    elif given and secret_matches(given, client["salt"], client["secret_hash"]):
        shown = "(from SANDEX_CLIENT_SECRET)"
    else:
        shown = "(set when the database was created; not shown)"
    return str(client["client_id"]), shown


def _bootstrap_client(engine: Any) -> dict[str, Any] | None:
    state = engine.state
    for client in state.clients.values():
        customer = state.customers.get(client["customer_id"])
        if customer and customer.get("bootstrap") and not client["revoked"]:
            return client  # type: ignore[no-any-return]
    return None


def _is_loopback(host: str) -> bool:
    """Whether a server bound to `host` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def cmd_keys_rotate(args: argparse.Namespace) -> int:
    from engine.runtime.key_file import KeyFile, KeyFileError

    try:
        keys = KeyFile.open(args.db)
        keys.rotate()
    except (KeyFileError, OSError) as exc:
        print(f"sandex: {exc}", file=sys.stderr)
        return 1
    print(
        f"signing key of {args.db} rotated in {keys.path}: tokens issued before are refused"
        " from now on (a running server too); clients get new tokens with their secrets"
    )
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    from api_adapter.cli.progress import progress_bar
    from engine.store import StoreUnavailable
    from engine.tools.verify import rebuild

    try:
        with progress_bar("rebuilding", "events") as shown:
            position = rebuild(args.db, progress=shown)
    except StoreUnavailable as exc:  # a server runs on it (engine/store/lease.py)
        print(f"sandex: {exc}", file=sys.stderr)
        return 2
    print(f"read models rebuilt from {position} events")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from api_adapter.cli.progress import progress_bar
    from engine.tools.verify import verify

    with progress_bar("verifying", "events") as shown:
        problems = verify(args.db, progress=shown)
    if problems:
        print(f"FAILED: {problems[0]}")
        for extra in problems[1:]:
            print(f"  also: {extra}")
        return 1
    print("OK: log gapless, ledger balanced, no negative balance, read models equal a rebuild")
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    from engine.kernel.credentials import redact
    from engine.store import SqliteEventStore

    store = SqliteEventStore.reader(args.db)  # read-only: safe beside a running server
    out = sys.stdout.buffer
    try:
        for event in store.read(after=args.after, stream=args.stream, limit=args.limit):
            shown = event.as_json()
            shown["data"] = redact(event.type, event.data)  # no salt, hash or secret
            out.write(orjson.dumps(shown) + b"\n")
    except BrokenPipeError:
        pass
    finally:
        store.close()
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from api_adapter.scenarios.runner import command

    if args.client_secret is None:  # not a default of the parser: --help would show it
        args.client_secret = os.environ.get("SANDEX_CLIENT_SECRET", DEFAULT_SECRET)
    return command(args)


def cmd_backtest(args: argparse.Namespace) -> int:
    from api_adapter.cli.progress import progress_bar
    from api_adapter.problems import domain_problem_body
    from engine.backtest import ApiError, BacktestError, run

    deposits = {}
    for item in args.deposit or []:
        asset, sep, amount = item.partition("=")
        if not sep or not asset or not amount:
            print(f"sandex: --deposit {item!r}: write ASSET=AMOUNT", file=sys.stderr)
            return 2
        deposits[asset.upper()] = amount
    settings = None
    if args.config:
        from engine.config.settings import Settings

        settings = Settings.from_file(args.config)
    with progress_bar("backtest", "prices", off=args.no_progress) as shown:
        try:
            result = run(
                args.data,
                args.market,
                strategy=args.strategy,
                flow=args.flow,
                deposits=deposits or None,
                maker_fee=args.maker_fee,
                taker_fee=args.taker_fee,
                spread_bps=args.spread_bps,
                levels=args.levels,
                level_step_bps=args.level_step_bps,
                level_notional=args.level_notional,
                settings=settings,
                seed=args.seed,
                db=args.db,
                out=args.out,
                progress=shown,
                bar_seconds=args.bar_seconds,
                problems=domain_problem_body,
            )
        except (BacktestError, ApiError) as exc:
            print(f"sandex: {exc}", file=sys.stderr)
            return 2
    s = result.summary
    print(
        f"{' '.join(s['markets'])} {s['start']} .. {s['end']}: {s['points']} points,"
        f" {s['orders']['total']} orders, {s['executions']} executions\n"
        f"  pnl {s['pnl']} {s['currency']} (return {s['return']}),"
        f" max drawdown {s['max_drawdown']}, fees {s['fees']}\n"
        f"  log {s['log_hash']}"
    )
    if s["errors"]:
        print(f"  {len(s['errors'])} flow steps were refused; see summary.json")
    if args.out:
        print(f"  report: {Path(args.out) / 'report.html'}")
    return 0


def cmd_clients_revoke(args: argparse.Namespace) -> int:
    from engine import Engine
    from engine.kernel.commands import RevokeClient
    from engine.kernel.errors import DomainError

    # Beside a running server, which holds the writer lease: one event, through SQLite's
    # write lock; the server reloads the log it finds changed before deciding again.
    engine = Engine(args.db, lease=False).start()
    try:
        engine.execute(RevokeClient(client_id=args.client_id))
    except DomainError as exc:
        print(f"sandex: {exc.detail}", file=sys.stderr)
        return 1
    finally:
        engine.stop()
    print(f"client {args.client_id} revoked")
    return 0


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sandex")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default; an option whose default is None says
    in its own words what happens without it (tests/test_cli_help.py checks both)."""

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


def _existing_db(path: str) -> str:
    """A sandex database, or one line saying what `path` is instead: `CliError` is not a
    usage error, so argparse passes it on to `main` (no usage text, nothing opened)."""
    from api_adapter.cli.errors import sandex_database

    return sandex_database(path)


def _allowed_hosts(value: str) -> list[str]:
    """`--webhook-allow`'s comma-separated hosts, each checked as the setting checks it."""
    from engine.config.destinations import parse_allowed

    hosts = [h.strip() for h in value.split(",") if h.strip()]
    for host in hosts:
        try:
            parse_allowed(host)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return hosts


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="sandex", description="an event-sourced exchange sandbox")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
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
        help="seed of every random choice (default: the --config file's, else 0)",
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
        help="time a client has to send a request's body after its head (default: 30)",
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
        "--log-format",
        choices=["auto", "json", "console"],
        default="auto",
        help="log lines on stderr; auto is console on a terminal, else JSON",
    )
    serve.add_argument("--log-level", default="INFO", help="the least level logged")
    serve.set_defaults(func=cmd_serve)

    rebuild = sub.add_parser("rebuild", help="drop the read models and replay the log")
    rebuild.add_argument("--db", required=True, type=_existing_db, help="the database")
    rebuild.set_defaults(func=cmd_rebuild)

    verify = sub.add_parser("verify", help="check every invariant of a database")
    verify.add_argument("--db", required=True, type=_existing_db, help="the database")
    verify.set_defaults(func=cmd_verify)

    events = sub.add_parser("events", help="print the event log as JSON lines")
    events.add_argument("--db", required=True, type=_existing_db, help="the database")
    events.add_argument(
        "--stream", default=None, help="only this stream's events (default: every stream)"
    )
    events.add_argument("--after", type=int, default=0, help="only events after this position")
    events.add_argument(
        "--limit", type=int, default=None, help="at most this many events (default: all)"
    )
    events.set_defaults(func=cmd_events)

    replay = sub.add_parser(
        "replay",
        help="run scenario files; or, with --db/--until/--out, rebuild a database as it was",
    )
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
        "--db", default=None, type=_existing_db, help="time travel: the source (default: none)"
    )
    replay.add_argument(
        "--until", default=None, help="time travel: a log position or a time (default: none)"
    )
    replay.add_argument(
        "--out",
        default=None,
        help="time travel: the new database; or keep a run's database (default: none)",
    )
    replay.set_defaults(func=cmd_replay)

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
    backtest.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of every random choice (default: the flow's, else 0)",
    )
    backtest.add_argument(
        "--config", default=None, help="YAML file of engine settings (default: none, built-ins)"
    )
    backtest.add_argument(
        "--maker-fee",
        default=None,
        help="fraction of notional, e.g. 0.0005 (default: the --config or flow setting, else 0)",
    )
    backtest.add_argument(
        "--taker-fee",
        default=None,
        help="fraction of notional, e.g. 0.001 (default: the --config or flow setting, else 0)",
    )
    backtest.add_argument(
        "--spread-bps",
        default=None,
        help="synthetic spread; 0 allowed (default: the --config or flow setting, else 10)",
    )
    backtest.add_argument(
        "--levels",
        type=int,
        default=None,
        help="synthetic levels per side (default: the --config or flow setting, else 10)",
    )
    backtest.add_argument(
        "--level-step-bps",
        default=None,
        help="spacing of the synthetic levels (default: the --config or flow setting, else 5)",
    )
    backtest.add_argument(
        "--level-notional",
        default=None,
        help="quote value of each level (default: the --config or flow setting, else 50000)",
    )
    backtest.add_argument(
        "--bar-seconds",
        type=float,
        default=None,
        help="length of a bar (default: the shortest gap between two bars of the file)",
    )
    backtest.add_argument("--no-progress", action="store_true", help="no progress bar")
    backtest.set_defaults(func=cmd_backtest)

    clients = sub.add_parser("clients", help="manage API clients")
    clients_sub = clients.add_subparsers(dest="action", required=True)
    revoke = clients_sub.add_parser("revoke", help="revoke a client: its tokens stop working")
    revoke.add_argument("client_id", help="the client to revoke")
    revoke.add_argument("--db", required=True, type=_existing_db, help="the database")
    revoke.set_defaults(func=cmd_clients_revoke)

    keys = sub.add_parser("keys", help="manage the database's keys (the key file beside it)")
    keys_sub = keys.add_subparsers(dest="action", required=True)
    rotate = keys_sub.add_parser(
        "rotate", help="a new token signing key: every token issued before stops working"
    )
    rotate.add_argument("--db", required=True, type=_existing_db, help="the database")
    rotate.set_defaults(func=cmd_keys_rotate)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from api_adapter.cli.errors import reported

    with reported() as outcome:
        args = parser().parse_args(argv)
        outcome.database = getattr(args, "db", None)
        outcome.code = int(args.func(args))
    return outcome.code


if __name__ == "__main__":
    raise SystemExit(main())
