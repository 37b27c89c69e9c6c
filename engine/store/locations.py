"""What a `--db` names: a SQLite file, or a PostgreSQL database by URL; and where the
files that live beside a database (its key file, the webhook deliverer's progress) go
when the database is on a server and has no folder of its own."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

_SCHEMES = ("postgresql://", "postgres://")

# Where a server database's local files go: $SANDEX_STATE_DIR, else ~/.sandex.
STATE_DIR_ENV = "SANDEX_STATE_DIR"


def is_server_url(db: str | Path) -> bool:
    """`db` names a PostgreSQL database (`postgresql://user@host/dbname`)."""
    return str(db).startswith(_SCHEMES)


def display(db: str | Path) -> str:
    """`db` as it may be shown or logged: a URL without its password."""
    text = str(db)
    if not is_server_url(text):
        return text
    parts = urlsplit(text)
    if parts.password is None:
        return text
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def local_base(db: str | Path) -> str:
    """The path that a database's side files are named after (`<base>.key`, …): the file
    itself for SQLite; for a server database a name made of its user, host, port and
    database under $SANDEX_STATE_DIR (else ~/.sandex), so that every process on this
    machine that opens that database finds the same keys."""
    text = str(db)
    if not is_server_url(text):
        return text
    parts = urlsplit(text)
    query = parse_qs(parts.query)
    host = parts.hostname or query.get("host", ["local"])[0]
    port = str(parts.port or query.get("port", ["5432"])[0])
    user = parts.username or query.get("user", [""])[0]
    dbname = parts.path.lstrip("/") or query.get("dbname", [""])[0]
    name = re.sub(r"[^A-Za-z0-9_.@-]+", "_", f"{user}@{host}_{port}_{dbname}").strip("_")
    folder = Path(os.environ.get(STATE_DIR_ENV) or Path.home() / ".sandex")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return str(folder / f"pg-{name}")
