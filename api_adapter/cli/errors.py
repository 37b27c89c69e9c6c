"""One line on stderr, not a traceback: how the command line reports what it cannot do.

A command (or a check it calls) raises `CliError` with the whole message; `reported`,
around `main`, prints it as `sandex: <message>` and turns it into the exit status.
Errors of the environment that no check foresaw (an SQLite error deeper in a file, a
store that cannot be written, a file that cannot be read) are reported the same way.

`sandex_database` is the check of every `--db` that must already hold a sandex
database: run before anything opens the file, so a mistaken path is never created,
locked (`<db>.lock`) or given sandex tables.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from types import TracebackType

# Every SQLite 3 database file starts so (https://sqlite.org/fileformat.html).
SQLITE_HEADER = b"SQLite format 3\x00"
# The columns `sandex events` and a replay read: a table named `events` without them is
# some other program's.
_EVENT_COLUMNS = {"position", "stream", "version", "type", "data"}


# The extras of pyproject.toml's optional-dependencies, by the top-level modules they
# install (tests/unit/test_extras.py holds the two to each other): a command that meets
# one missing says which extra to install, in one line.
EXTRAS = {
    "joblib": "sweep",
    "dask": "sweep",
    "distributed": "sweep",
    "optuna": "sweep",
    "bokeh": "sweep",
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
}


class CliError(Exception):
    """What a command cannot do, said in one line; `code` is the exit status."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def missing_extra(module: str, needed_by: str = "this command") -> str:
    """The one line that says `module` is an extra's, not installed, and how to install it."""
    extra = EXTRAS[module]
    return f"{needed_by} needs {module}, of the {extra} extra: pip install 'sandex[{extra}]'"


def require_extra(extra: str, needed_by: str) -> None:
    """`CliError` (before any work) when a module of `extra` is not installed."""
    from importlib.util import find_spec

    for module, of in EXTRAS.items():
        if of != extra:
            continue
        try:
            found = find_spec(module) is not None
        except ImportError:
            found = False
        if not found:
            raise CliError(missing_extra(module, needed_by))


def sandex_database(path: str) -> str:
    """`path` when it is a sandex database; `CliError` naming what it is otherwise: no
    file, a directory, an unreadable or empty file, not SQLite, or SQLite without the
    sandex event log. Read-only: nothing is created or changed. A PostgreSQL URL must
    reach a database that holds the sandex event log."""
    if _server_url(path):
        return _server_database(path)
    p = Path(path)
    if p.is_dir():
        raise CliError(f"cannot open database {path}: it is a directory")
    if not p.exists():
        raise CliError(f"no database at {path}")
    try:
        with p.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise CliError(f"cannot open database {path}: {exc.strerror}") from None
    if not head:
        raise CliError(f"cannot open database {path}: an empty file, not a sandex database")
    if head != SQLITE_HEADER:
        raise CliError(
            f"cannot open database {path}: not an SQLite file (corrupt, or another kind of file)"
        )
    # imported here: the engine package is not loaded by a command that never checks a --db
    from sandex.engine.read.database_contents import database_contents

    try:
        columns, tables = database_contents(p)
    except sqlite3.DatabaseError as exc:
        raise CliError(f"cannot open database {path}: {exc}") from None
    if not columns >= _EVENT_COLUMNS:
        some = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        held = f"its tables: {some}" if tables else "it has no tables"
        raise CliError(
            f"cannot open database {path}: an SQLite database, but not a sandex one"
            f" (no event log; {held})"
        )
    return path


def _server_url(path: str) -> bool:
    # imported here, as below: only a command that checks a --db loads the engine
    from sandex.engine.read.database_contents import on_server

    return on_server(path)


def _server_database(url: str) -> str:
    """`url` when its database holds the sandex event log; `CliError` otherwise."""
    from sandex.engine.read.database_contents import database_contents, display
    from sandex.engine.store import StoreUnavailable

    try:
        columns, tables = database_contents(url)
    except StoreUnavailable as exc:
        raise CliError(str(exc)) from None
    if not columns >= _EVENT_COLUMNS:
        raise CliError(f"no sandex database at {display(url)} (no event log)")
    return url


def new_or_sandex_database(path: str) -> str:
    """For `sandex serve --db`: a file that does not exist yet (it will be created) or an
    empty one (what `touch` makes; SQLite takes it as a new database), else a sandex
    database as `sandex_database` checks it. Not an in-memory database: the read side
    reads on connections of its own, which cannot reach one (docs/design.md)."""
    if path == ":memory:" or path.startswith("file:"):
        raise CliError(
            f"cannot serve {path}: an in-memory database has no second connection for the"
            " read side; give a file or a PostgreSQL URL"
        )
    if _server_url(path):  # made if empty, checked by the store when it opens
        return path
    p = Path(path)
    if (p.exists() or p.is_symlink()) and not (p.is_file() and p.stat().st_size == 0):
        sandex_database(path)
    return path


class reported:  # noqa: N801 - used as `with reported() as outcome:`
    """Around a command: a `CliError`, or an error of the environment, becomes one line
    on stderr and `outcome.code`; Ctrl-C ends a long command quietly with 130."""

    def __init__(self) -> None:
        self.code = 0
        self.database: str | None = None  # the command's --db, named in an SQLite error

    def __enter__(self) -> reported:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc is None:
            return False
        if isinstance(exc, KeyboardInterrupt):
            self.code = 130
            return True
        message = _message(exc, self.database)
        if message is None:
            return False  # a bug: its traceback is what helps
        print(f"sandex: {message}", file=sys.stderr, flush=True)
        self.code = exc.code if isinstance(exc, CliError) else 2
        return True


def _message(exc: BaseException, database: str | None) -> str | None:
    if isinstance(exc, CliError):
        return str(exc)
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.partition(".")[0]
        if top in EXTRAS:  # imported where it is needed, and not installed
            return missing_extra(top)
    if isinstance(exc, sqlite3.DatabaseError):
        return f"cannot read database {database}: {exc}" if database else f"SQLite: {exc}"
    if isinstance(exc, OSError):
        if exc.strerror and exc.filename:
            return f"{exc.filename}: {exc.strerror}"
        return str(exc) or type(exc).__name__
    # Looked up, not imported: a module that was never imported raised nothing.
    for module, name in (
        ("sandex.engine.store.port", "StoreUnavailable"),  # a store that cannot be written
        (
            "sandex.engine.config.settings_file",
            "SettingsFileError",
        ),  # a --config file (serve, backtest)
    ):
        loaded = sys.modules.get(module)
        if loaded is not None and isinstance(exc, getattr(loaded, name)):
            return str(exc)
    return None
