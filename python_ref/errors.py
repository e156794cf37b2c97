"""The errors users see, and the C engine's error codes with the class each one raises: declared once, here.

wasmrt.errors re-exports the classes. ENGINE_ERRORS is the one declaration of the engine's error codes; from it
tools/gen_schema.py generates the enum of kernels_wasm/engine/wasmrt.h (between its GENERATED markers) and
js_bindings/src/error_codes.js (ERROR_CODES and the code -> class map of js_bindings/src/errors.js), and the Python
engines call error_for_code. In every binding an engine error carries the C engine's message verbatim (the Python
engines put the model's path, or "<bytes>", before the message of a failed load); only a code with no message reads
"engine error code N".
"""

from __future__ import annotations

from dataclasses import dataclass


class WasmrtError(Exception):
    """Base of every error wasmrt raises on purpose."""


class ModelFormatError(WasmrtError):
    """A model file is corrupt, truncated, of the wrong kind or internally inconsistent."""


class InputError(WasmrtError):
    """A run was given a wrong input: unknown or missing name, wrong shape or wrong dtype."""


class UnsupportedOpError(WasmrtError):
    """A valid model uses an op, dtype or attribute (or an op variant) that wasmrt cannot convert or run.

    Two forms: UnsupportedOpError(op_type, node, source, detail), as the converters raise it, composes the message
    from its parts; UnsupportedOpError(message), as the engines raise it, takes a message that names the op itself
    (op_type, node and source are then empty)."""

    def __init__(self, op_type: str, node: str | None = None, source: str = "", detail: str = "") -> None:
        if node is None:
            self.op_type, self.node, self.source, self.detail = "", "", "", ""
            super().__init__(op_type)
            return
        self.op_type, self.node, self.source, self.detail = op_type, node, source, detail
        msg = f"{source}: unsupported op {op_type!r} (node {node!r})"
        super().__init__(msg + (f": {detail}" if detail else ""))


class OutOfMemoryError(WasmrtError):
    """An engine could not allocate memory, or the model needs more than its memory limit (max_memory)."""


class ResourceLimitError(WasmrtError):
    """A run of the model would take more work than its limit allows (max_work)."""


class TrainingError(WasmrtError):
    """Training went wrong on valid inputs: the loss or a gradient stopped being finite (no model is saved)."""


@dataclass(frozen=True)
class EngineError:
    """One error code of the C engine: WRT_ERR_<name> in C, ERROR_CODES.<name> in JS."""

    name: str
    code: int
    error: type[WasmrtError]  # the class every binding raises for it
    doc: str


OK = 0  # WRT_OK: no error
ENGINE_ERRORS: tuple[EngineError, ...] = (
    EngineError("FORMAT", 1, ModelFormatError, "the file is not a valid .wrt model"),
    EngineError("UNSUPPORTED", 2, UnsupportedOpError,
                "a valid model using an op, dtype or attribute this engine cannot run"),
    EngineError("NOMEM", 3, OutOfMemoryError, "out of memory, or beyond the model's memory limit (max_memory)"),
    EngineError("INPUT", 4, InputError, "bad argument or bad input data found while running"),
    EngineError("LIMIT", 5, ResourceLimitError, "the model is beyond a resource limit (max_work)"),
    EngineError("TRAINING", 6, TrainingError, "a training step's loss or gradient is not finite"),
)
BY_CODE: dict[int, EngineError] = {e.code: e for e in ENGINE_ERRORS}
assert len(BY_CODE) == len(ENGINE_ERRORS) and OK not in BY_CODE, "duplicate engine error code"


def error_for_code(code: int, message: str, label: str = "") -> WasmrtError:
    """The error users see for an engine error code and the engine's message (WasmrtError for an unknown code);
    label, if given, goes before the message ("label: message")."""
    known = BY_CODE.get(code)
    text = message or f"engine error code {code}"
    return (known.error if known else WasmrtError)(f"{label}: {text}" if label else text)
