"""`python -m api_adapter.cli`."""

from api_adapter.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
