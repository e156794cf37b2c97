"""The command line: argument parsing only; each command calls the library."""

from wasmrt.host import require_cpython

require_cpython("the wasmrt command")

