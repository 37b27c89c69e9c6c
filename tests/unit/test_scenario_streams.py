"""The scenario format's WebSocket steps (`stream`, `expect_messages`, `close_stream`):
their validation, exact and subset expectations with a diff that names each missing,
extra or differing message, and the targets that cannot run them."""

from __future__ import annotations

import pytest

from sandex.api_adapter.scenarios.runner import Runner, ScenarioResult, run_in_process
from sandex.api_adapter.scenarios.targets import InProcess, Remote
from sandex.engine.tools.scenario_file import ScenarioError, load

HEAD = """
version: 1
purpose: streams
settings:
  seed: 19
  clock_start: "2024-03-01T12:00:00Z"
  market_prices: {BTCUSD: "60000"}
  market_levels: 1
actors:
  alice: {}
steps:
"""
DEPOSIT = """
  - request:
      method: POST
      path: /v2/sandbox/profiles/default/deposit
      body: {asset: USD, amount: "100000"}
"""
RESTING = """
  - request:
      method: POST
      path: /v2/profiles/default/orders
      body: {market: BTCUSD, side: BUY, type: LIMIT, price: "%s", base_amount: "0.5"}
"""


def _run(steps: str) -> ScenarioResult:
    return run_in_process(load(HEAD + steps, "streams.yaml"))


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ("[{stream: {name: b, path: /v2/markets}}]", "a feed is /marketdata[/{market}] or"),
        ("[{stream: {name: 1b, path: /marketdata}}]", "stream name '1b' invalid"),
        ("[{stream: {name: b}}]", "steps.stream.path: Field required"),
        ("[{expect_messages: {stream: b, messages: []}}]", "step 1: no open stream named b"),
        ("[{close_stream: b}]", "step 1: no open stream named b (open it with a stream step)"),
        (
            "[{stream: {name: b, path: /marketdata}}, {stream: {name: b, path: /marketdata}}]",
            "step 2: a stream named b is open already",
        ),
        (
            "[{stream: {name: b, path: /marketdata}}, {close_stream: b}, {close_stream: b}]",
            "step 3: no open stream named b",
        ),
        (
            "[{stream: {name: b, path: /marketdata}},"
            " {expect_messages: {stream: b, messages: [], match: all}}]",
            "steps.expect_messages.match",
        ),
        (
            "[{stream: {name: b, path: /marketdata}}, {expect_messages: {stream: b, messages: [], msgs: []}}]",
            "steps.expect_messages.msgs: Extra inputs are not permitted",
        ),
    ],
)
def test_a_bad_stream_step_is_refused_naming_the_place(steps: str, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        load(f"version: 1\npurpose: x\nsteps: {steps}\n", "bad.yaml")
    assert str(caught.value).startswith("bad.yaml")
    assert message in str(caught.value)


def test_a_name_closed_may_be_opened_again() -> None:
    text = (
        "version: 1\npurpose: x\nsteps: [{stream: {name: b, path: /marketdata/BTCUSD}},"
        " {close_stream: b}, {stream: {name: b, path: /executiondata}}]\n"
    )
    assert len(load(text).steps) == 3


def test_messages_are_those_since_the_last_check_in_order_in_subset_mode() -> None:
    result = _run(
        DEPOSIT
        + """
  - stream: {name: book, path: /marketdata/BTCUSD}
  - expect_messages: {stream: book, messages: [{type: SNAPSHOT, final_snapshot: true}]}
"""
        + RESTING % "50000.00"
        + RESTING % "50001.00"
        + """
  - expect_messages:
      stream: book
      messages:
        - {side: BUY, price: "50000.00", amount: "0.50000000"}
        - {side: BUY, price: "50001.00"}
  - expect_messages: {stream: book, messages: []}
"""
    )
    assert result.ok, [(s.label, s.diffs) for s in result.failed]
    assert [s.label for s in result.steps][2:4] == [
        "stream book /marketdata/BTCUSD",
        "expect_messages book (1)",
    ]


def test_a_missing_an_extra_and_a_differing_message_each_fail_with_a_clear_diff() -> None:
    result = _run(
        DEPOSIT
        + """
  - stream: {name: book, path: /marketdata/BTCUSD}
  - note: the snapshot is not expected
    expect_messages: {stream: book, messages: []}
"""
        + RESTING % "50000.00"
        + """
  - note: one more than came, and a wrong amount
    expect_messages:
      stream: book
      match: exact
      messages:
        - {type: UPDATE, market: BTCUSD, side: BUY, price: "50000.00", amount: "0.5"}
        - {type: UPDATE, market: BTCUSD, side: BUY, price: "49999.00", amount: "1"}
  - note: what failed was taken; nothing is left over
    expect_messages: {stream: book, messages: []}
"""
    )
    failed = {s.index: s.diffs for s in result.failed}
    assert sorted(failed) == [4, 6]
    extra = failed[4]
    assert extra[0] == "expected 0 messages, got 1"
    assert extra[1].startswith('message 1: unexpected {"type": "SNAPSHOT", "market": "BTCUSD"')
    assert failed[6] == [
        "expected 2 messages, got 1",
        'message 1: amount: expected "0.5", got "0.50000000"',
        "message 2: missing (expected"
        ' {"type": "UPDATE", "market": "BTCUSD", "side": "BUY", "price": "49999.00",'
        ' "amount": "1"})',
    ]


def test_a_trade_feed_gets_the_crossing_orders_trades_and_the_last_trade_on_opening() -> None:
    result = _run(
        DEPOSIT
        + """
  - stream: {name: trades, path: /executiondata/BTCUSD}
  - request:
      method: POST
      path: /v2/profiles/default/orders
      body: {market: BTCUSD, side: BUY, type: MARKET, quote_amount: "1000"}
  - stream: {name: late, path: /executiondata}
  - expect_messages:
      stream: trades
      messages: [{market: BTCUSD, match_number: "100000000001"}]
      ignore: [price, amount]
  - expect_messages: {stream: late, messages: [{match_number: "100000000001"}]}
  - close_stream: late
  - close_stream: trades
"""
    )
    assert result.ok, [(s.label, s.diffs) for s in result.failed]


def test_an_unknown_market_fails_the_stream_step_with_the_servers_reason() -> None:
    result = _run("  - stream: {name: book, path: /marketdata/NOPEUSD}\n")
    assert [s.diffs for s in result.failed] == [
        ["the server closed stream book at once: 1008 unknown market: NOPEUSD"]
    ]


def test_streams_left_open_are_closed_at_the_end() -> None:
    scenario = load(HEAD + "  - stream: {name: book, path: /marketdata}\n")
    target = InProcess(scenario.settings_model())
    try:
        result = Runner(scenario, target).run()
        assert result.ok, [(s.label, s.diffs) for s in result.failed]
        assert target.engine.market_feed.subscribers() == 0
    finally:
        target.close()


def test_against_a_served_sandbox_a_stream_step_is_refused_saying_why() -> None:
    scenario = load(HEAD + "  - stream: {name: book, path: /marketdata/BTCUSD}\n")
    local = InProcess(scenario.settings_model())
    remote = Remote("http://sandex", "sandex", "sandex-secret")
    remote.client.close()
    remote.client = local.client  # a served sandbox's HTTP, without a server
    try:
        result = Runner(scenario, remote).run()
    finally:
        local.close()
    assert [s.index for s in result.failed] == [2]
    assert result.failed[0].diffs[0].startswith("stream steps run in-process only")
