"""`sandex serve`: the HTTP API on a database, with its bootstrap client."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sandex.api_adapter.world import World

# The exit status of a writer that lost its lease to another (docs/operations.md).
FENCED = 4

# serve flags that override connection settings (api_adapter/server/connections.py)
_CONNECTION_FLAGS = {
    "header_timeout": "header_timeout_seconds",
    "body_timeout": "body_timeout_seconds",
    "keep_alive_timeout": "keep_alive_timeout_seconds",
    "max_connections": "max_connections",
    "max_connections_per_ip": "max_connections_per_ip",
    "lease_seconds": "writer_lease_seconds",
}


def serve_settings(args: argparse.Namespace) -> object:
    """The engine settings of `sandex serve`'s flags over its --config file."""
    from sandex.engine.config.settings import Settings

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


def serve(args: argparse.Namespace) -> int:
    """`sandex serve`: the default world on `--db`, served on the listener."""
    from sandex.api_adapter.cli.errors import new_or_sandex_database
    from sandex.api_adapter.logging import configure
    from sandex.api_adapter.server.connections import uvicorn_options
    from sandex.api_adapter.server.listen import listen, serve_on
    from sandex.engine.read.database_contents import display, on_server
    from sandex.engine.store import LeaseHeld, StoreUnavailable

    json_logs = args.log_format == "json" or (args.log_format == "auto" and not sys.stderr.isatty())
    configure(json_lines=json_logs, level=args.log_level)
    settings = serve_settings(args)
    new_or_sandex_database(args.db)
    if args.record:
        from sandex.api_adapter.scenarios.recorder import check_target

        check_target(args.record, force=args.force)
    listener = listen(args.host, args.port)  # a busy port: no database made, no banner
    args.port = listener.getsockname()[1]  # the one taken, for --port 0
    base = f"http://{args.host}:{args.port}"
    options = {"log_config": None, "access_log": False, **uvicorn_options(settings)}  # type: ignore[arg-type]
    try:
        world = _started(args, settings)
    except LeaseHeld as exc:
        if not on_server(args.db):  # an SQLite file has one machine: no standby
            listener.close()
            print(f"sandex: {exc}", file=sys.stderr)
            return 2
        from sandex.api_adapter.server.standby import wait_as_standby

        print(
            f"sandex standby on {base} for {display(args.db)}: another sandex writes to it;"
            " this one takes over when that one's lease ends (/healthz answers 503, role"
            " standby, until then)",
            flush=True,
        )
        taken = wait_as_standby(listener, lambda: _started(args, settings), options)
        if taken is None:
            listener.close()
            return 0
        world = taken
    except StoreUnavailable as exc:
        listener.close()
        print(f"sandex: {exc}", file=sys.stderr)
        return 2
    engine, credentials = world.engine, world.credentials
    ids = ", keyed ids" if engine.ids.keyed else ""
    print(
        f"sandex serving {base}/v2 on {args.db}"
        f" ({world.clock_mode} clock, seed {engine.seed}{ids})\n"
        f"  token:       POST {base}/oauth2/token\n"
        f"  client_id:     {credentials.client_id}\n"
        f"  client_secret: {credentials.shown}\n"
        f"  docs:        {base}/docs"
        + (f"\n  console:     {base}/console" if world.app.state.console else ""),
        flush=True,
    )
    fenced = getattr(engine.store, "fenced", None)  # PostgreSQL: the lease was lost
    try:
        serve_on(listener, world.front, host=args.host, port=args.port, stop_when=fenced, **options)
    finally:
        world.stop()
    if fenced is not None and fenced.is_set():
        print(
            f"sandex: another sandex took over {display(args.db)} (this one lost its writer"
            " lease, so it wrote nothing since); exiting: started again, it waits as the"
            " standby",
            file=sys.stderr,
        )
        return FENCED
    return 0


def _started(args: argparse.Namespace, settings: Any) -> World:
    """The default world on `--db`, started; one that fails to start gives its lease back."""
    from sandex.api_adapter.bootstrap import served_on
    from sandex.api_adapter.faults import NO_FAULT_GATE
    from sandex.api_adapter.world import World

    # Internal, for bench_faults's baseline only: a server without the fault gate.
    gate = os.environ.get(NO_FAULT_GATE) != "1"
    return World.open(
        args.db,
        settings,
        bootstrap=served_on(args.host),
        record=args.record,
        fault_gate=gate,
        console=console_on(args),
    ).start()


def console_on(args: argparse.Namespace) -> bool:
    """Whether `serve` serves the console: as `--console`/`--no-console` say, else on a
    loopback address only (a person on this machine)."""
    from sandex.api_adapter.bootstrap import is_loopback

    asked: bool | None = getattr(args, "console", None)
    return is_loopback(args.host) if asked is None else asked
