"""The Done-means of issue 32, as a user meets it: the example project (examples/pytest),
with its own top-level `engine` package, installed beside the built wheel in a fresh
venv, runs its suite with no conftest code: green under `-n 0` and `-n 2` alike, on a
running `sandex serve` with `--sandex-url` (starting nothing), and its deliberately
failing test fails and leaves its failure folder."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandex.client import Client
from tests.support.server_helpers import Process
from tests.support.wheel_helpers import ROOT, built_wheel, clean_env, fresh_venv, run

EXAMPLE = ROOT / "examples" / "pytest"
# every test of the example's default run (the deliberately failing one is deselected),
# and those that ask for a world (all but test_own_engine's import check)
DEFAULT_RUN = 10
WITH_A_WORLD = 9
FAILING = "tests/test_deliberately_failing.py::test_a_gtt_order_is_still_open_after_its_expiry"


@dataclass
class Project:
    """The example project copied out of the repository, installed in a venv of its own."""

    path: Path
    venv: Path

    def pytest(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = clean_env(PATH=f"{self.venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
        return subprocess.run(
            [str(self.venv / "bin" / "pytest"), "-p", "no:cacheprovider", *args],
            cwd=self.path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The wheel and the example project (and so its `engine`) installed in a fresh venv as
    a user would: pip resolves their dependencies, held to the repository's locks."""
    wheel = built_wheel(tmp_path_factory)
    where = tmp_path_factory.mktemp("example")
    path = where / "project"
    shutil.copytree(
        EXAMPLE, path, ignore=shutil.ignore_patterns("__pycache__", ".sandex", "*.egg-info")
    )
    python = fresh_venv(where / "venv")
    run(
        *(python, "-m", "pip", "install", "-q", "--disable-pip-version-check"),
        *("-c", ROOT / "requirements-dev.lock", wheel, f"{path}[test]"),
        cwd=where,
        env=clean_env(),
    )
    # the project's build leaves nothing the suite could import from instead
    shutil.rmtree(path / "build", ignore_errors=True)
    return Project(path, where / "venv")


def outcomes(report: Path) -> dict[str, str]:
    """Each test of a JUnit XML report and its outcome."""
    found = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = {child.tag for child in case} & {"failure", "error", "skipped"}
        found[f"{case.get('classname')}::{case.get('name')}"] = kinds.pop() if kinds else "passed"
    return found


def kept(stdout: str) -> dict[str, tuple[str, str]]:
    """The report's `kept world W for NODEID: URL` lines, by test: (world, URL)."""
    found = {}
    for line in stdout.splitlines():
        if line.startswith("kept world "):
            world, rest = line.removeprefix("kept world ").split(" for ", 1)
            nodeid, url = rest.rsplit(": ", 1)
            found[nodeid] = (world, url)
    return found


@pytest.mark.slow
def test_the_suite_is_green_alike_under_n0_and_n2_beside_the_users_own_engine(
    project: Project,
) -> None:
    serial = project.pytest("-n", "0", "--junitxml", "n0.xml")
    assert serial.returncode == 0, serial.stdout + serial.stderr
    assert "sandex-" in serial.stdout.split("plugins:", 1)[1].splitlines()[0]  # its entry point
    parallel = project.pytest("-n", "2", "--junitxml", "n2.xml")
    assert parallel.returncode == 0, parallel.stdout + parallel.stderr
    assert "2 workers" in parallel.stdout

    alone, shared = outcomes(project.path / "n0.xml"), outcomes(project.path / "n2.xml")
    assert alone == shared
    assert list(alone.values()) == ["passed"] * DEFAULT_RUN
    # the example's own check that `import engine` is the project's ran and passed
    assert alone["tests.test_own_engine::test_import_engine_finds_this_projects_own_package"]
    assert not (project.path / "conftest.py").exists()
    assert not list(project.path.glob("tests/conftest.py"))


@pytest.mark.slow
def test_sandex_url_runs_the_suite_on_a_running_server_and_starts_nothing(
    project: Project, tmp_path: Path
) -> None:
    server = Process(tmp_path / "serve.db", tmp_path / "serve.log")
    try:
        done = project.pytest("--sandex-url", server.base, "--sandex-keep", "all")
        assert done.returncode == 0, done.stdout + done.stderr
        worlds = kept(done.stdout)
        assert len(worlds) == WITH_A_WORLD
        # every test's world is one of that server's: none came from a server of its own
        assert all(url.startswith(f"{server.base}/w/{w}/") for w, url in worlds.values())
        with Client(
            f"{server.base}/v2", f"{server.base}/oauth2/token", "sandex", "sandex-secret"
        ) as admin:
            listed = {w.id for w in admin.iter_worlds()}
        # the server holds the kept worlds and nothing else: the session's templates are
        # deleted from a server the run did not start
        assert listed == {w for w, _ in worlds.values()}
    finally:
        server.stop()


@pytest.fixture(scope="module")
def failed(project: Project) -> subprocess.CompletedProcess[str]:
    """The deliberately failing test, run alone as its docstring says."""
    shutil.rmtree(project.path / ".sandex", ignore_errors=True)
    return project.pytest("-m", "deliberately_failing")


@pytest.mark.slow
def test_the_deliberately_failing_test_fails_when_asked_for_and_its_world_is_kept(
    failed: subprocess.CompletedProcess[str],
) -> None:
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "1 failed, 10 deselected" in failed.stdout
    assert "assert 'CANCELLED' == 'OPEN'" in failed.stdout
    assert list(kept(failed.stdout)) == [FAILING]


@pytest.mark.slow
def test_the_deliberately_failing_test_leaves_its_folder_and_its_replay_reproduces_it(
    project: Project, failed: subprocess.CompletedProcess[str]
) -> None:
    folders = [p for p in (project.path / ".sandex" / "failures").glob("*") if p.is_dir()]
    assert len(folders) == 1, folders
    (folder,) = folders
    assert {p.name for p in folder.iterdir()} >= {"events.jsonl", "scenario.yaml", "replay.sh"}
    lines = (folder / "events.jsonl").read_text().splitlines()
    assert lines and all(line.startswith("{") for line in lines)
    replay = folder / "replay.sh"
    assert replay.stat().st_mode & stat.S_IXUSR
    env = clean_env(PATH=f"{project.venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    answers = project.path / "answers.jsonl"
    replayed = subprocess.run(
        [str(replay), "--answers", str(answers)],
        cwd=project.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # every step answered as the test was, the one it failed on included ...
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    # ... which is the order read last: CANCELLED, where the test asserted OPEN
    last = json.loads(answers.read_text().splitlines()[-1])
    assert (last["status"], json.loads(last["body"])["status"]) == (200, "CANCELLED")
