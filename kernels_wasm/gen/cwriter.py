"""A tiny indented C writer."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class Code:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, *lines: str) -> None:
        for line in lines:
            self.lines.append(("  " * self.depth + line) if line else "")

    @contextmanager
    def block(self, head: str, tail: str = "}") -> Iterator[None]:
        """`head {` ... `}`; a head "else..." joins the previous closing brace; an empty head opens a bare scope."""
        if head.startswith("else") and self.lines and self.lines[-1].strip() == "}":
            self.lines[-1] += f" {head} {{"
        else:
            self(f"{head} {{" if head else "{")
        self.depth += 1
        yield
        self.depth -= 1
        self(tail)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def flt(x: float) -> str:
    """A C float literal that round-trips exactly (hex for non-trivial values)."""
    if x == int(x) and abs(x) < 2**24:
        return f"{x:.1f}f"
    mant, exp = float(x).hex().split("p")
    return f"{mant.rstrip('0').rstrip('.')}p{exp}f"
