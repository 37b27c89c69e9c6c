"""Tests for sandex.engine.domain.transfers.networks: asset/network support and address well-formedness.

Valid addresses are published examples (BIP-173/BIP-350, the CashAddr spec, EIP-55,
SEP-23, well-known program ids) so the checks are pinned to the real formats rather than
to this module's own encoders.
"""

import base64
import binascii
import time

import base58
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sandex.engine.domain.transfers.networks import (
    ASSET_NETWORKS,
    CRYPTO_NETWORKS,
    check_address,
    check_asset_network,
)

EVM_NETWORKS = ("ETHEREUM", "POLYGON_POS", "BASE", "ARBITRUM_ONE", "INK", "XLAYER")

# Hypothesis must not leave a .hypothesis/ example database in the working tree.
NO_DB = settings(database=None, deadline=None)


# --------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------


def test_crypto_networks_are_the_documented_list() -> None:
    assert CRYPTO_NETWORKS == (
        "BITCOIN",
        "ETHEREUM",
        "BITCOIN_CASH",
        "LITECOIN",
        "SOLANA",
        "POLYGON_POS",
        "BASE",
        "ARBITRUM_ONE",
        "STELLAR",
        "INK",
        "XLAYER",
    )


def test_asset_networks_only_name_known_networks_and_cover_them_all() -> None:
    used: set[str] = set()
    for asset, networks in ASSET_NETWORKS.items():
        assert networks, asset
        assert networks <= set(CRYPTO_NETWORKS), asset
        used |= networks
    assert used == set(CRYPTO_NETWORKS)


@pytest.mark.parametrize(
    ("asset", "networks"),
    [
        ("BTC", {"BITCOIN"}),
        ("ETH", {"ETHEREUM", "ARBITRUM_ONE", "BASE", "INK"}),
        ("BCH", {"BITCOIN_CASH"}),
        ("LTC", {"LITECOIN"}),
        ("SOL", {"SOLANA"}),
        ("USDP", {"ETHEREUM", "SOLANA"}),
        ("PYUSD", {"ETHEREUM", "SOLANA", "ARBITRUM_ONE", "STELLAR"}),
        ("USDG", {"ETHEREUM", "SOLANA", "INK", "XLAYER"}),
        ("USDC", {"ETHEREUM", "SOLANA", "POLYGON_POS", "BASE", "ARBITRUM_ONE", "STELLAR"}),
        ("PAXG", {"ETHEREUM"}),
        ("AAVE", {"ETHEREUM"}),
        ("LINK", {"ETHEREUM"}),
        ("UNI", {"ETHEREUM"}),
        ("MATIC", {"ETHEREUM", "POLYGON_POS"}),
    ],
)
def test_asset_networks_mapping(asset: str, networks: set[str]) -> None:
    assert ASSET_NETWORKS[asset] == frozenset(networks)


# --------------------------------------------------------------------------------------
# check_asset_network
# --------------------------------------------------------------------------------------


def test_every_listed_pair_is_accepted() -> None:
    for asset, networks in ASSET_NETWORKS.items():
        for network in networks:
            assert check_asset_network(asset, network) is None, (asset, network)


def test_unsupported_pair_names_the_supported_networks() -> None:
    assert check_asset_network("BTC", "ETHEREUM") == (
        "asset BTC is not supported on network ETHEREUM (supported: BITCOIN)"
    )


def test_supported_networks_are_listed_in_canonical_order() -> None:
    assert check_asset_network("USDC", "BITCOIN") == (
        "asset USDC is not supported on network BITCOIN "
        "(supported: ETHEREUM, SOLANA, POLYGON_POS, BASE, ARBITRUM_ONE, STELLAR)"
    )


def test_eth_is_not_on_xlayer_but_usdg_is() -> None:
    assert check_asset_network("ETH", "XLAYER") is not None
    assert check_asset_network("USDG", "XLAYER") is None


def test_unknown_asset_and_unknown_network_are_reported() -> None:
    assert "DOGE" in (check_asset_network("DOGE", "ETHEREUM") or "")
    assert "unknown network TRON" in (check_asset_network("USDC", "TRON") or "")


def test_asset_network_matching_is_exact() -> None:
    assert check_asset_network("btc", "BITCOIN") is not None
    assert check_asset_network("BTC", "bitcoin") is not None


# --------------------------------------------------------------------------------------
# Valid addresses
# --------------------------------------------------------------------------------------

VALID_BITCOIN = [
    "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa",  # genesis block coinbase (P2PKH)
    "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2",  # Bitcoin wiki P2PKH example
    "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy",  # Bitcoin wiki P2SH example
    "mrCDrCybB6J1vRfbwM5hemdJz73FwDBC8r",  # testnet P2PKH (0x6f)
    "2NByiBUaEXrhmqAsg7BbLpcQSAQs1EDwt5w",  # testnet P2SH (0xc4)
    # BIP-173 / BIP-350 valid segwit addresses
    "BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4",
    "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4",
    "tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7",
    "tb1qqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesrxh6hy",
    "bc1pw508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7kt5nd6y",
    "BC1SW50QGDZ25J",
    "bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs",
    "tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c",
    "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0",
]

VALID_LITECOIN = [
    "LUd28DgwFmae8thFhaPYHGVmps4XockqfQ",
    "Lg3PX8wRWmApFCoCMAsPF5P9dPHYQHEWKW",
    "MGEW4aba3tnrVtVhGcmoqqHaLt5ymPSLPi",  # P2SH, 0x32
    "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy",  # legacy P2SH, 0x05, still valid on Litecoin
    "mrCDrCybB6J1vRfbwM5hemdJz73FwDBC8r",  # testnet 0x6f
    "ltc1qxtm55gultqzhqzl2p3ks50hg2478y3hehuj6dz",
    "ltc1qx88q7zjd74lxwgkjmmwlqv5pd3vujuehexfttt",
]

VALID_BITCOIN_CASH = [
    # CashAddr spec examples (P2KH and P2SH), with and without prefix, both cases
    "bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a",
    "bitcoincash:qr95sy3j9xwd2ap32xkykttr4cvcu7as4y0qverfuy",
    "bitcoincash:ppm2qsznhks23z7629mms6s4cwef74vcwvn0h829pq",
    "bitcoincash:pr95sy3j9xwd2ap32xkykttr4cvcu7as4yc93ky28e",
    "qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a",
    "BITCOINCASH:QPM2QSZNHKS23Z7629MMS6S4CWEF74VCWVY22GDX6A",
    "QPM2QSZNHKS23Z7629MMS6S4CWEF74VCWVY22GDX6A",
    "bchtest:qpf29h80q4kzprl84jmwhf9du3jsu2tvw509nqz5cy",
    "bchtest:pzq56ujqs245j5fclyyj94veuxfmy8dl8u4qqvjvpx",
    "pzq56ujqs245j5fclyyj94veuxfmy8dl8u4qqvjvpx",
    # the legacy forms of the first spec example pair
    "1BpEi6DfDAUFd7GtittLSdBeYJvcoaVggu",
    "3CWFddi6m4ndiGyKqzYvsFYagqDLPVMTzC",
    "mrCDrCybB6J1vRfbwM5hemdJz73FwDBC8r",
]

VALID_EVM = [
    # EIP-55 spec examples: all caps, all lower, mixed-case checksummed
    "0x52908400098527886E0F7030069857D2E4169EE7",
    "0x8617E340B3D01FA5F11F306F4090FD50E238070D",
    "0xde709f2102306220921060314715629080e2fb77",
    "0x27b1fdb04752bbc536007a920d24acb045561c26",
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
    "0x0000000000000000000000000000000000000000",
]

VALID_SOLANA = [
    "11111111111111111111111111111111",  # system program
    "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",  # SPL token program
    "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",  # USDC mint
]

VALID_STELLAR = [
    # SEP-23 examples
    "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ",
    "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVAAAAAAAAAAAAAJLK",
    "GB5QPGBUTHET6TVSK3L7NJBKZ4J66CMLEABC5ECPNSBPCOAFCZWJ6KSN",
    "MAAAAAAAAAAAJURAAB2X52XFQP6FBXLGT6LWOOWMEXWHEWBDVRZ7V5WH34Y22MPFBHUHY",
]

VALID = (
    [("BITCOIN", a) for a in VALID_BITCOIN]
    + [("LITECOIN", a) for a in VALID_LITECOIN]
    + [("BITCOIN_CASH", a) for a in VALID_BITCOIN_CASH]
    + [(n, a) for n in EVM_NETWORKS for a in VALID_EVM]
    + [("SOLANA", a) for a in VALID_SOLANA]
    + [("STELLAR", a) for a in VALID_STELLAR]
)


@pytest.mark.parametrize(("network", "address"), VALID)
def test_valid_address(network: str, address: str) -> None:
    assert check_address(network, address) is None


def test_every_network_has_valid_examples() -> None:
    assert {network for network, _ in VALID} == set(CRYPTO_NETWORKS)


def _strkey(version: int, payload: bytes) -> str:
    """Independent StrKey encoder: base32(version + payload + CRC16-XModem LE), no padding."""
    body = bytes([version]) + payload
    checksum = binascii.crc_hqx(body, 0).to_bytes(2, "little")
    return base64.b32encode(body + checksum).decode("ascii").rstrip("=")


def test_in_test_strkey_encoder_reproduces_published_addresses() -> None:
    key = base64.b32decode("GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ")[1:33]
    assert _strkey(6 << 3, key) == "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"
    muxed = _strkey(12 << 3, key + (2**63).to_bytes(8, "big"))
    assert muxed == "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVAAAAAAAAAAAAAJLK"
    # id 0 is the canonical twin of SEP-23's "unused trailing bit set" invalid vector
    muxed = _strkey(12 << 3, key + (0).to_bytes(8, "big"))
    assert muxed == "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUAAAAAAAAAAAACJUQ"
    assert check_address("STELLAR", muxed) is None


@NO_DB
@given(key=st.binary(min_size=32, max_size=32), muxed_id=st.integers(0, 2**64 - 1))
def test_any_well_encoded_stellar_key_is_accepted(key: bytes, muxed_id: int) -> None:
    assert check_address("STELLAR", _strkey(6 << 3, key)) is None
    assert check_address("STELLAR", _strkey(12 << 3, key + muxed_id.to_bytes(8, "big"))) is None


@NO_DB
@given(
    hash160=st.binary(min_size=20, max_size=20),
    version=st.sampled_from([0x00, 0x05, 0x6F, 0xC4]),
)
def test_any_base58check_bitcoin_address_is_accepted(hash160: bytes, version: int) -> None:
    address = base58.b58encode_check(bytes([version]) + hash160).decode("ascii")
    assert check_address("BITCOIN", address) is None
    assert check_address("BITCOIN_CASH", address) is None


@NO_DB
@given(key=st.binary(min_size=32, max_size=32))
def test_any_32_byte_solana_key_is_accepted(key: bytes) -> None:
    assert check_address("SOLANA", base58.b58encode(key).decode("ascii")) is None


# --------------------------------------------------------------------------------------
# Invalid addresses
# --------------------------------------------------------------------------------------

INVALID = [
    # --- Bitcoin: one character changed, wrong network, BIP-350 invalid vectors
    ("BITCOIN", "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3", "invalid base58check checksum"),
    ("BITCOIN", "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLz", "invalid base58check checksum"),
    ("BITCOIN", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5", "invalid bech32 checksum"),
    (
        "BITCOIN",
        "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj2",
        "invalid bech32 checksum",
    ),
    ("BITCOIN", "LUd28DgwFmae8thFhaPYHGVmps4XockqfQ", "unexpected version byte 0x30"),
    ("BITCOIN", "ltc1qxtm55gultqzhqzl2p3ks50hg2478y3hehuj6dz", "belongs to Litecoin"),
    ("BITCOIN", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "not a valid Bitcoin address"),
    ("BITCOIN", "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN", "invalid base58check checksum"),
    ("BITCOIN", "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN0", "invalid base58 character '0'"),
    (
        "BITCOIN",
        "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqh2y7hd",
        "must use a bech32m checksum",
    ),
    (
        "BITCOIN",
        "tb1z0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqglt7rf",
        "must use a bech32m checksum",
    ),
    (
        "BITCOIN",
        "BC1S0XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQ54WELL",
        "must use a bech32m checksum",
    ),
    ("BITCOIN", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kemeawh", "must use a bech32 checksum"),
    (
        "BITCOIN",
        "tb1q0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq24jc47",
        "must use a bech32 checksum",
    ),
    (
        "BITCOIN",
        "bc1p38j9r5y49hruaue7wxjce0updqjuyyx0kh56v8s25huc6995vvpql3jow4",
        "invalid bech32 character 'o'",
    ),
    (
        "BITCOIN",
        "BC130XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQ7ZWS8R",
        "invalid witness version 17",
    ),
    ("BITCOIN", "bc1pw5dgrnzv", "invalid witness program length 1"),
    (
        "BITCOIN",
        "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7v8n0nx0muaewav253zgeav",
        "invalid witness program length 41",
    ),
    ("BITCOIN", "BC1QR508D6QEJXTDG4Y5R3ZARVARYV98GJ9P", "invalid witness v0 program length 16"),
    (
        "BITCOIN",
        "tb1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq47Zagq",
        "mixed-case bech32 address",
    ),
    (
        "BITCOIN",
        "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7v07qwwzcrf",
        "invalid bech32 padding",
    ),
    (
        "BITCOIN",
        "tb1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vpggkg4j",
        "invalid bech32 padding",
    ),
    ("BITCOIN", "bc1gmk9yu", "no witness version"),
    ("BITCOIN", "bc1" + "q" * 88, "longer than 90 characters"),
    # --- Litecoin
    ("LITECOIN", "LUd28DgwFmae8thFhaPYHGVmps4XockqfR", "invalid base58check checksum"),
    ("LITECOIN", "ltc1qxtm55gultqzhqzl2p3ks50hg2478y3hehuj6dq", "invalid bech32 checksum"),
    ("LITECOIN", "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2", "unexpected version byte 0x00"),
    ("LITECOIN", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "belongs to Bitcoin"),
    # --- Bitcoin Cash
    (
        "BITCOIN_CASH",
        "bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6c",
        "invalid CashAddr checksum",
    ),
    ("BITCOIN_CASH", "qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6c", "invalid CashAddr checksum"),
    (
        "BITCOIN_CASH",
        "bchtest:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a",
        "invalid CashAddr checksum",
    ),
    (
        "BITCOIN_CASH",
        "bitcoincash:QPM2QSZNHKS23Z7629MMS6S4CWEF74VCWVY22GDX6A",
        "mixed-case CashAddr address",
    ),
    (
        "BITCOIN_CASH",
        "bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6b",
        "invalid CashAddr character 'b'",
    ),
    (
        "BITCOIN_CASH",
        "litecoin:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a",
        "unknown CashAddr prefix",
    ),
    # valid checksum (spec vector) but not a 20-byte P2KH/P2SH payload
    (
        "BITCOIN_CASH",
        "bitcoincash:qpzry9x8gf2tvdw0s3jn54khce6mua7lcw20ayyn",
        "CashAddr hash must be 20 bytes",
    ),
    ("BITCOIN_CASH", "1BpEi6DfDAUFd7GtittLSdBeYJvcoaVggv", "invalid base58check checksum"),
    ("BITCOIN_CASH", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "segwit"),
    ("BITCOIN_CASH", "LUd28DgwFmae8thFhaPYHGVmps4XockqfQ", "unexpected version byte 0x30"),
    # --- EVM
    ("ETHEREUM", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD", "invalid EIP-55 checksum"),
    ("ETHEREUM", "0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "invalid EIP-55 checksum"),
    ("BASE", "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359".swapcase(), "must start with 0x"),
    ("ETHEREUM", "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "must start with 0x"),
    ("ETHEREUM", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe", "40 hex digits"),
    ("ETHEREUM", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed0", "40 hex digits"),
    ("ETHEREUM", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeg", "40 hex digits"),
    ("POLYGON_POS", "11111111111111111111111111111111", "must start with 0x"),
    ("INK", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "must start with 0x"),
    # --- Solana
    ("SOLANA", "1111111111111111111111111111111", "must decode to 32 bytes"),
    ("SOLANA", "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DAA", "must decode to 32 bytes"),
    ("SOLANA", "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5D0", "invalid base58 character '0'"),
    ("SOLANA", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "invalid base58 character"),
    ("SOLANA", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "must decode to 32 bytes"),
    ("SOLANA", "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ", "invalid base58"),
    # --- Stellar (several from SEP-23's invalid list)
    (
        "STELLAR",
        "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGY",
        "invalid StrKey checksum",
    ),
    ("STELLAR", "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZA", "56 characters"),
    ("STELLAR", "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUACUSI", "56 characters"),
    ("STELLAR", "GAAAAAAAACGC6", "56 characters"),
    ("STELLAR", "G47QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVP2I", "version byte"),
    (
        "STELLAR",
        "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUAAAAAAAAAAAACJUR",
        "non-canonical",
    ),
    (
        "STELLAR",
        "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVAAAAAAAAAAAAAJLKA",
        "69 characters",
    ),
    ("STELLAR", "ga7qynf7sowq3glr2bgmzehxavirza4kvwltjjfc7mgxua74p7ujvsgz", "must be a G"),
    ("STELLAR", "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSG1", "base32 character"),
    # a secret seed (S...) has a valid checksum but is not an account
    ("STELLAR", _strkey(18 << 3, bytes(32)), "must be a G"),
    ("STELLAR", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "must be a G"),
]


@pytest.mark.parametrize(("network", "address", "reason"), INVALID)
def test_invalid_address(network: str, address: str, reason: str) -> None:
    result = check_address(network, address)
    assert result is not None
    assert reason in result


@pytest.mark.parametrize("network", CRYPTO_NETWORKS)
def test_empty_address_is_rejected(network: str) -> None:
    assert check_address(network, "") == "address is empty"


@pytest.mark.parametrize("network", CRYPTO_NETWORKS)
def test_unicode_homoglyphs_are_rejected(network: str) -> None:
    # Cyrillic "с" in place of a Latin "c"; also a fully non-Latin string
    assert check_address(network, "bс1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4") is not None
    assert check_address(network, "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAеd") is not None
    assert check_address(network, "ビットコイン") == "address contains non-ASCII characters"


@pytest.mark.parametrize(("network", "address"), [VALID[0], VALID[-1], ("BASE", VALID_EVM[4])])
def test_surrounding_whitespace_is_rejected_not_stripped(network: str, address: str) -> None:
    for padded in (f" {address}", f"{address}\n", f"\t{address} "):
        assert check_address(network, padded) == "address has leading or trailing whitespace"


@pytest.mark.parametrize("network", CRYPTO_NETWORKS)
def test_huge_input_is_rejected_quickly(network: str) -> None:
    start = time.perf_counter()
    assert check_address(network, "1" * 5_000_000) == "address is too long"
    assert time.perf_counter() - start < 1.0


def test_unknown_network_is_a_reason_not_an_error() -> None:
    assert check_address("DOGECOIN", "DH5yaieqoZN36fDVciNyRueRGvGLR3mr7L") == (
        "unknown network DOGECOIN"
    )


def test_non_string_input_is_a_reason_not_an_error() -> None:
    assert check_address("ETHEREUM", None) is not None  # type: ignore[arg-type]
    assert check_address(["ETHEREUM"], VALID_EVM[0]) is not None  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------

# Prefixes that steer random text down each decoder's deeper branches.
_PREFIXES = ["", "1", "3", "m", "2", "L", "M", "G", "q", "p", "0x", "bc1", "tb1", "ltc1"]
_PREFIXES += ["tltc1", "bitcoincash:", "bchtest:", "BC1", "BITCOINCASH:"]
_ADDRESS_LIKE = st.builds(
    str.__add__,
    st.sampled_from(_PREFIXES),
    st.text(alphabet="qpzry9x8gf2tvdw0s3jn54khce6mua7lABCDEFGHJKLMNPQRSTUVWXYZ1=:", max_size=100),
)


@NO_DB
@given(network=st.sampled_from(CRYPTO_NETWORKS), text=st.one_of(st.text(), _ADDRESS_LIKE))
def test_check_address_never_raises(network: str, text: str) -> None:
    result = check_address(network, text)
    assert result is None or (isinstance(result, str) and result)
    # That bare reason is check_address's last-resort catch-all: the decoders themselves
    # should never need it.
    assert result != f"not a valid {network} address"


# Addresses whose formats carry a checksum strong enough to catch any single typo.
_CHECKSUMMED = (
    [("BITCOIN", a) for a in VALID_BITCOIN]
    + [("LITECOIN", a) for a in VALID_LITECOIN]
    + [("BITCOIN_CASH", a) for a in VALID_BITCOIN_CASH]
    + [("STELLAR", a) for a in VALID_STELLAR]
)


@NO_DB
@given(
    case=st.sampled_from(_CHECKSUMMED),
    position=st.integers(min_value=0),
    replacement=st.characters(min_codepoint=33, max_codepoint=126),
)
def test_single_character_typo_is_rejected(
    case: tuple[str, str], position: int, replacement: str
) -> None:
    network, address = case
    index = position % len(address)
    assume(replacement != address[index])
    # Even a lone case flip counts: base58/base32 are case-sensitive, and bech32/CashAddr
    # reject mixed case.
    mutated = address[:index] + replacement + address[index + 1 :]
    assert check_address(network, mutated) is not None
