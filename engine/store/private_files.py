"""Files only their owner may read: the database, its key file, what is written beside.

The database holds every tenant's salted secret hashes and the whole history; its key
file holds the token signing key. Both are created mode 0600 whatever the umask (the
mode is set on the open file, not left to the umask), and a file found readable by
others is tightened at open, with a warning. SQLite creates a database's `-wal`,
`-shm` and journal files with the database file's own permissions, so a private
database gets private companions; the writer makes its `-wal` and `-shm` itself, 0600,
before SQLite would (`writable_companions`), since ones made from a read-only database
would be read-only too and keep the writer read-only after the database is writable.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from pathlib import Path
from typing import BinaryIO

from sandex.engine.kernel.logs import get_logger

log = get_logger("sandex.files")

MODE = 0o600
# Files SQLite keeps beside a database, with the database's permissions.
COMPANIONS = ("-wal", "-shm", "-journal")
# The companions the writer makes itself (a `-journal` is never made empty: one that
# exists holds a transaction to roll back).
WRITER_COMPANIONS = COMPANIONS[:2]


def create(path: str | Path) -> bool:
    """Create `path` empty and private if it does not exist; True when it was created.
    Any other failure (a missing directory) is left for the caller's own open to meet
    and report in its words."""
    try:
        _open_private(Path(path)).close()
    except OSError:
        return False
    return True


def tighten(path: str | Path) -> None:
    """Make an existing regular file private, warning when it was not (a database made
    by an older sandex, or copied with the umask's mode): the group's and others' bits
    go, the owner's stay as they are (a read-only file stays read-only). Anything else
    is left alone."""
    try:
        st = os.stat(path)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode) or not st.st_mode & 0o077:
        return
    try:
        os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)
    except OSError as exc:
        log.warning(
            "file readable by others; cannot make it private", path=str(path), error=str(exc)
        )
        return
    log.warning(
        "file was readable by others; made private (owner only)",
        path=str(path),
        was=oct(stat.S_IMODE(st.st_mode)),
    )


def tighten_database(path: str | Path) -> None:
    """`tighten` the database and each companion file SQLite keeps beside it."""
    tighten(path)
    for suffix in COMPANIONS:
        tighten(f"{path}{suffix}")


def prepare_database(path: str | Path) -> list[Path]:
    """Before the writer opens the database at `path`: the database created private, or
    tightened, and `writable_companions`; answers the companions made here (a database
    that then fails to open leaves none, `remove_empty`)."""
    if not create(path):
        tighten_database(path)
    return writable_companions(path)


def writable_companions(path: str | Path) -> list[Path]:
    """The database's `-wal` and `-shm` created private, or made the owner's to read and
    write; answers those created. SQLite opens a companion it cannot write read-only,
    and shares one read-only `-shm` mapping among the process's connections for as
    long as any is open: the writer would stay read-only after the operator made the
    database writable again. A read-only database still refuses every write by its
    own mode."""
    made = []
    for suffix in WRITER_COMPANIONS:
        companion = Path(f"{path}{suffix}")
        if create(companion):
            made.append(companion)
        else:
            _owner_writes(companion)
    return made


def remove_empty(paths: list[Path]) -> None:
    """Remove those of `paths` that are still empty files."""
    for path in paths:
        try:
            if path.stat().st_size == 0:
                path.unlink()
        except OSError:
            pass


def _owner_writes(path: Path) -> None:
    """Give a regular file its owner's read and write bits (left alone when not ours)."""
    try:
        st = os.stat(path)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o600 == 0o600:
        return
    try:
        os.chmod(path, stat.S_IMODE(st.st_mode) | 0o600)
    except OSError as exc:
        log.warning("cannot make the file writable", path=str(path), error=str(exc))


def write(path: str | Path, data: bytes, *, sync: bool = False) -> None:
    """Replace `path` with a private file holding `data`, atomically: a reader sees the
    old content or the new, never a part (a temporary file renamed over it)."""
    target = Path(path)
    tmp = _temporary(target, data, sync)
    try:
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    if sync:
        sync_directory(target.parent)


def write_new(path: str | Path, data: bytes) -> bool:
    """Create `path`, private and durable, holding `data`, unless it exists: True when
    this call made it. Atomic like `write`, and two processes creating the same file at
    once agree on one content (the second's link fails; it reads the first's)."""
    target = Path(path)
    tmp = _temporary(target, data, sync=True)
    try:
        os.link(tmp, target)
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    sync_directory(target.parent)
    return True


def copy(source: str | Path, destination: str | Path) -> None:
    """Copy a file into a new private one (`shutil.copyfile` would give it the umask's
    mode, readable by others, until a chmod)."""
    target = Path(destination)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(source, "rb") as src, _open_private(tmp) as out:
            shutil.copyfileobj(src, out, 1 << 20)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _open_private(path: Path) -> BinaryIO:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, MODE)
    try:
        os.fchmod(fd, MODE)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "wb")


def _temporary(target: Path, data: bytes, sync: bool) -> Path:
    """A new private file beside `target` holding `data`."""
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        with _open_private(tmp) as out:
            out.write(data)
            if sync:
                out.flush()
                os.fsync(out.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def sync_directory(directory: Path) -> None:
    """Make a new or renamed entry of `directory` durable (it lives in the directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
