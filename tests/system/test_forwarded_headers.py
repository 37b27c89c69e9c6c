"""A forwarding header is not an address: a real `sandex serve` keys its rate limits on
the peer (api_adapter/rate_limits.py), whatever `X-Forwarded-For` or `Forwarded` say."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.server_helpers import Server


def test_a_loopback_client_cannot_take_a_new_budget_by_naming_another_address(
    tmp_path: Path,
) -> None:
    config = tmp_path / "limits.yaml"
    config.write_text("rate_limits:\n  reads: 0.02\n")  # 6 reads per address in 300 s
    server = Server(tmp_path / "f.db", "--config", str(config))
    try:
        statuses = []
        with httpx.Client() as http:
            for i in range(8):
                headers = {"X-Forwarded-For": f"203.0.113.{i}", "Forwarded": f"for=198.51.100.{i}"}
                statuses.append(http.get(f"{server.base}/v2/markets", headers=headers).status_code)
        assert statuses[-1] == 429, statuses
        assert statuses.count(200) <= 6, statuses
    finally:
        server.stop()
