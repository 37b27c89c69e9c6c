"""The pytest plugin's in-process server (sandex/testing/_server.py, `start_thread`)
writes no line to the standard output a user's test captures: a world deleted by the
plugin's background Deleter while another test ran once landed in that test's capsys
(tests/api/test_sandbox_faults.py, test_the_cli_prints_the_page)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator

import pytest
import structlog

from sandex.testing import SandexServer


def test_a_world_deleted_on_the_plugins_server_writes_nothing_to_a_tests_stdout(
    sandex_server: SandexServer,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The line goes to `logging` instead, which pytest keeps with the test."""
    made = sandex_server.create_world()
    capsys.readouterr()
    with caplog.at_level(logging.INFO, logger="sandex"):
        sandex_server.delete_world(made["id"])  # the server logs "world deleted"
    assert capsys.readouterr().out == ""
    assert "world deleted" in caplog.text


@pytest.fixture
def suite_logging() -> Iterator[None]:
    """The process's structlog configuration as the test found it, again after it."""
    was, saved = structlog.is_configured(), structlog.get_config()
    yield
    if was:
        structlog.configure(**saved)
    else:
        structlog.reset_defaults()


def test_the_suites_own_log_lines_stay_where_the_suite_sends_them(
    sandex_server: SandexServer, capsys: pytest.CaptureFixture[str], suite_logging: None
) -> None:
    """The plugin leaves the process's structlog configuration alone: a suite that
    prints its lines to standard output still finds its own there, and not sandex's."""
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stdout))
    made = sandex_server.create_world()
    structlog.get_logger("a_users_suite").info("the suite's own line")
    sandex_server.delete_world(made["id"])
    out = capsys.readouterr().out
    assert "the suite's own line" in out
    assert "world deleted" not in out
