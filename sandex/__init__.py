"""sandex's public face for its users' own code: `sandex.testing` (the pytest plugin)
and `sandex.client` (a client for the sandbox's own operations). The server itself is
`sandex.engine` (the event-sourced core) and `sandex.api_adapter` (HTTP, OAuth2, the
command line): the repository's `engine/` and `api_adapter/` folders, installed under
`sandex` so that no user's own `engine` package meets them."""
