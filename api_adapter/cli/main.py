"""`sandex`'s entry point: parse, run the verb, report what it cannot do in one line."""

from __future__ import annotations

from collections.abc import Sequence

from sandex.api_adapter.cli.parser import parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `sandex` command; answer its exit status."""
    from sandex.api_adapter.cli.errors import reported

    with reported() as outcome:
        args = parser().parse_args(argv)
        outcome.database = getattr(args, "db", None)
        outcome.code = int(args.func(args))
    return outcome.code


if __name__ == "__main__":
    raise SystemExit(main())
