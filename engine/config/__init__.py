"""Settings: how a sandbox behaves, and the files they are read from."""
