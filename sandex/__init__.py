"""sandex's public face for its users' own code: `sandex.testing` (the pytest plugin)."""
