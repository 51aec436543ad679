"""Seeded variants of variants/cpu/attention-garbage.toml: the same lone culprit (consumer_wgs) among
six benign differences, the factors in a seeded order and the benign values drawn per seed, so the
culprit sits anywhere in the search. Used by tests/e2e/test_garbage.py and bench/garbage_bench.py."""

from __future__ import annotations

import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "kernels" / "cpu" / "attention.py"
BENIGN = {"kv_len": (256, [320, 384, 512]), "tile": (64, [32, 128]), "stages": (2, [3, 4]),
          "heads": (2, [1, 3]), "head_dim": (64, [32, 48]), "seed": (0, [1, 2, 3])}


def garbage_spec(directory: Path, seed: int) -> Path:
    rng = random.Random(seed)
    good = {"consumer_wgs": 1, **{k: v[0] for k, v in BENIGN.items()}}
    bad = {"consumer_wgs": 2, **{k: rng.choice(v[1]) for k, v in BENIGN.items()}}
    order = list(good)
    rng.shuffle(order)
    argv = ["python", str(KERNEL), "--seq-q", "256"]
    for f in order:
        argv += [f"--{f.replace('_', '-')}", "{" + f + "}"]
    table = lambda d: "\n".join(f"{k} = {json.dumps(d[k])}" for k in order)  # noqa: E731
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pyproject.toml").touch()
    spec = directory / f"garbage-{seed}.toml"
    spec.write_text(f'name = "garbage-{seed}"\ndescription = "culprit: consumer_wgs"\n[subject]\n'
                    f"command = {json.dumps(argv)}\n[oracle]\n"
                    "metrics = {rel_err = {max = 1e-3}, cos = {min = 0.9999}}\n"
                    f"[good]\n{table(good)}\n[bad]\n{table(bad)}\n")
    return spec
