"""Bundled models, photos and model builders."""
