"""Errors shared by the reference engine and the wasmrt package (wasmrt.errors re-exports them)."""

from __future__ import annotations


class WasmrtError(Exception):
    """Base of every error wasmrt raises on purpose."""


class ModelFormatError(WasmrtError):
    """A model file is corrupt, truncated, of the wrong kind or internally inconsistent."""


class InputError(WasmrtError):
    """A run was given a wrong input: unknown or missing name, wrong shape or wrong dtype."""
