"""The adapter never touches a connection: every SELECT is the read side's (engine/read).

Read from the source (ast), so a statement added anywhere in api_adapter fails here
whether or not a test runs it: an SQL keyword in a string, `.execute(` with SQL text,
`.executemany(`/`.executescript(`, a `.conn` attribute, or an import of sqlite3 or
sqlite_utils. `Engine.execute(command)` is the writer's, not SQL: an `.execute(` call is
flagged when its first argument is text. cli/errors.py may import sqlite3 for its
exception classes only (an exception type is not a connection)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ADAPTER = Path(__file__).resolve().parents[2] / "api_adapter"

# Modules that still hold SQL, by path under api_adapter, each with the change that
# removes it. None today: `sandex events` reads the log through engine/read/event_listing.py.
KNOWN: set[str] = set()
# sqlite3 for `except sqlite3.DatabaseError` and the like, nothing else.
EXCEPTIONS_ONLY = {"cli/errors.py"}
# uvicorn's WebSocket protocol, which LimitedWebSocketProtocol extends, names its
# websockets ServerProtocol `self.conn`: that one attribute of `self`, nothing else.
WEBSOCKET_CONN = {"server/connections.py"}

_SQL = re.compile(
    r"\b(SELECT\s|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|PRAGMA\s|CREATE\s+"
    r"(TABLE|INDEX|VIEW)|DROP\s+(TABLE|INDEX)|ATTACH\s+DATABASE|BEGIN\s+IMMEDIATE)"
)
_DRIVERS = {"sqlite3", "sqlite_utils", "apsw", "psycopg", "psycopg_pool"}
_SQL_ONLY_CALLS = {"executemany", "executescript"}


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring nodes: prose may name a statement."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def faults(source: str, name: str) -> list[str]:
    """What in `source` (the module `name` under api_adapter) touches SQL or a connection."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings and _SQL.search(node.value):
                found.append(f"{name}:{line}: SQL text {node.value[:40]!r}")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            modules = (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            )
            for module in modules:
                root = (module or "").split(".")[0]
                if root in _DRIVERS and not (root == "sqlite3" and name in EXCEPTIONS_ONLY):
                    found.append(f"{name}:{line}: imports {module}")
        elif isinstance(node, ast.Attribute):
            if node.attr == "conn":
                value = node.value
                if name in WEBSOCKET_CONN and isinstance(value, ast.Name) and value.id == "self":
                    continue
                found.append(f"{name}:{line}: uses a connection (.conn)")
            elif node.attr in _SQL_ONLY_CALLS:
                found.append(f"{name}:{line}: .{node.attr}(")
            elif (
                isinstance(node.value, ast.Name)
                and node.value.id == "sqlite3"
                and not node.attr.endswith("Error")
            ):
                found.append(f"{name}:{line}: sqlite3.{node.attr}")
        elif isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "execute"
                and node.args
                and _is_text(node.args[0])
            ):
                found.append(f"{name}:{line}: .execute( with SQL text")
    return found


def test_no_module_of_the_adapter_holds_sql_or_a_connection() -> None:
    found = []
    for path in sorted(ADAPTER.rglob("*.py")):
        name = path.relative_to(ADAPTER).as_posix()
        if name not in KNOWN:
            found += faults(path.read_text(), name)
    assert found == []


def test_the_check_finds_each_kind_of_fault() -> None:
    """Each rule can fail: what the adapter held before its SQL moved is found."""
    cases = {
        'rows = q.conn.execute("SELECT name FROM snapshots")': "uses a connection",
        'db.execute(f"SELECT {x} FROM t")': ".execute( with SQL text",
        'v = c.execute("PRAGMA data_version")': "SQL text",
        'c.executescript("x")': ".executescript(",
        "import sqlite3": "imports sqlite3",
        "from sqlite_utils import Database": "imports sqlite_utils",
        "sqlite3.connect(path)": "sqlite3.connect",
    }
    for source, kind in cases.items():
        assert any(kind in f for f in faults(source, "routes/x.py")), source
    # cli/errors.py may import sqlite3 and name its exceptions, not open a connection
    assert faults("import sqlite3", "cli/errors.py") == []
    assert faults("sqlite3.connect(path)", "cli/errors.py") != []
    # the WebSocket protocol's own `self.conn`, and no other connection, in its module
    assert faults("self.conn.fail(1008)", "server/connections.py") == []
    assert faults("q.conn.execute(x)", "server/connections.py") != []
    assert faults("self.conn.execute(x)", "routes/x.py") != []
    allowed = [
        "engine.execute(CreateCustomer())",  # a command, not SQL
        "try:\n    x()\nexcept sqlite3.DatabaseError:\n    pass",
        '"""SELECT is named in a docstring."""',
        'text = "select the profile"',  # prose, lower case
    ]
    for source in allowed:
        assert faults(source, "routes/x.py") == [], source
