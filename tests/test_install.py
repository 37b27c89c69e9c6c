"""Installs that work anywhere: the two locks, the Makefile's venv stamps, `make serve`'s
arguments, and (slow) the built wheel in a fresh venv with runtime dependencies only."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", re.M)


def _name(requirement: str) -> str:
    """The normalised project name of a requirement such as `uvicorn[standard]>=0.29`."""
    name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert name, requirement
    return re.sub(r"[-_.]+", "-", name.group()).lower()


def _pins(lock: str) -> dict[str, str]:
    return {_name(n): v for n, v in PIN.findall((ROOT / lock).read_text())}


def _project() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {"runtime": project["dependencies"], **project["optional-dependencies"]}


def test_the_runtime_lock_pins_every_runtime_dependency_and_no_dev_tool() -> None:
    runtime = _pins("requirements.lock")
    declared = _project()
    missing = {_name(r) for r in declared["runtime"]} - set(runtime)
    assert not missing, f"runtime dependencies not in requirements.lock: {missing}"
    dev_only = {_name(r) for r in declared["dev"]} - {_name(r) for r in declared["runtime"]}
    assert not dev_only & set(runtime), "requirements.lock is what `make serve` installs"


def test_the_dev_lock_agrees_with_the_runtime_lock_and_pins_every_dev_tool() -> None:
    runtime, dev = _pins("requirements.lock"), _pins("requirements-dev.lock")
    differ = {n: (v, dev.get(n)) for n, v in runtime.items() if dev.get(n) != v}
    assert not differ, f"the dev lock must keep the runtime pins (run make lock): {differ}"
    missing = {_name(r) for r in _project()["dev"]} - set(dev)
    assert not missing, f"dev dependencies not in requirements-dev.lock: {missing}"
    assert "--constraint=requirements.lock" in (ROOT / "requirements-dev.lock").read_text()


def _make(cwd: Path, *args: str) -> list[str]:
    done = subprocess.run(
        ["make", "-n", *args], cwd=cwd, capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def _installs(lines: list[str]) -> list[str]:
    return [line.split(" -r ")[-1] for line in lines if "pip install" in line and " -r " in line]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_installs_the_runtime_lock_for_serve_and_the_dev_lock_for_test_once_each(
    tmp_path: Path,
) -> None:
    for name in ("Makefile", "pyproject.toml", "requirements.lock", "requirements-dev.lock"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").touch(mode=0o755)

    serve = _make(tmp_path, "serve")
    assert _installs(serve) == ["requirements.lock"], "serve installs the runtime lock only"
    assert serve[-1].split() == [".venv/bin/sandex", "serve", "--db", "sandex.db"]
    assert _installs(_make(tmp_path, "lint")) == ["requirements.lock", "requirements-dev.lock"]

    # Installed: the stamps exist, nothing is installed again.
    for line in _make(tmp_path, "lint"):
        if line.startswith("touch .venv/"):
            (tmp_path / line.split()[-1]).touch()
    assert _installs(_make(tmp_path, "serve", "lint")) == []

    # make serve passes ARGS through to sandex serve.
    passed = _make(tmp_path, "serve", "ARGS=--port 9000 --clock manual")
    assert passed[-1].split()[1:] == [
        "serve",
        "--db",
        "sandex.db",
        "--port",
        "9000",
        "--clock",
        "manual",
    ]

    # A changed dev lock installs it again, not the runtime lock.
    with (tmp_path / "requirements-dev.lock").open("a") as f:
        f.write("# changed\n")
    assert _installs(_make(tmp_path, "serve")) == []
    assert _installs(_make(tmp_path, "lint")) == ["requirements-dev.lock"]

    # A changed runtime lock installs both.
    with (tmp_path / "requirements.lock").open("a") as f:
        f.write("# changed\n")
    assert _installs(_make(tmp_path, "serve")) == ["requirements.lock"]
    assert _installs(_make(tmp_path, "lint")) == ["requirements.lock", "requirements-dev.lock"]
