"""`sandex worlds list|delete --db F`: the worlds kept beside a database (docs/worlds.md),
and `--world ID`, which points another verb at one of them."""

from __future__ import annotations

import argparse
from pathlib import Path

from api_adapter.cli.errors import CliError


def world_db(db: str, world: str | None) -> str:
    """The database a verb's `--db` and `--world` name: the world's own file beside `db`,
    or `db` itself without `--world`."""
    if world is None:
        return db
    from api_adapter.worlds.manager import folder_for

    path = folder_for(db) / f"{world}.db"
    if not path.exists() or not (folder_for(db) / f"{world}.json").exists():
        raise CliError(f"no world {world} beside {db}")
    return str(path)


def list_worlds(args: argparse.Namespace) -> int:
    """`sandex worlds list`: one line per world: id, name, clock, events, size, created."""
    from contextlib import closing

    from api_adapter.worlds.manager import folder_for, records
    from engine.store import open_reader

    folder = folder_for(args.db)
    found = records(folder) if folder.is_dir() else []
    if not found:
        print(f"no worlds beside {args.db}")
        return 0
    print("id\tname\tclock\tevents\tbytes\tcreated_at\tfrom")
    for record in found:
        db = folder / f"{record.id}.db"
        with closing(open_reader(db)) as reader:
            events = reader.last_position()
        size = sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists())
        origin = f"{record.from_world}@{record.from_snapshot}" if record.from_world else "-"
        print(
            f"{record.id}\t{record.name}\t{record.clock}\t{events}\t{size}"
            f"\t{record.created_at}\t{origin}"
        )
    return 0


def delete_world(args: argparse.Namespace) -> int:
    """`sandex worlds delete ID`: its files removed; refused while a server serves the
    database (that server deletes it: `DELETE /v2/sandbox/worlds/{id}`)."""
    from api_adapter.worlds.manager import WorldManager
    from engine.config.settings import Settings
    from engine.store import LeaseHeld, locate
    from engine.store.lease import WriterLease

    world_db(args.db, args.world_id)  # it exists
    lease = None
    if not locate(args.db).on_server:
        try:
            lease = WriterLease.take(args.db)
        except LeaseHeld:
            raise CliError(
                f"a sandex serves {args.db}; delete the world through it:"
                f" DELETE /v2/sandbox/worlds/{args.world_id}"
            ) from None
    try:
        manager = WorldManager(args.db, Settings())
        try:
            manager.delete(args.world_id)
        finally:
            manager.close()
    finally:
        if lease is not None:
            lease.release()
    print(f"deleted world {args.world_id}")
    return 0
