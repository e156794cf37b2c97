"""Errors users see. Each names the file, op, node or tensor involved, never just a code."""

from __future__ import annotations

from python_ref.errors import InputError, ModelFormatError, WasmrtError

__all__ = ["ConversionError", "InputError", "ModelFormatError", "OutOfMemoryError", "ResourceLimitError",
           "UnsupportedOpError", "WasmrtError"]


class UnsupportedOpError(WasmrtError):
    """The source model uses an op (or an op variant) that wasmrt cannot convert."""

    def __init__(self, op_type: str, node: str, source: str, detail: str = "") -> None:
        self.op_type, self.node, self.source, self.detail = op_type, node, source, detail
        msg = f"{source}: unsupported op {op_type!r} (node {node!r})"
        super().__init__(msg + (f": {detail}" if detail else ""))


class OutOfMemoryError(WasmrtError):
    """An engine could not allocate memory, or the model needs more than its memory limit (max_memory)."""


class ResourceLimitError(WasmrtError):
    """A run of the model would take more work than its limit allows (max_work)."""


class ConversionError(WasmrtError):
    """The source model is valid but cannot be converted as it is (for example a dynamic shape left unset)."""
