"""Where a warm pass of a Python GPU subject spends its time (run it on the GPU machine).

A warm worker imports torch and cutlass once and then runs each configuration's script in-process.
This bench does the same by hand, without bisectk around it, so the subject's own cost can be set
beside what `bisectk ablate --warm` spends per run: it preloads torch and cutlass (and creates the
CUDA context), then runs the spec's command for one configuration `--repeats` times with
`runpy.run_path`, dropping the script's own modules between runs as the worker does. For each run
it prints the seconds from the start to each `BISECTK_PHASE` line the subject prints, and with
`--profile` the functions that took most of the last run (cProfile, cumulative).

    python bench/gpu_pass_profile.py variants/gpu/gpu-ws-hang-phase.toml --config good --repeats 4 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import runpy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bisectk.run.worker import own_modules  # noqa: E402
from bisectk.spec import load_spec  # noqa: E402

PHASE = "BISECTK_PHASE"


class _Stamps(io.TextIOBase):
    """stderr that keeps the time of each phase line and passes everything through."""

    def __init__(self, inner, t0: float):
        self.inner, self.t0, self.stamps = inner, t0, []

    def write(self, s: str) -> int:
        for line in s.splitlines():
            if line.startswith(PHASE):
                self.stamps.append((line.split()[1], time.perf_counter() - self.t0))
        return self.inner.write(s)

    def flush(self) -> None:
        self.inner.flush()


def run_once(script: Path, argv: list[str], profile: bool) -> tuple[float, list, str]:
    before = set(sys.modules)
    t0 = time.perf_counter()
    stamps = _Stamps(sys.stderr, t0)
    old_err, old_argv, out = sys.stderr, sys.argv, sys.stdout
    sys.stderr, sys.argv, sys.stdout = stamps, [str(script), *argv], io.StringIO()
    prof = cProfile.Profile() if profile else None
    code = 0
    try:
        if prof:
            prof.enable()
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as e:
        code = e.code
    finally:
        if prof:
            prof.disable()
        sys.stderr, sys.argv, sys.stdout = old_err, old_argv, out
    wall = time.perf_counter() - t0
    for name in own_modules(before, [str(script.parent)]):   # the script's own, as the worker drops them
        sys.modules.pop(name, None)
    text = ""
    if prof:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(30)
        text = buf.getvalue()
    return wall, stamps.stamps + [("exit", code)], text


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("spec")
    p.add_argument("--config", default="good")
    p.add_argument("--repeats", type=int, default=4)
    p.add_argument("--profile", action="store_true")
    a = p.parse_args()
    spec = load_spec(a.spec)
    argv = spec.argv(spec.endpoint(a.config))
    script = (spec.cwd / argv[1]).resolve()
    t0 = time.perf_counter()
    import torch
    import cutlass  # noqa: F401
    import cutlass.cute  # noqa: F401
    if torch.cuda.is_available():
        torch.zeros(1, device="cuda")
    print(f"preload {time.perf_counter() - t0:.2f} s", flush=True)
    for i in range(a.repeats):
        wall, stamps, text = run_once(script, argv[2:], a.profile and i == a.repeats - 1)
        marks = " ".join(f"{n}={v:.3f}" if isinstance(v, float) else f"{n}={v}" for n, v in stamps)
        print(f"run {i + 1}: {wall:.3f} s  {marks}", flush=True)
        if text:
            print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
