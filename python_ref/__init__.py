"""python_ref: the numpy reference engine and executable specification of every wasmrt op."""

from __future__ import annotations

from typing import Any

__all__ = ["Interpreter"]


def __getattr__(name: str) -> Any:  # lazy, so that python_ref.ops and .shapes import without the .wrt reader
    if name == "Interpreter":
        from python_ref.interpreter import Interpreter

        return Interpreter
    raise AttributeError(name)
