"""sandex's public face for a user's own code: `sandex.client` (a client for the sandbox's
own operations). The server itself lives in the `engine` and `api_adapter` packages."""
