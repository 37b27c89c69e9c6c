"""A throwaway PostgreSQL cluster for the tests: initdb and pg_ctl in a temporary folder,
listening only on a unix socket there (no TCP port to collide on), stopped at the end.

`SANDEX_TEST_POSTGRES=postgresql://…` points the tests at a server of one's own instead
(its user must be allowed to CREATE DATABASE). When neither works, `Unavailable` says
precisely why, and the PostgreSQL tests skip with that reason."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ENV = "SANDEX_TEST_POSTGRES"


class Unavailable(Exception):
    """No PostgreSQL server for the tests, and why."""


def binaries() -> Path:
    """The folder holding initdb and pg_ctl: Debian's /usr/lib/postgresql/*/bin (newest
    version first), else the PATH."""
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version, reverse=True):
        if (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    raise Unavailable(
        "PostgreSQL binaries not found (no /usr/lib/postgresql/*/bin/initdb, no initdb on"
        " PATH): install Debian's `postgresql` package, or set SANDEX_TEST_POSTGRES"
    )


def _version(folder: str) -> int:
    try:
        return int(Path(folder).parent.name)
    except ValueError:
        return 0


class Server:
    """A running server: `url(name)` names a database on it; `create(name)` makes one."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url

    def url(self, dbname: str) -> str:
        import psycopg

        return psycopg.conninfo.make_conninfo(self.admin_url, dbname=dbname)

    def create(self, prefix: str = "t") -> str:
        """A new empty database; its URL."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.uri(name)

    def uri(self, dbname: str) -> str:
        """A `postgresql://` URL of `dbname` on this server (what `--db` takes)."""
        import psycopg

        info = psycopg.conninfo.conninfo_to_dict(self.admin_url)
        host = str(info.get("host", ""))
        user = str(info.get("user", ""))
        port = str(info.get("port", ""))
        if host.startswith("/"):  # a unix socket folder goes in the query
            who = f"{user}@" if user else ""
            return f"postgresql://{who}/{dbname}?host={host}" + (f"&port={port}" if port else "")
        netloc = (f"{user}@" if user else "") + host + (f":{port}" if port else "")
        password = info.get("password")
        if password and user:
            netloc = f"{user}:{password}@" + host + (f":{port}" if port else "")
        return f"postgresql://{netloc}/{dbname}"

    def drop(self, url: str) -> None:
        import psycopg

        name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def server(*, fsync: bool = False) -> Iterator[Server]:
    """The developer's server (SANDEX_TEST_POSTGRES), else a throwaway cluster: with
    `fsync` off (the tests' default: nothing of a test outlives the machine), or on, as a
    server that keeps its commits (what the benchmarks measure)."""
    own = os.environ.get(ENV)
    if own:
        import psycopg

        try:
            psycopg.connect(own, connect_timeout=5).close()
        except psycopg.Error as exc:
            raise Unavailable(f"{ENV}={own!r} cannot be reached: {exc}") from exc
        yield Server(own)
        return
    with _cluster(fsync) as admin_url:
        yield Server(admin_url)


def _as_postgres(command: list[str]) -> list[str]:
    """`command` as the `postgres` user when run as root (initdb refuses root)."""
    if os.geteuid() != 0:
        return command
    try:
        pwd.getpwnam("postgres")
    except KeyError as exc:
        raise Unavailable("running as root and there is no `postgres` user to run initdb") from exc
    runuser = shutil.which("runuser")
    if runuser is None:
        raise Unavailable("running as root and `runuser` is missing to drop to `postgres`")
    return [runuser, "-u", "postgres", "--", *command]


@contextmanager
def _cluster(fsync: bool = False) -> Iterator[str]:
    bin_dir = binaries()
    folder = Path(tempfile.mkdtemp(prefix="sandex-pg-"))
    data = folder / "data"
    log = folder / "server.log"
    try:
        if os.geteuid() == 0:
            entry = pwd.getpwnam("postgres") if _has_postgres_user() else None
            if entry is not None:
                os.chown(folder, entry.pw_uid, entry.pw_gid)
        folder.chmod(0o700)
        _run(
            _as_postgres(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                    "--locale=C",
                ]
            ),
            "initdb",
        )
        options = (
            f"-c listen_addresses='' -c unix_socket_directories='{folder}'"
            + (
                " -c fsync=on -c full_page_writes=on"
                if fsync
                else " -c fsync=off -c full_page_writes=off"
            )
            + " -c synchronous_commit=on"
            " -c max_connections=200 -c shared_buffers=64MB"
        )
        _run(
            _as_postgres(
                [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w"]
                + ["-t", "60", "start"]
            ),
            "pg_ctl start",
            log,
        )
        try:
            yield f"host={folder} user=postgres dbname=postgres"
        finally:
            subprocess.run(
                _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                capture_output=True,
                check=False,
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _has_postgres_user() -> bool:
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return False
    return True


def _run(command: list[str], what: str, log: Path | None = None) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = log.read_text()[-2000:] if log is not None and log.exists() else ""
        raise Unavailable(
            f"{what} failed ({done.returncode}): {done.stderr.strip()[-2000:]} {tail}".strip()
        )
