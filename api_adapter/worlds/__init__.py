"""Worlds: independent sandboxes served by one server beside its default one (docs/worlds.md)."""
