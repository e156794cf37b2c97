"""python_ref: the numpy reference engine and executable specification of every wasmrt op."""

from python_ref.interpreter import Interpreter

__all__ = ["Interpreter"]
