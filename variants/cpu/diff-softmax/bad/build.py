"""The build step: import the kernel package (a missing name or a syntax error fails it)."""
import importlib
import sys

try:
    importlib.import_module("kernel")
except Exception as exc:   # noqa: BLE001 -- any import failure is a failed build
    print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
    sys.exit(1)
