"""Money in and out: a crypto withdrawal that completes as the world's clock moves, and a
wire deposit (the sandbox's side of it through `sandex_world.client`, sandex's own
client), each in a world of its own."""

from decimal import Decimal

from engine import Paxos

BTC_ADDRESS = "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2"  # a published example address
# the bank a sandbox wire comes from
WIRE = {
    "account_number": "12345678",
    "fiat_account_owner_address": {"country": "USA", "address1": "456 Main Street", "city": "NY"},
    "routing_details": {
        "routing_number_type": "ABA",
        "routing_number": "031302971",
        "bank_name": "Customers Bank",
        "bank_address": {"country": "USA", "city": "New York"},
    },
}


def paxos_for(world):
    return Paxos(world.base_url, world.token_url, world.client_id, world.client_secret)


def test_a_crypto_withdrawal_completes_in_engine_time_and_leaves_the_balance(sandex_world):
    paxos = paxos_for(sandex_world)
    made = paxos.withdraw_crypto(
        {
            "profile_id": sandex_world.profile_id,
            "asset": "BTC",
            "amount": "0.001",  # the sandbox caps one withdrawal at 0.002 BTC
            "crypto_network": "BITCOIN",
            "destination_address": BTC_ADDRESS,
        }
    )
    assert made.status_code == 200, made.text
    assert made.json()["status"] != "COMPLETED"  # it settles later, in engine time

    done = sandex_world.wait_for("transfer", made.json()["id"], "COMPLETED")

    assert Decimal(done["amount"]) == Decimal("0.001")
    left = paxos.available(sandex_world.profile_id, "BTC")
    assert left == Decimal("10") - Decimal(done["total"])  # the amount and its fee


def test_a_wire_to_the_deposit_instructions_is_credited_after_its_delay(sandex_world):
    paxos = paxos_for(sandex_world)
    instructions = paxos.fiat_deposit_instructions(sandex_world.profile_id, "WIRE")
    assert instructions.status_code == 200, instructions.text

    # the bank's side: sandex's own operation, through sandex.client
    sandex_world.client.fiat_deposit(
        "1500.25", "USD", instructions.json()["memo_id"], {"wire": WIRE}
    )
    sandex_world.clock.advance(seconds=86400)

    wires = [t for t in paxos.transfers() if t["type"] == "WIRE_DEPOSIT"]
    # the template's own sandbox deposits are listed too: this wire is the one of 1500.25
    (wire,) = [w for w in wires if w["amount"] == "1500.25"]
    assert wire["status"] == "COMPLETED"
    # credited less the bank's wire fee (30 USD by default)
    assert Decimal(wire["total"]) == Decimal("1500.25") - Decimal(wire["fee"])
    usd = paxos.available(sandex_world.profile_id, "USD")
    assert usd == Decimal("100000") + Decimal(wire["total"])
