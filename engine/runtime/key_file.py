"""The deployment's keys: in a file beside the database, never in the database.

`<db>.key`, mode 0600, is JSON: `{"version": 1, "signing_key": hex, "sealing_key":
hex, "id_key": hex}`, 32 random bytes each from the OS CSPRNG (a file written before id
keys has no `id_key`).

- The signing key signs access tokens (HMAC-SHA256, api_adapter/auth.py).
  `sandex keys rotate` replaces it: every token signed before stops working at once,
  in a running server too (`KeyFile.current` notices the new file).
- The sealing key seals webhook secrets in the log (AES-256-GCM, engine/kernel/credentials.py).
  It is never rotated: the log is immutable, and the secrets sealed in it must still
  open. Losing the key file loses it: tokens must be fetched again and webhooks
  registered again.
- The id key keys the ids of a database created without a seed (engine/kernel/ids.py),
  so that no tenant computes another's ids from the public algorithm. It is never
  rotated; a key file made anew gives new ids from then on (they stay unique).

A copy of the database alone (a backup, a file attached to a bug report) therefore
mints no token. The file is created once, atomically and durably, by whichever process
opens a new database first. A database made before key files held its signing key in
`sandex_meta`; the engine moves it here on open (tokens keep working) and erases it
from the database (`SqliteEventStore.erase_meta`). An in-memory database has in-memory
keys.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, replace
from pathlib import Path

import orjson

from sandex.engine.kernel.logs import get_logger
from sandex.engine.store import private_files
from sandex.engine.store.locations import local_base

log = get_logger("sandex.keys")

_VERSION = 1

# The meta value where a database made before key files holds its signing key; moved to
# the key file and erased at the database's first open by a writer.
LEGACY_SIGNING_META = "signing_secret"


@dataclass(frozen=True, slots=True)
class Keys:
    signing: bytes
    sealing: bytes
    ids: bytes | None = None


class KeyFileError(Exception):
    """A key file that cannot be read or is not one."""


def path_for(db_path: str | Path) -> Path | None:
    """Where the keys of the database at `db_path` live (beside the file; for a
    PostgreSQL database, under engine/store/locations.py's state folder); None for an
    in-memory one."""
    text = str(db_path)
    if text == ":memory:" or text.startswith("file::memory:") or "mode=memory" in text:
        return None
    return Path(f"{local_base(text)}.key")


class KeyFile:
    """The keys of one database, as this process last read them."""

    def __init__(self, path: Path | None, keys: Keys) -> None:
        self.path = path
        self._keys = keys
        self._seen = _signature(path) if path is not None else None

    @classmethod
    def open(
        cls,
        db_path: str | Path,
        legacy_signing: str | None = None,
        *,
        new_database: bool = False,
        sync: bool = True,
    ) -> KeyFile:
        """The keys of `db_path`, made now if it has none. `legacy_signing` (hex) is a
        signing key an older sandex kept in the database: a new file takes it over. A
        `new_database` gets new keys even where a key file exists: that one is left
        from a database deleted since, whose tokens must not open the new one; `sync`:
        its keys on the disk before this returns (FULL durability)."""
        path = path_for(db_path)
        if path is None:
            return cls(None, _new_keys(legacy_signing))
        if new_database:
            private_files.write(path, _encode(_new_keys(legacy_signing)), sync=sync)
        else:
            private_files.tighten(path)
            if not path.exists() and private_files.write_new(
                path, _encode(_new_keys(legacy_signing))
            ):
                log.info("key file created", path=str(path))
        return cls(path, _read(path))

    @classmethod
    def existing(cls, db_path: str | Path) -> KeyFile:
        """The keys of `db_path` as they are: KeyFileError when it has none (a reader
        must not make keys that the writer does not have)."""
        path = path_for(db_path)
        if path is None:
            raise KeyFileError("an in-memory database's keys live in its engine only")
        return cls(path, _read(path))

    def current(self) -> Keys:
        """The keys as the file now holds them: reread when the file changed (a rotation
        replaces it, a new inode), a stat per call otherwise. A file gone or unreadable
        meanwhile keeps the keys last read, with a warning."""
        path = self.path
        if path is None:
            return self._keys
        seen = _signature(path)
        if seen != self._seen:
            self._seen = seen
            try:
                self._keys = _read(path)
            except KeyFileError as exc:
                log.warning("key file unreadable; keeping the keys last read", error=str(exc))
        return self._keys

    def rotate(self, *, sync: bool = True) -> Keys:
        """Replace the signing key with a new one, keeping the sealing key; every token
        signed with the old one stops working. `sync`: the new file on the disk before
        this returns (a database whose durability survives a power cut)."""
        keys = self.current() if self.path is None else _read(self.path)
        new = replace(keys, signing=secrets.token_bytes(32))
        if self.path is not None:
            private_files.write(self.path, _encode(new), sync=sync)
            self._seen = _signature(self.path)
        self._keys = new
        return new


def fork(source_db: str | Path, target_db: str | Path, *, sync: bool = True) -> Keys:
    """The key file of `target_db`, a fork of `source_db`: the source's sealing and id
    keys (the secrets sealed in its log still open) under a new signing key (no token
    crosses), written once. `sync` as `KeyFile.rotate`'s."""
    source, target = path_for(source_db), path_for(target_db)
    if source is None or target is None:
        raise KeyFileError("an in-memory database's keys live in its engine only")
    keys = replace(_read(source), signing=secrets.token_bytes(32))
    private_files.write(target, _encode(keys), sync=sync)
    return keys


def _new_keys(legacy_signing: str | None) -> Keys:
    signing = bytes.fromhex(legacy_signing) if legacy_signing else secrets.token_bytes(32)
    return Keys(signing, secrets.token_bytes(32), secrets.token_bytes(32))


def _encode(keys: Keys) -> bytes:
    raw: dict[str, object] = {
        "version": _VERSION,
        "signing_key": keys.signing.hex(),
        "sealing_key": keys.sealing.hex(),
    }
    if keys.ids is not None:
        raw["id_key"] = keys.ids.hex()
    return orjson.dumps(raw)


def _read(path: Path) -> Keys:
    try:
        raw = orjson.loads(path.read_bytes())
        ids = raw.get("id_key")
        return Keys(
            bytes.fromhex(raw["signing_key"]),
            bytes.fromhex(raw["sealing_key"]),
            None if ids is None else bytes.fromhex(ids),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise KeyFileError(f"cannot read key file {path}: {exc}") from exc


def _signature(path: Path) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
