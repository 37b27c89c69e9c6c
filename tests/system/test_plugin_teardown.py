"""What the pytest plugin does around a test's world that a test does not wait for: the
next world forked ahead while a test runs, and a world deleted on the plugin's own
thread after it (a deletion that fails is said at the session's end)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.server_helpers import Server

pytest_plugins = ["pytester"]

# see tests/system/test_plugin.py: httpx's transport imported before pytester's first test
httpx.Client().close()

# without the dev environment's heavy plugins: the sandex plugin is what is tested
ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:schemathesis")
ARGS += ("-p", "no:anyio")


def test_the_next_world_is_forked_ahead_with_the_same_template_and_settings(
    pytester: pytest.Pytester,
) -> None:
    """On the plugin's own server with a manual clock, the second and third tests take
    worlds forked while the one before ran (named for no test), logged in already; a
    test with other settings gets a world of its own settings, forked for it."""
    pytester.makepyfile(
        """
import pytest

def name_of(server, world):
    return server.api.request("GET", f"/sandbox/worlds/{world.id}")["name"]

@pytest.mark.parametrize("n", range(3))
def test_default(sandex_world, sandex_server, n):
    expected = f"test_default[{n}]" if n == 0 else "sandex test world"
    assert name_of(sandex_server, sandex_world) == expected
    assert sandex_world.deposit("USD", "1")

@pytest.mark.sandex(settings={"world_max_events": 1})
def test_other_settings(sandex_world, sandex_server):
    assert name_of(sandex_server, sandex_world) == "test_other_settings"
    with pytest.raises(Exception, match="world_max_events"):
        sandex_world.deposit("USD", "1")
"""
    )
    result = pytester.runpytest_subprocess(*ARGS)
    result.assert_outcomes(passed=4)


def test_a_world_that_cannot_be_deleted_is_said_at_the_end_not_a_tests_error(
    pytester: pytest.Pytester, running: Server, tmp_path: Path
) -> None:
    """On a server of one's own (`--sandex-url`) every world is deleted before the
    session ends; one refused (a fault armed once on DeleteSandboxWorld) fails no test
    and is named in the summary."""
    admin = running.token()
    armed = httpx.post(
        f"{running.base}/v2/sandbox/faults",
        headers=admin,
        json={
            "match": {"operation": "DeleteSandboxWorld"},
            "action": {"problem": {"status": 503}},
            "times": 1,
        },
    )
    assert armed.status_code in (200, 201), armed.text
    pytester.makepyfile(
        """
import pytest

@pytest.mark.parametrize("n", range(2))
def test_world(sandex_world, n):
    sandex_world.clock.advance(seconds=1)
"""
    )
    result = pytester.runpytest_subprocess(*ARGS, "--sandex-url", running.base)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["sandex: 1 test worlds could not be deleted (first: w_*503*"])
    worlds = httpx.get(f"{running.base}/v2/sandbox/worlds", headers=admin).json()["items"]
    assert len(worlds) == 1  # the refused one; the other and the template are gone
