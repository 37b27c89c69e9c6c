"""`sandex worlds list|delete --db F`: the worlds kept beside a database (docs/worlds.md),
and `--world ID`, which points another verb at one of them."""

from __future__ import annotations

import argparse

from sandex.api_adapter.cli.errors import CliError


def world_db(db: str, world: str | None) -> str:
    """The database a verb's `--db` and `--world` name: the world's own store beside `db`
    (a file, or a schema of the same server database), or `db` itself without `--world`."""
    if world is None:
        return db
    from sandex.api_adapter.worlds.manager import folder_for, location_of
    from sandex.engine.read.database_contents import display

    try:
        where = location_of(db, world)
    except ValueError:  # no world's id: not a name a world could have here
        where = None
    if where is None or not where.exists() or not (folder_for(db) / f"{world}.json").exists():
        raise CliError(f"no world {world} beside {display(db)}")
    return where.text


def list_worlds(args: argparse.Namespace) -> int:
    """`sandex worlds list`: one line per world: id, name, clock, events, size, created."""
    from sandex.api_adapter.worlds.manager import kept_worlds
    from sandex.engine.read.database_contents import display

    found = kept_worlds(args.db)
    if not found:
        print(f"no worlds beside {display(args.db)}")
        return 0
    print("id\tname\tclock\tevents\tbytes\tcreated_at\tfrom")
    for w in found:
        print(
            f"{w['id']}\t{w['name']}\t{w['clock']}\t{w['events']}\t{w['size_bytes']}"
            f"\t{w['created_at']}\t{w['from'] or '-'}"
        )
    return 0


def delete_world(args: argparse.Namespace) -> int:
    """`sandex worlds delete ID`: its files removed; refused while a server serves the
    database (that server deletes it: `DELETE /v2/sandbox/worlds/{id}`)."""
    from sandex.api_adapter.worlds.manager import delete_kept
    from sandex.engine.read.database_contents import display
    from sandex.engine.store import LeaseHeld

    world_db(args.db, args.world_id)  # it exists
    try:
        delete_kept(args.db, args.world_id)
    except LeaseHeld:
        raise CliError(
            f"a sandex serves {display(args.db)}; delete the world through it:"
            f" DELETE /v2/sandbox/worlds/{args.world_id}"
        ) from None
    print(f"deleted world {args.world_id}")
    return 0
