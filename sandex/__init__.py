"""sandex's public face for its users' own code: `sandex.testing` (the pytest plugin)
and `sandex.client` (a client for the sandbox's own operations). The server itself lives
in the `engine` and `api_adapter` packages."""
