"""The listening socket and connection limits of `sandex serve`."""
