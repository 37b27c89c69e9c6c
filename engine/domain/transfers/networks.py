"""Crypto networks, which assets may travel on them, and address well-formedness checks.

The sandbox has to reject a withdrawal to a malformed address the way the real service
does, *before* any funds move, so the checks here are purely syntactic: format, length,
version bytes and checksums.  Nothing is looked up on-chain and nothing here does I/O or
reads the clock, so the results are deterministic and safe to replay from the event log.

Both checking functions return ``None`` when all is well and a short human-readable
reason otherwise; they never raise, whatever text a client sends.
"""

import base64
import binascii
import re
from collections.abc import Callable, Iterable

import base58
import bech32
from Crypto.Hash import keccak

__all__ = [
    "ASSET_NETWORKS",
    "CRYPTO_NETWORKS",
    "EVM_NETWORKS",
    "FIAT_DEPOSIT_NETWORKS",
    "FIAT_NETWORKS",
    "check_address",
    "check_asset_network",
]

CRYPTO_NETWORKS: tuple[str, ...] = (
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
"""Every network a crypto transfer may name; the order is the one used in messages."""

FIAT_NETWORKS: tuple[str, ...] = ("WIRE", "CBIT", "DBS_ACT", "CUBIX", "SCB")
"""Every fiat network a fiat account or transfer may name."""
FIAT_DEPOSIT_NETWORKS: tuple[str, ...] = ("WIRE", "DBS_ACT", "CUBIX", "SCB")
"""The fiat networks deposit instructions are issued for (no CBIT)."""

ASSET_NETWORKS: dict[str, frozenset[str]] = {
    "BTC": frozenset({"BITCOIN"}),
    "ETH": frozenset({"ETHEREUM", "ARBITRUM_ONE", "BASE", "INK"}),
    "BCH": frozenset({"BITCOIN_CASH"}),
    "LTC": frozenset({"LITECOIN"}),
    "SOL": frozenset({"SOLANA"}),
    "USDP": frozenset({"ETHEREUM", "SOLANA"}),
    "PYUSD": frozenset({"ETHEREUM", "SOLANA", "ARBITRUM_ONE", "STELLAR"}),
    "USDG": frozenset({"ETHEREUM", "SOLANA", "INK", "XLAYER"}),
    "USDC": frozenset({"ETHEREUM", "SOLANA", "POLYGON_POS", "BASE", "ARBITRUM_ONE", "STELLAR"}),
    "PAXG": frozenset({"ETHEREUM"}),
    "AAVE": frozenset({"ETHEREUM"}),
    "LINK": frozenset({"ETHEREUM"}),
    "UNI": frozenset({"ETHEREUM"}),
    "MATIC": frozenset({"ETHEREUM", "POLYGON_POS"}),
}
"""Which networks each asset can be sent or received on (asset codes are upper-case).

Deliberately realistic rather than permissive so that clients exercising the sandbox hit
the same "wrong network" rejections they would in production.
"""


def _in_network_order(networks: Iterable[str]) -> list[str]:
    """Sort network names by their position in CRYPTO_NETWORKS so messages are stable."""
    rank = {name: i for i, name in enumerate(CRYPTO_NETWORKS)}
    return sorted(networks, key=lambda name: (rank.get(name, len(rank)), name))


def check_asset_network(asset: str, network: str) -> str | None:
    """Return None if ``asset`` can travel on ``network``, else a reason naming the options.

    Matching is exact (callers normalise case) so that the domain never guesses.
    """
    if network not in CRYPTO_NETWORKS:
        return f"unknown network {network} (known: {', '.join(CRYPTO_NETWORKS)})"
    supported = ASSET_NETWORKS.get(asset)
    if supported is None:
        return f"asset {asset} cannot be transferred on any crypto network"
    if network not in supported:
        listed = ", ".join(_in_network_order(supported))
        return f"asset {asset} is not supported on network {network} (supported: {listed})"
    return None


# --------------------------------------------------------------------------------------
# Address checks
# --------------------------------------------------------------------------------------

# Longer than any address we accept (bech32 caps at 90); bounds the work done on junk,
# since base58 decoding is quadratic in the input length.
_MAX_ADDRESS_LENGTH = 128

_BASE58_ALPHABET = frozenset(base58.BITCOIN_ALPHABET.decode("ascii"))
_BECH32_CHARSET = bech32.CHARSET
_BECH32_CONST = 1
_BECH32M_CONST = 0x2BC830A3  # BIP-350
_BECH32_MAX_LENGTH = 90  # BIP-173

# Segwit human-readable parts of the networks we know, so a well-formed address for the
# wrong chain gets a "wrong network" reason rather than a confusing character error.
_SEGWIT_HRP_OWNERS = {
    "bc": "Bitcoin",
    "tb": "Bitcoin testnet",
    "ltc": "Litecoin",
    "tltc": "Litecoin testnet",
}

_BTC_BASE58_VERSIONS = frozenset({0x00, 0x05, 0x6F, 0xC4})
_BTC_SEGWIT_HRPS = frozenset({"bc", "tb"})
_LTC_BASE58_VERSIONS = frozenset({0x30, 0x32, 0x05, 0x6F, 0x3A, 0xC4})
_LTC_SEGWIT_HRPS = frozenset({"ltc", "tltc"})

_CASHADDR_PREFIXES = ("bitcoincash", "bchtest")
_CASHADDR_GENERATORS = (0x98F2BC8E61, 0x79B76D99E2, 0xF33E5FB3C4, 0xAE2EABE2A8, 0x1E4F43E470)
_CASHADDR_CHECKSUM_LENGTH = 8

_EVM_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")

_BASE32_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
# First character -> (version byte, payload bytes, total characters, description).
_STRKEY_KINDS = {
    "G": (6 << 3, 32, 56, "account id"),
    "M": (12 << 3, 40, 69, "muxed account"),
}


def _check_base58check(address: str, versions: frozenset[int], coin: str) -> str | None:
    """Validate a legacy base58check address: 1 version byte + 20-byte hash + checksum."""
    bad = next((c for c in address if c not in _BASE58_ALPHABET), None)
    if bad is not None:
        return f"not a valid {coin} address (invalid base58 character {bad!r})"
    try:
        payload = base58.b58decode_check(address)
    except ValueError:
        return "invalid base58check checksum"
    if len(payload) != 21:
        return f"not a valid {coin} address (wrong length)"
    if payload[0] not in versions:
        return f"not a valid {coin} address (unexpected version byte 0x{payload[0]:02x})"
    return None


def _segwit_hrp(address: str) -> str | None:
    """Return the known segwit prefix ``address`` starts with, if any (case-insensitive)."""
    lowered = address.lower()
    for hrp in _SEGWIT_HRP_OWNERS:
        if lowered.startswith(hrp + "1"):
            return hrp
    return None


def _check_segwit(address: str, hrp: str, hrps: frozenset[str], coin: str) -> str | None:
    """Validate a native segwit address per BIP-173 (v0, bech32) and BIP-350 (v1+, bech32m).

    ``hrp`` is the known prefix the address starts with (see ``_segwit_hrp``).  The
    ``bech32`` package only knows the BIP-173 constant, so its primitives are reused and
    the BIP-350 constant and per-version encoding rule are applied here.
    """
    if len(address) > _BECH32_MAX_LENGTH:
        return "segwit address is longer than 90 characters"
    if address != address.lower() and address != address.upper():
        return "mixed-case bech32 address"
    if hrp not in hrps:
        owner = _SEGWIT_HRP_OWNERS[hrp]
        return f"not a valid {coin} address (the {hrp}1 prefix belongs to {owner})"
    data_part = address.lower()[len(hrp) + 1 :]
    if len(data_part) < 6:
        return "bech32 data part is too short"
    bad = next((c for c in data_part if c not in _BECH32_CHARSET), None)
    if bad is not None:
        return f"invalid bech32 character {bad!r}"
    data = [_BECH32_CHARSET.index(c) for c in data_part]
    const = bech32.bech32_polymod(bech32.bech32_hrp_expand(hrp) + data)
    if const not in (_BECH32_CONST, _BECH32M_CONST):
        return "invalid bech32 checksum"
    values = data[:-6]
    if not values:
        return "segwit address has no witness version"
    version = values[0]
    if version > 16:
        return f"invalid witness version {version}"
    program = bech32.convertbits(values[1:], 5, 8, False)
    if program is None:
        return "invalid bech32 padding"
    if not 2 <= len(program) <= 40:
        return f"invalid witness program length {len(program)}"
    if version == 0 and len(program) not in (20, 32):
        return f"invalid witness v0 program length {len(program)} (must be 20 or 32)"
    if version == 0 and const != _BECH32_CONST:
        return "witness v0 address must use a bech32 checksum, not bech32m"
    if version != 0 and const != _BECH32M_CONST:
        return f"witness v{version} address must use a bech32m checksum, not bech32"
    return None


def _check_bitcoin(address: str) -> str | None:
    """Bitcoin legacy (P2PKH/P2SH) and segwit addresses, mainnet *and* testnet.

    Testnet forms (base58 versions 0x6f/0xc4, hrp ``tb``) are accepted on purpose: this is
    a sandbox, and integrators commonly test with testnet addresses they control.
    """
    hrp = _segwit_hrp(address)
    if hrp is not None:
        return _check_segwit(address, hrp, _BTC_SEGWIT_HRPS, "Bitcoin")
    return _check_base58check(address, _BTC_BASE58_VERSIONS, "Bitcoin")


def _check_litecoin(address: str) -> str | None:
    """Litecoin legacy (L/M/3 and testnet m/n/Q/2) and segwit (``ltc``/``tltc``) addresses.

    Testnet forms are accepted for the same sandbox reason as Bitcoin's.
    """
    hrp = _segwit_hrp(address)
    if hrp is not None:
        return _check_segwit(address, hrp, _LTC_SEGWIT_HRPS, "Litecoin")
    return _check_base58check(address, _LTC_BASE58_VERSIONS, "Litecoin")


def _cashaddr_polymod(values: Iterable[int]) -> int:
    """CashAddr BCH-code checksum (40 bits); a valid string yields 0."""
    c = 1
    for d in values:
        c0 = c >> 35
        c = ((c & 0x07FFFFFFFF) << 5) ^ d
        for i, generator in enumerate(_CASHADDR_GENERATORS):
            if (c0 >> i) & 1:
                c ^= generator
    return c ^ 1


def _cashaddr_prefix_expand(prefix: str) -> list[int]:
    """Lower 5 bits of each prefix character plus the zero separator, per the spec."""
    return [ord(ch) & 0x1F for ch in prefix] + [0]


def _check_cashaddr(address: str) -> str | None:
    """Validate a CashAddr address, with or without its ``bitcoincash:``/``bchtest:`` prefix.

    Only 20-byte P2KH (type 0) and P2SH (type 1) hashes are accepted, which covers every
    address a wallet hands out for ordinary transfers.
    """
    if address != address.lower() and address != address.upper():
        return "mixed-case CashAddr address"
    lowered = address.lower()
    if ":" in lowered:
        prefix, _, payload = lowered.partition(":")
        if prefix not in _CASHADDR_PREFIXES:
            return f"unknown CashAddr prefix {prefix!r}"
        prefixes: tuple[str, ...] = (prefix,)
    else:
        payload, prefixes = lowered, _CASHADDR_PREFIXES
    if len(payload) <= _CASHADDR_CHECKSUM_LENGTH:
        return "CashAddr payload is too short"
    bad = next((c for c in payload if c not in _BECH32_CHARSET), None)
    if bad is not None:
        return f"invalid CashAddr character {bad!r}"
    data = [_BECH32_CHARSET.index(c) for c in payload]
    if all(_cashaddr_polymod(_cashaddr_prefix_expand(p) + data) != 0 for p in prefixes):
        return "invalid CashAddr checksum"
    decoded = bech32.convertbits(data[:-_CASHADDR_CHECKSUM_LENGTH], 5, 8, False)
    if not decoded:
        return "invalid CashAddr padding"
    version, hash_bytes = decoded[0], decoded[1:]
    if version & 0x80:
        return "CashAddr version byte has its reserved bit set"
    kind = (version >> 3) & 0x0F
    if kind not in (0, 1):
        return f"unsupported CashAddr address type {kind}"
    if version & 0x07 != 0 or len(hash_bytes) != 20:
        return "CashAddr hash must be 20 bytes"
    return None


def _check_bitcoin_cash(address: str) -> str | None:
    """Bitcoin Cash: CashAddr, or the legacy base58check form shared with Bitcoin.

    Mainnet and testnet are both accepted, as for Bitcoin.  CashAddr payloads start with
    ``q`` (P2KH) or ``p`` (P2SH), which no legacy address does, so the first character
    picks the format.
    """
    if ":" in address or address[:1] in ("q", "p", "Q", "P"):
        return _check_cashaddr(address)
    if _segwit_hrp(address) is not None:
        return "not a valid Bitcoin Cash address (segwit addresses do not exist on Bitcoin Cash)"
    return _check_base58check(address, _BTC_BASE58_VERSIONS, "Bitcoin Cash")


def _eip55_checksummed(hex_digits: str) -> str:
    """Apply EIP-55 casing: upper-case a letter when its keccak-256 nibble is >= 8."""
    lowered = hex_digits.lower()
    digest = keccak.new(digest_bits=256, data=lowered.encode("ascii")).hexdigest()
    return "".join(
        ch.upper() if ch.isalpha() and int(nibble, 16) >= 8 else ch
        for ch, nibble in zip(lowered, digest, strict=False)
    )


def _check_evm(address: str) -> str | None:
    """EVM account address: ``0x`` + 40 hex digits, EIP-55 checksum enforced if mixed-case.

    Single-case addresses carry no checksum by convention, so they are accepted as-is.
    """
    if not address.startswith("0x"):
        return "not a valid EVM address (must start with 0x)"
    if _EVM_ADDRESS.fullmatch(address) is None:
        return "not a valid EVM address (expected 0x followed by 40 hex digits)"
    digits = address[2:]
    if digits == digits.lower() or digits == digits.upper():
        return None
    if _eip55_checksummed(digits) != digits:
        return "invalid EIP-55 checksum (mixed-case address)"
    return None


def _check_solana(address: str) -> str | None:
    """Solana public key: base58 (Bitcoin alphabet) that decodes to exactly 32 bytes.

    Solana addresses carry no checksum, so this is as strict as a syntactic check can be.
    """
    bad = next((c for c in address if c not in _BASE58_ALPHABET), None)
    if bad is not None:
        return f"not a valid Solana address (invalid base58 character {bad!r})"
    if len(base58.b58decode(address)) != 32:
        return "not a valid Solana address (must decode to 32 bytes)"
    return None


def _crc16_xmodem(data: bytes) -> int:
    """CRC-16/XMODEM (poly 0x1021, init 0), the checksum Stellar StrKeys use.

    The standard library's CRC-CCITT routine with a zero seed is exactly this variant.
    """
    return binascii.crc_hqx(data, 0)


def _check_stellar(address: str) -> str | None:
    """Stellar StrKey (SEP-23): ``G...`` account id or ``M...`` muxed account.

    Base32 without padding; version byte, payload, then CRC16-XModem little-endian.  The
    encoding must be canonical (unused trailing bits zero), as SEP-23 requires.
    """
    kind = _STRKEY_KINDS.get(address[:1])
    if kind is None:
        return "not a valid Stellar address (must be a G... account or M... muxed account)"
    version, payload_length, length, description = kind
    if len(address) != length:
        return f"not a valid Stellar {description} (must be {length} characters)"
    bad = next((c for c in address if c not in _BASE32_ALPHABET), None)
    if bad is not None:
        return f"not a valid Stellar address (invalid base32 character {bad!r})"
    try:
        raw = base64.b32decode(address + "=" * (-len(address) % 8))
    except binascii.Error:
        return "not a valid Stellar address (malformed base32)"
    if base64.b32encode(raw).decode("ascii").rstrip("=") != address:
        return "not a valid Stellar address (non-canonical base32 encoding)"
    body, checksum = raw[:-2], raw[-2:]
    if _crc16_xmodem(body).to_bytes(2, "little") != checksum:
        return "invalid StrKey checksum"
    if body[0] != version or len(body) != 1 + payload_length:
        return f"not a valid Stellar {description} (unexpected version byte 0x{body[0]:02x})"
    return None


_ADDRESS_CHECKERS: dict[str, Callable[[str], str | None]] = {
    "BITCOIN": _check_bitcoin,
    "ETHEREUM": _check_evm,
    "BITCOIN_CASH": _check_bitcoin_cash,
    "LITECOIN": _check_litecoin,
    "SOLANA": _check_solana,
    "POLYGON_POS": _check_evm,
    "BASE": _check_evm,
    "ARBITRUM_ONE": _check_evm,
    "STELLAR": _check_stellar,
    "INK": _check_evm,
    "XLAYER": _check_evm,
}
# The networks whose transaction ids are 0x and hex, as their addresses are.
EVM_NETWORKS = frozenset(n for n, check in _ADDRESS_CHECKERS.items() if check is _check_evm)


def check_address(network: str, address: str) -> str | None:
    """Return None if ``address`` is well-formed for ``network``, else a short reason.

    Never raises: client input of any shape becomes a reason, so the API layer can turn
    the result straight into a validation error.  Surrounding whitespace is rejected
    rather than stripped, because silently changing a payee address is worse than asking.
    """
    if not isinstance(network, str) or network not in _ADDRESS_CHECKERS:
        return f"unknown network {network}"
    if not isinstance(address, str):
        return "address must be a string"
    if not address:
        return "address is empty"
    if len(address) > _MAX_ADDRESS_LENGTH:
        return "address is too long"
    if not address.isascii():
        return "address contains non-ASCII characters"
    if address != address.strip():
        return "address has leading or trailing whitespace"
    try:
        return _ADDRESS_CHECKERS[network](address)
    except Exception:  # third-party decoders do not document everything they may raise
        return f"not a valid {network} address"


# --------------------------------------------------------------------------------------
# Address generation (deposit addresses)
# --------------------------------------------------------------------------------------


def _cashaddr_encode(prefix: str, hash_bytes: bytes) -> str:
    """A CashAddr P2KH address (version byte 0, 20-byte hash), checksum per the spec."""
    data = bech32.convertbits([0, *hash_bytes], 8, 5, True)
    assert data is not None
    polymod = _cashaddr_polymod(_cashaddr_prefix_expand(prefix) + data + [0] * 8)
    checksum = [(polymod >> 5 * (7 - i)) & 0x1F for i in range(8)]
    return prefix + ":" + "".join(_BECH32_CHARSET[d] for d in data + checksum)


def _strkey_account(payload: bytes) -> str:
    """A Stellar ``G...`` account id: version byte, 32-byte key, CRC16-XModem (LE)."""
    body = bytes([_STRKEY_KINDS["G"][0]]) + payload
    raw = body + _crc16_xmodem(body).to_bytes(2, "little")
    return base64.b32encode(raw).decode("ascii").rstrip("=")


def make_address(network: str, key: bytes) -> str:
    """A well-formed mainnet address on ``network`` derived from 32 bytes of ``key``.

    Deposit addresses are drawn from the engine's seeded id source, so a replay gives the
    same ones; each form is one ``check_address`` accepts (tests hold it to that).
    """
    if len(key) < 32:
        raise ValueError("an address needs 32 bytes of key")
    if network == "BITCOIN" or network == "LITECOIN":
        address = bech32.encode("bc" if network == "BITCOIN" else "ltc", 0, key[:20])
        assert address is not None
        return address
    if network == "BITCOIN_CASH":
        return _cashaddr_encode("bitcoincash", key[:20])
    if network == "SOLANA":
        return base58.b58encode(key[:32]).decode("ascii")
    if network == "STELLAR":
        return _strkey_account(key[:32])
    if _ADDRESS_CHECKERS.get(network) is _check_evm:
        return "0x" + _eip55_checksummed(key[:20].hex())
    raise ValueError(f"unknown network {network}")
