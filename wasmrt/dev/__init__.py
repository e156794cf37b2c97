"""Checkout tooling: the engine build, the packages, the demo server."""
