"""Errors users see. Each names the file, op, node or tensor involved, never just a code.

The classes the engines raise, and their error codes, are declared in python_ref/errors.py (the reference engine
raises them too); this module is where users import them from.
"""

from __future__ import annotations

from python_ref.errors import (
    InputError,
    ModelFormatError,
    OutOfMemoryError,
    ResourceLimitError,
    TrainingError,
    UnsupportedOpError,
    WasmrtError,
)

__all__ = ["ConversionError", "InputError", "ModelFormatError", "OutOfMemoryError", "ResourceLimitError",
           "TrainingError", "UnavailableError", "UnsupportedOpError", "WasmrtError"]


class ConversionError(WasmrtError):
    """The source model is valid but cannot be converted as it is (for example a dynamic shape left unset)."""


class UnavailableError(WasmrtError):
    """This Python cannot do it: in Pyodide, what needs CPython (convert, quantize, sparsify, the native and wasmtime
    engines); in CPython, what needs Pyodide (wasmrt.web)."""
