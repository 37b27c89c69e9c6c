"""Pure ASGI layers in front of the routes."""
