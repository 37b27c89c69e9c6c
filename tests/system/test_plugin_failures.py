"""What a failed test leaves behind (docs/testing.md, "When a test fails"): example
suites run by pytester in a subprocess fail on purpose; their `.sandex/failures/<test>/`
folder holds the world's events, the scenario of its requests and the command that
replays them, which meets the answer the test failed on, byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.support.server_helpers import Server

pytest_plugins = ["pytester"]

httpx.Client().close()  # see tests/system/test_plugin.py: httpcore imported before pytester

FILES = ["events.jsonl", "replay.sh", "scenario.yaml"]
ORDER_EVENTS = ["order.submitted", "order.open", "order.cancelled"]

# A test that places a GTT order, lets it expire and asserts it is still open (wrong on
# purpose); the answer it failed on is written, as sent, to $SANDEX_SEEN.
EXPIRY = """
import os
import httpx

GTT = {"market": "BTCUSD", "side": "BUY", "type": "LIMIT", "base_amount": "0.1",
       "price": "1000", "time_in_force": "GTT", "expiration_date": "1893603600000"}

def expire(world, token, profile_id):
    auth = {"Authorization": f"Bearer {token}"}
    placed = httpx.post(f"{world.base_url}/profiles/{profile_id}/orders", json=GTT, headers=auth)
    assert placed.status_code == 200, placed.text
    world.clock.advance(seconds=7200)
    r = httpx.get(f"{world.base_url}/profiles/{profile_id}/orders/{placed.json()['id']}",
                  headers=auth)
    with open(os.environ["SANDEX_SEEN"], "wb") as f:
        f.write(r.content)
    assert r.json()["status"] == "OPEN", "wrong on purpose: it expired"
"""


@pytest.fixture
def seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "seen.json"
    monkeypatch.setenv("SANDEX_SEEN", str(path))
    return path


def _folders(pytester: pytest.Pytester) -> dict[str, Path]:
    base = pytester.path / ".sandex" / "failures"
    return {p.name: p for p in base.iterdir()} if base.exists() else {}


def _replays_to(folder: Path, answer: bytes, tmp_path: Path) -> None:
    """The folder's command, run elsewhere, passes, and its last answer is `answer`."""
    assert sorted(p.name for p in folder.iterdir()) == FILES
    script = folder / "replay.sh"
    assert os.access(script, os.X_OK)
    answers = tmp_path / "answers.jsonl"
    done = subprocess.run(
        [str(script), "--answers", str(answers)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    last = json.loads(answers.read_text().splitlines()[-1])
    assert last["body"].encode() == answer and last["status"] == 200


def _no_secrets(folder: Path) -> None:
    for name in FILES:
        text = (folder / name).read_text()
        assert "Bearer" not in text and "access_token" not in text
        assert "client_secret:" not in text


@pytest.mark.slow
def test_a_failed_test_leaves_a_folder_whose_command_replays_its_answer_byte_for_byte(
    pytester: pytest.Pytester, seen: Path, tmp_path: Path
) -> None:
    pytester.makepyfile(
        EXPIRY
        + """
import pytest

def test_expiry(sandex_world):
    expire(sandex_world, sandex_world.token(), sandex_world.profile_id)

def test_passes(sandex_world):
    sandex_world.clock.advance(seconds=1)

@pytest.fixture
def broken(sandex_world):
    sandex_world.deposit("USD", "1")
    raise RuntimeError("a fixture fails on purpose")

def test_setup_fails(broken):
    pass
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1, errors=1)
    folders = _folders(pytester)
    assert len(folders) == 2 and not any("test_passes" in name for name in folders)
    (expiry,) = [f for name, f in folders.items() if "test_expiry" in name]
    (setup,) = [f for name, f in folders.items() if "test_setup_fails" in name]
    answer = seen.read_bytes()
    _replays_to(expiry, answer, tmp_path)
    assert sorted(p.name for p in setup.iterdir()) == FILES
    for folder in folders.values():
        _no_secrets(folder)
    events = [json.loads(line) for line in (expiry / "events.jsonl").read_text().splitlines()]
    # the template's deposits, then the test's order and its expiry, each once
    assert len({e["id"] for e in events}) == len(events)
    types = [e["type"] for e in events]
    assert types == [*["transfer.wire_deposit.completed"] * 3, *ORDER_EVENTS], types
    result.stdout.fnmatch_lines(
        [
            "*world w_* kept: http://127.0.0.1:*/w/w_*/v2",
            f"*folder: *{expiry.name}",
            f"*replay: .sandex/failures/{expiry.name}/replay.sh",
        ]
    )
    assert "console:" not in result.stdout.str()  # this server has no console to show

    # run again: the failed test's folder is replaced, its world a new one
    first = (expiry / "scenario.yaml").read_text().splitlines()[0]
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(
        passed=1, failed=1, errors=1
    )
    assert set(_folders(pytester)) == set(folders)
    assert (expiry / "scenario.yaml").read_text().splitlines()[0] != first
    _replays_to(expiry, seen.read_bytes(), tmp_path)


@pytest.mark.slow
def test_keep_none_deletes_the_world_but_leaves_the_folder(
    pytester: pytest.Pytester, seen: Path, tmp_path: Path, running: Server
) -> None:
    """The world's events and recording are read when the test fails, before its
    teardown deletes it."""
    pytester.makepyfile(
        EXPIRY
        + """
def test_expiry(sandex_world):
    expire(sandex_world, sandex_world.token(), sandex_world.profile_id)
"""
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--sandex-url", running.base, "--sandex-keep", "none"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*world w_*: deleted after the test (--sandex-keep=none)"])
    worlds = httpx.get(f"{running.base}/v2/sandbox/worlds", headers=running.token()).json()
    assert worlds["items"] == []
    (folder,) = _folders(pytester).values()
    _replays_to(folder, seen.read_bytes(), tmp_path)


@pytest.mark.slow
def test_a_user_template_with_its_own_customer_replays_too(
    pytester: pytest.Pytester, seen: Path, tmp_path: Path
) -> None:
    """The template's own customer is made and funded by the template's requests, which
    the scenario holds before the test's: the replay logs that customer in itself."""
    pytester.makepyfile(
        EXPIRY
        + """
import pytest
from sandex.client import Client

TRADER = {}

@pytest.fixture(scope="session")
def sandex_template():
    def build(world):
        made = world.post("/sandbox/customers", {})
        TRADER.update(made)
        trader = Client(world.base_url, world.token_url, made["client_id"], made["client_secret"])
        trader.deposit("USD", "5000")
        trader.close()
    return build

def test_the_traders_order(sandex_world):
    form = {"grant_type": "client_credentials", "client_id": TRADER["client_id"],
            "client_secret": TRADER["client_secret"]}
    token = httpx.post(sandex_world.token_url, data=form).json()["access_token"]
    expire(sandex_world, token, TRADER["profile_id"])
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    (folder,) = _folders(pytester).values()
    scenario = (folder / "scenario.yaml").read_text()
    assert "create_actor: customer1" in scenario and "actor: customer1" in scenario
    _no_secrets(folder)
    _replays_to(folder, seen.read_bytes(), tmp_path)
