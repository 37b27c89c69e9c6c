"""A client generated from sandex's own `/openapi.json` (openapi-python-client) parses
every answer of the README's walkthrough into its typed models.

The client is generated at test time from a live `sandex serve`; the README's curl
blocks then run as written, with `curl` on PATH being tests/support/client_curl.py, which makes
each call through the generated client's function for its operation."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.server_helpers import ROOT, Server, readme_blocks

PACKAGE = "sandex_client"


def _generate(doc: Path, out: Path) -> None:
    config = out.parent / "client-config.yaml"
    config.write_text("post_hooks: []\n")  # no formatter run over the generated code
    done = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(doc)]
        + ["--meta", "none", "--output-path", str(out), "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # openapi-python-client says "Warning" for every piece it had to leave out
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr


@pytest.mark.slow
def test_a_generated_client_parses_every_answer_of_the_readme_walkthrough(tmp_path: Path) -> None:
    # The default rate limits, as test_cli's run of the blocks: each block logs in, back
    # to back. The wire example moves the clock, as the README starts that sandbox to.
    server = Server(tmp_path / "client.db", "--clock", "manual")
    try:
        doc = tmp_path / "openapi.json"
        doc.write_text(httpx.get(f"{server.base}/openapi.json").text)
        _generate(doc, tmp_path / PACKAGE)
        shim = tmp_path / "bin" / "curl"
        shim.parent.mkdir()
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tests.support.client_curl "$@"\n')
        shim.chmod(0o755)
        log = tmp_path / "calls.jsonl"
        env = {
            **os.environ,
            "BASE": server.base,
            "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}",
            "SANDEX_CLIENT_PACKAGE": PACKAGE,
            "SANDEX_OPENAPI": str(doc),
            "SANDEX_CLIENT_LOG": str(log),
        }
        blocks = readme_blocks()
        for block in blocks:
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", block],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
    finally:
        server.stop()
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    # every curl of the README went through the client
    assert len(calls) == sum(len(re.findall(r"\bcurl -", b)) for b in blocks)
    operations = {c["operation"] for c in calls}
    assert {"IssueToken", "CreateSandboxDeposit", "GetProfileBalance"} <= operations
    assert {"InitiateSandboxFiatDeposit", "ListTransfers"} <= operations
    for call in calls:
        assert call["status"] == 200, call
        assert call["parsed"] == call.get("documented"), call  # the typed model, not None
        assert call["unset_required"] == [], call
        assert call["round_trip"], call  # every field of the answer parsed, none lost
