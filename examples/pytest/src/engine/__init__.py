"""The example project's own trading code. Trading code often has a package named
`engine`: sandex installs only `sandex`, so this one stays the project's own in the same
virtual environment (tests/test_own_engine.py holds it)."""

from engine.paxos import Paxos, limit_order

# what tests/test_own_engine.py checks to know that `import engine` found this package
OWNER = "sandex-example"

__all__ = ["OWNER", "Paxos", "limit_order"]
