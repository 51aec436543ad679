#!/usr/bin/env python3
"""PTX signature diffs (bisectk.ptx) for every GPU variant: good vs bad vs culprits-only.

    python tests/gpu/ptx_report.py [variants/gpu/*.toml] > ptx-report.md

Compile-only (CUTE_DSL_ARCH=sm_90a), so it runs on a machine without a GPU.  The signature gets the
subject's reported `smem_bytes` (the launch's dynamic shared memory) added to the PTX counts.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bisectk import ptx  # noqa: E402
from bisectk.spec import load_spec  # noqa: E402
from tests.gpu.conftest import CompileCache  # noqa: E402
from tests.gpu.evidence import culprits_of  # noqa: E402


def flat(cache, script, argv):
    rec = cache.get(script, argv)
    if rec["exit_code"] != 0:
        return {"compile": f"exit {rec['exit_code']}"}
    f = ptx.signature(cache.ptx(script, argv)).flat()
    f["smem_bytes"] = rec["result"].get("smem_bytes")
    return f


def main(paths) -> int:
    specs = [load_spec(p) for p in (paths or sorted((ROOT / "variants/gpu").glob("*.toml")))]
    with tempfile.TemporaryDirectory() as tmp:
        cache = CompileCache(Path(tmp))
        configs = {}
        for s in specs:
            cul = [c for c in culprits_of(s.description) if c in s.differences()]
            for label, applied in (("good", ()), ("bad", s.differences()), ("culprits", cul)):
                argv = s.argv(s.hybrid(applied))
                configs[(s.name, label)] = (argv[1], argv[2:])
        cache.ensure(configs.values())
        for s in specs:
            g, b, c = (flat(cache, *configs[(s.name, x)]) for x in ("good", "bad", "culprits"))
            cul = ", ".join(culprits_of(s.description))
            print(f"### {s.name} (culprit: {cul})\n")
            rows = {}
            for key, _, _ in ptx.diff(g, b) + ptx.diff(g, c):
                rows[key] = (g.get(key, 0), b.get(key, 0), c.get(key, 0))
            if not rows:
                print("PTX signatures identical (the difference is in address arithmetic or "
                      "run-time values, not in the synchronisation skeleton).\n")
                continue
            print("| PTX signature | good | bad | culprits only |\n|---|---:|---:|---:|")
            for key in sorted(rows, key=ptx._key_order):
                print(f"| `{key}` | " + " | ".join(ptx._cell(v) for v in rows[key]) + " |")
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
