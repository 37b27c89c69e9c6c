"""Installs that work anywhere: the two locks, the Makefile's venv stamps, `make serve`'s
arguments, and (slow) the built wheel in a fresh venv with runtime dependencies only."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx
import pytest

from tests.support.server_helpers import SANDEX
from tests.support.wheel_helpers import built_wheel, clean_env, fresh_venv, install_locked, run

ROOT = Path(__file__).resolve().parents[2]
MAKE_ENV = ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "ARGS")
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
    # `make serve` and `make test` install everything: the extras too (docs/development.md)
    served = declared["runtime"] + declared["sweep"] + declared["postgres"]
    missing = {_name(r) for r in served} - set(runtime)
    assert not missing, f"runtime dependencies or extras not in requirements.lock: {missing}"
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
    # Run from `make test`, a make would inherit its level and flags and say more.
    env = {k: v for k, v in os.environ.items() if k not in MAKE_ENV}
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
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
    assert 'make serve ARGS="--port 9000 --clock manual"' in (ROOT / "README.md").read_text()
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


# -- the wheel, in a fresh venv with the runtime lock only ---------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_the_wheel_serves_with_runtime_dependencies_only(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Nothing of the source tree may leak in: no PYTHONPATH, no active venv, another cwd.
    env = clean_env()
    wheel = built_wheel(tmp_path_factory)
    venv = tmp_path / "venv"
    python, sandex = fresh_venv(venv), venv / "bin" / "sandex"
    install_locked(python, wheel, cwd=tmp_path)
    # The runtime lock satisfies every requirement the wheel declares, and every module of
    # the installed package imports (a dev-only import fails here, not in a user's hands);
    # it installs one import name, sandex, and no bare engine or api_adapter.
    run(python, "-m", "pip", "check", cwd=tmp_path, env=env)
    imported = run(
        python,
        "-c",
        "import importlib, importlib.util, pkgutil, sandex\n"
        "for m in pkgutil.walk_packages(sandex.__path__, 'sandex.'):\n"
        "    if m.name != 'sandex.testing.plugin':\n"  # pytest loads it, where pytest is
        "        importlib.import_module(m.name)\n"
        "print([n for n in ('engine', 'api_adapter') if importlib.util.find_spec(n)])\n"
        "print(sandex.__file__)",
        cwd=tmp_path,
        env=env,
    )
    bare, where = imported.splitlines()
    assert bare == "[]" and where.startswith(str(venv)), imported

    assert "serve" in run(sandex, "--help", cwd=tmp_path, env=env)
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert run(sandex, "--version", cwd=tmp_path, env=env).strip() == f"sandex {version}"
    assert "(default: 8080)" in run(sandex, "serve", "--help", cwd=tmp_path, env=env)

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        [sandex, "serve", "--port", str(port), "--db", tmp_path / "s.db", "--log-format", "json"],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, "no answer in 60 s"
            try:
                token = httpx.post(
                    f"{base}/oauth2/token",
                    data={
                        "grant_type": "client_credentials",
                        "client_id": "sandex",
                        "client_secret": "sandex-secret",
                    },
                    timeout=2,
                )
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert token.status_code == 200, token.text
        headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
        profile = httpx.get(f"{base}/v2/profiles/default", headers=headers, timeout=5)
        assert profile.status_code == 200, profile.text
        assert profile.json()["type"] == "DEFAULT"
    finally:
        server.send_signal(signal.SIGINT)
        try:
            code = server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            raise
        log.close()
    assert code == 0, (tmp_path / "serve.log").read_text()


# -- uvx and pipx: `sandex serve` from the wheel in an environment they make ---------------


def _tool_env(home: Path) -> dict[str, str]:
    """uv's and pipx's caches, tools and homes in `home`: nothing of the machine's."""
    folders = {
        "HOME": "home",
        "XDG_CACHE_HOME": "cache",
        "XDG_DATA_HOME": "data",
        "UV_CACHE_DIR": "uv-cache",
        "UV_TOOL_DIR": "uv-tools",
        "PIPX_HOME": "pipx",
        "PIPX_BIN_DIR": "pipx-bin",
        "PIPX_MAN_DIR": "pipx-man",
    }
    for name in folders.values():
        (home / name).mkdir()
    return clean_env(UV_PYTHON_DOWNLOADS="never", **{k: str(home / v) for k, v in folders.items()})


# How each starts a command of a wheel it installs in a fresh environment of its own, with
# this interpreter and the runtime lock's pins (PyPI otherwise, as a user's would).
LAUNCHERS = {
    "uvx": lambda wheel, python: [
        *(Path(sys.executable).parent / "uvx", "--python", python, "--from", wheel),
        *("--constraints", ROOT / "requirements.lock", "sandex"),
    ],
    "pipx": lambda wheel, python: [
        *(Path(sys.executable).parent / "pipx", "run", "--python", python, "--spec", wheel),
        *(f"--pip-args=--constraint={ROOT / 'requirements.lock'}", "sandex"),
    ],
}


@pytest.mark.slow
@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_uvx_and_pipx_start_sandex_serve_from_the_wheel(
    launcher: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    wheel = built_wheel(tmp_path_factory)
    env = _tool_env(tmp_path)
    command = LAUNCHERS[launcher](wheel, os.path.realpath(sys.executable))  # the base python
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [str(c) for c in command]
            + ["serve", "--port", str(port), "--db", str(tmp_path / "s.db")],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            # the first start installs sandex and its dependencies: minutes at most
            waited = subprocess.run(
                [*SANDEX, "wait", "--url", base, "--timeout", "240"],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert waited.returncode == 0, waited.stderr + log_path.read_text()
            health = httpx.get(f"{base}/healthz", timeout=5)
            assert health.status_code == 200, health.text
            version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
            assert health.headers["x-sandex-version"] == version
        finally:
            server.send_signal(signal.SIGINT)  # each hands it on to the sandex it started
            try:
                code = server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                raise
    assert code == 0, log_path.read_text()
    # it ran from an environment the launcher made in the tmp folders, not from this venv
    made = {"uvx": tmp_path / "uv-cache", "pipx": tmp_path / "pipx"}[launcher]
    assert list(made.rglob("sandex/api_adapter/cli/serve.py")), f"no sandex under {made}"
