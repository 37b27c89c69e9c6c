"""What a failed test leaves behind: a folder with its world's events, its requests as a
scenario (its world's recording: the template's requests, then the test's) and the one
command that replays them in a new sandbox (docs/testing.md, "When a test fails")."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson

from sandex.testing._server import SandexServer
from sandex.testing._world import SandexWorld

# The folder's files, said once: what the report names and the tests look for.
EVENTS = "events.jsonl"
SCENARIO = "scenario.yaml"
REPLAY = "replay.sh"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# A folder name's length before its hash: well under a file system's 255 bytes.
_NAME_MOST = 100
_PAGE = 100  # the events API's largest page


def folder_name(nodeid: str) -> str:
    """A test id as one safe folder name: its safe characters (the end of a long one,
    which names the test), then a hash of the whole id, so that two ids that read alike
    once made safe (or cut short) stay apart."""
    readable = _UNSAFE.sub("_", nodeid)[-_NAME_MOST:].strip("._")
    return f"{readable}-{hashlib.sha256(nodeid.encode()).hexdigest()[:8]}"


def folder_of(base: Path, nodeid: str) -> Path:
    return base / folder_name(nodeid)


def forget(base: Path, nodeid: str) -> None:
    """A test that passed: the folder an earlier failure of it left goes."""
    shutil.rmtree(folder_of(base, nodeid), ignore_errors=True)


@dataclass(frozen=True)
class Left:
    """What a failure left: the folder and the command that replays it."""

    folder: Path
    command: str


def leave(base: Path, nodeid: str, server: SandexServer, world: SandexWorld) -> Left:
    """Write the failed test's folder, replacing an earlier run's. The recording is
    read first: reading the events is a request of the world, which it records too."""
    recording = server.api.request("GET", f"/sandbox/worlds/{world.id}/recording")["scenario"]
    events = _events(server, world)
    folder = folder_of(base, nodeid)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, mode=0o700)
    note = (
        f"# The requests of {nodeid} (world {world.id}): its template's, then its own;"
        f" `sandex replay` meets every answer it got.\n"
    )
    (folder / SCENARIO).write_text(note + recording)
    (folder / EVENTS).write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    script = folder / REPLAY
    script.write_text(
        "#!/bin/sh\n"
        f"# Replays {nodeid.replace(chr(10), ' ')} in a new sandbox (docs/testing.md).\n"
        f'exec {shlex.quote(_sandex())} replay "$(dirname "$0")/{SCENARIO}" "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return Left(folder, f"{shlex.quote(str(_shown(script)))}")


def _events(server: SandexServer, world: SandexWorld) -> list[object]:
    """The world's events, oldest first, as the events API answers them, every page."""
    found: list[object] = []
    params: dict[str, str | int] = {"limit": _PAGE}
    while True:
        r = server.http.get(
            f"{world.base_url}/events",
            params=params,
            headers={"Authorization": f"Bearer {world.token()}"},
        )
        r.raise_for_status()
        found += orjson.loads(r.content)["events"]
        cursor = r.headers.get("x-next-page-cursor")
        if not cursor:
            return found
        params = {"limit": _PAGE, "page_cursor": cursor}


def console(server: SandexServer, world: SandexWorld) -> str | None:
    """The world's console address, when the server answers it."""
    url = f"{server.url}/w/{world.id}/console"
    try:
        answers = server.http.get(url, timeout=5).status_code == 200
    except httpx.HTTPError:
        return None
    return url if answers else None


def _sandex() -> str:
    """The `sandex` command of the installation running these tests."""
    beside = Path(sys.executable).parent / "sandex"
    if beside.exists():
        return str(beside)
    return shutil.which("sandex") or "sandex"


def _shown(path: Path) -> Path:
    """`path` relative to the working folder when under it, as a report shows it."""
    try:
        return path.relative_to(Path(os.getcwd()))
    except ValueError:
        return path
