"""The sandbox's named snapshots, as `GET /v2/sandbox/snapshots` lists them.

Taken and restored by commands (engine/domain/sandbox_snapshots.py); this is only the
listing of the `snapshots` table."""

from __future__ import annotations

from typing import Any

from sandex.engine.read.connections import ReadConnections


def list_snapshots(reads: ReadConnections) -> list[dict[str, Any]]:
    """Every snapshot, oldest position first: name, position and when it was taken."""
    rows = reads.conn.execute(
        "SELECT name, position, taken_at FROM snapshots ORDER BY position"
    ).fetchall()
    return [{"name": n, "position": p, "taken_at": t} for n, p, t in rows]
