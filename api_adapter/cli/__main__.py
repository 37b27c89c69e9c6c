"""`python -m api_adapter.cli`."""

from api_adapter.cli.commands import main

if __name__ == "__main__":
    raise SystemExit(main())
