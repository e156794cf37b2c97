"""What the C engine's two hosts (native.py through ctypes, wasm.py through wasmtime) share above Model: the handle
of the engine's model and the per-op choice report written once."""

from __future__ import annotations

from typing import Any

from wasmrt.engines.base import Model
from wasmrt.engines.choose import plan_of
from wasmrt.errors import WasmrtError


class CEngineModel(Model):
    """A model loaded by the C engine: _ptr is its handle (None once released)."""

    _ptr: int | None = None

    def plan(self) -> list[dict[str, Any]]:
        """Per op: type, name, kernel, candidates, chosen and measured times (see wasmrt.load's choose)."""
        return plan_of(self)

    def _live(self) -> int:
        if self._ptr is None:
            raise WasmrtError("the model was released")
        return self._ptr
