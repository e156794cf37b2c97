"""Converter tables of the importers: each module of op rules fills its own table through a `@converts("NAME")`
decorator, and its importer merges the tables it uses (no registration by the side effect of an import)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., None])


def registrar(table: dict[str, F]) -> Callable[..., Callable[[F], F]]:
    """A `@converts("NAME", ...)` decorator that records the decorated converter in `table` under each name."""
    def converts(*names: str) -> Callable[[F], F]:
        def register(fn: F) -> F:
            for n in names:
                table[n] = fn
            return fn
        return register
    return converts
