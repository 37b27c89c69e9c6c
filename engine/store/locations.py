"""What a `--db` names, decided in one place: `locate` reads the text once and answers
a `Location` (an SQLite file, SQLite's `:memory:`, or a PostgreSQL database by URL),
which says what callers ask of it: whether it is on a server, exists, how it may be
shown, and where the files that live beside a database (its key file, the webhook
deliverer's progress) go when it is on a server and has no folder of its own. No module
outside engine/store reads a `--db`'s text; engine/store/opening.py opens the backend a
location's kind names.

A PostgreSQL location may name a schema of its database with a `schema` query
parameter (`postgresql://user@host/db?schema=w_abc`): the store's tables live in that
schema (made at first open), so many independent stores share one database. Without
it, the connection's default schema (`public`) is used, as before.

Stores may be kept beside a database (a server's worlds, docs/worlds.md): `beside(name)`
answers where the one called `name` lives, an SQLite file in the folder `<db>.worlds`, or
on a server the schema `name` of the same database; either way its side files (key
file, ...) are in that local folder (`beside_folder`), named after it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, urlencode, urlsplit

# URL schemes of a server database, and the kind of location each names.
_SCHEMES: dict[str, Kind] = {"postgresql": "server", "postgres": "server"}

Kind = Literal["file", "memory", "server"]

# Where a server database's local files go: $SANDEX_STATE_DIR, else ~/.sandex.
STATE_DIR_ENV = "SANDEX_STATE_DIR"

# The folder beside a database that holds the stores kept beside it (or, on a server,
# their side files): `<local base>.worlds`.
BESIDE = ".worlds"

# A schema name sandex makes itself: a plain lower-case SQL identifier, never quoted.
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


@dataclass(frozen=True)
class Location:
    """Where one database lives; `text` is the `--db` as given."""

    text: str
    kind: Kind

    @property
    def on_server(self) -> bool:
        """A database on a server: no file here, another machine may write it too."""
        return self.kind == "server"

    @property
    def in_memory(self) -> bool:
        """A database no second connection can open (no key file, no reader, no lease)."""
        return self.kind == "memory"

    def exists(self) -> bool:
        """Whether there is a database to open: a file that exists; a server database
        is taken to exist (opening it says otherwise); a memory one never does."""
        if self.kind == "file":
            return Path(self.text).exists()
        return self.kind == "server"

    def display(self) -> str:
        """As it may be shown or logged: a URL without its password."""
        if not self.on_server:
            return self.text
        parts = urlsplit(self.text)
        if parts.password is None:
            return self.text
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return parts._replace(netloc=netloc).geturl()

    @property
    def schema(self) -> str | None:
        """The server schema named by the URL's `schema` parameter (None: the default)."""
        if not self.on_server:
            return None
        for key, value in parse_qsl(urlsplit(self.text).query):
            if key == "schema":
                if not _SCHEMA_NAME.fullmatch(value):
                    raise ValueError(f"schema {value!r}: a lower-case SQL name is expected")
                return value
        return None

    def conninfo(self) -> tuple[str, str]:
        """(the URL the driver connects to, its `options`): the `schema` parameter,
        which the driver does not know, becomes the connection's search path."""
        parts = urlsplit(self.text)
        query = [(k, v) for k, v in parse_qsl(parts.query) if k != "schema"]
        url = parts._replace(query=urlencode(query)).geturl()
        schema = self.schema
        return url, (f"-c search_path={schema}" if schema else "")

    def with_schema(self, schema: str) -> Location:
        """The same server database, another schema (a fork's place)."""
        parts = urlsplit(self.text)
        query = [(k, v) for k, v in parse_qsl(parts.query) if k != "schema"]
        url = parts._replace(query=urlencode([*query, ("schema", schema)])).geturl()
        return locate(url)

    def without_schema(self) -> Location:
        """The same server database in its default schema."""
        parts = urlsplit(self.text)
        query = [(k, v) for k, v in parse_qsl(parts.query) if k != "schema"]
        return locate(parts._replace(query=urlencode(query)).geturl())

    def beside_folder(self) -> Path:
        """The local folder of the stores kept beside this database (their side files,
        and on SQLite the stores themselves): `<file>.worlds`; for a server database,
        named after the database whatever the schema, as every schema of a database is
        beside every other."""
        if self.on_server and self.schema is not None:
            return self.without_schema().beside_folder()
        return Path(f"{self.local_base()}{BESIDE}")

    def beside(self, name: str) -> Location:
        """The store called `name` kept beside this database: the file
        `<beside_folder>/<name>.db`; on a server, the schema `name` of the same database
        (a lower-case SQL name: ValueError otherwise), whose side files are in
        `beside_folder` too."""
        if self.in_memory:
            raise ValueError("an in-memory database keeps no stores beside it")
        if not self.on_server:
            return locate(str(self.beside_folder() / f"{name}.db"))
        if not _SCHEMA_NAME.fullmatch(name):
            raise ValueError(f"schema {name!r}: a lower-case SQL name is expected")
        return self.with_schema(name)

    def local_base(self) -> str:
        """The path that the database's side files are named after (`<base>.key`, …):
        the file itself for SQLite; for a server database a name made of its user,
        host, port and database under $SANDEX_STATE_DIR (else ~/.sandex), so that every
        process on this machine that opens that database finds the same keys; for a
        named schema, `<that>.worlds/<schema>` (`beside_folder`)."""
        if not self.on_server:
            return self.text
        schema = self.schema
        if schema is not None:
            folder = self.beside_folder()
            folder.mkdir(mode=0o700, exist_ok=True)
            return str(folder / schema)
        parts = urlsplit(self.text)
        query = dict(parse_qsl(parts.query))
        host = parts.hostname or query.get("host", "local")
        port = str(parts.port or query.get("port", "5432"))
        user = parts.username or query.get("user", "")
        dbname = parts.path.lstrip("/") or query.get("dbname", "")
        name = re.sub(r"[^A-Za-z0-9_.@-]+", "_", f"{user}@{host}_{port}_{dbname}").strip("_")
        folder = Path(os.environ.get(STATE_DIR_ENV) or Path.home() / ".sandex")
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return str(folder / f"pg-{name}")


def locate(db: str | Path | Location) -> Location:
    """The location a `--db` names: by its URL scheme (`postgresql://`), else SQLite's
    in-memory names, else a file."""
    if isinstance(db, Location):
        return db
    text = str(db)
    scheme, sep, _ = text.partition("://")
    if sep and scheme in _SCHEMES:
        return Location(text, _SCHEMES[scheme])
    if text == ":memory:" or text.startswith("file::memory:") or "mode=memory" in text:
        return Location(text, "memory")
    return Location(text, "file")


def is_server_url(db: str | Path) -> bool:
    """`db` names a PostgreSQL database (`postgresql://user@host/dbname`)."""
    return locate(db).on_server


def display(db: str | Path) -> str:
    """`db` as it may be shown or logged: a URL without its password."""
    return locate(db).display()


def local_base(db: str | Path) -> str:
    """`Location.local_base` of `db`."""
    return locate(db).local_base()
