"""`python -m sandex.api_adapter.cli`."""

from sandex.api_adapter.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
