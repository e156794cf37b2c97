"""Fuzz campaigns of the importers and the engine."""
