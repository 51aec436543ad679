"""`--warm` on diff and bisect (issue 13): hybrids and commits run in warm workers, each importing its
own tree's modules fresh, with answers identical to cold runs; hangs are reported where they stopped."""
import json
import sys

import pytest

from tests.conftest import ROOT, bisectk

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import make_repo  # noqa: E402

MAIN = ("import json, sys, lib\n"
        "print('BISECTK_PHASE launch', flush=True)\n"
        "out = lib.compute()\n"
        "print('BISECTK_RESULT ' + json.dumps({'rel_err': abs(out - 42) / 42}))\n"
        "sys.exit(0 if out == 42 else 1)\n")


def tree(root, values: dict[str, int], note: str = ""):
    root.mkdir(parents=True)
    (root / "main.py").write_text(MAIN)
    (root / "lib.py").write_text("from parts import a, b, c, d\n\ndef compute():\n    return a.V + b.V + c.V + d.V\n")
    (root / "parts").mkdir()
    (root / "parts" / "__init__.py").write_text("")
    for name, v in values.items():
        (root / "parts" / f"{name}.py").write_text(f"# part {name}{note}\nV = {v}\n")


def test_diff_warm_finds_the_culprit_module_and_matches_cold(tmp_path):
    tree(tmp_path / "good", {"a": 10, "b": 11, "c": 12, "d": 9})
    # every part changes (a comment), c's value is the culprit: each hybrid imports another mix
    tree(tmp_path / "bad", {"a": 10, "b": 11, "c": 13, "d": 9}, note=" (retuned)")
    docs = []
    for flags in (["--warm"], []):
        p = bisectk("diff", tmp_path / "good", tmp_path / "bad", "--run", "python main.py", "--json",
                    "--ledger", tmp_path / f"l{len(docs)}.db", *flags, timeout=600)
        assert p.returncode == 0, p.stderr[-2000:]
        docs.append(json.loads(p.stdout))
    culprits = [sorted(h["file"] for h in d["culprit_hunks"]) for d in docs]
    assert culprits[0] == culprits[1]
    assert "parts/c.py" in culprits[0]


def test_bisect_warm_matches_cold_and_names_where_the_hang_stopped(tmp_path):
    shas = make_repo(tmp_path / "r", n=16, culprit=9, broken=())
    docs = []
    for flags in (["--warm"], []):
        p = bisectk("bisect", "--repo", tmp_path / "r", "--good", shas[0], "--bad", shas[-1], "--run",
                    "python kernel.py", "--json", "--ledger", tmp_path / f"b{len(docs)}.db", *flags, timeout=600)
        assert p.returncode == 0, p.stderr[-2000:]
        docs.append(json.loads(p.stdout))
    assert docs[0]["first_bad"]["sha"] == docs[1]["first_bad"]["sha"] == shas[9]
    hang = docs[0]["endpoints"]["bad"]["signature"]
    assert hang.startswith("timeout after")


DTYPE_KERNEL = '''import argparse, json
import torch
ap = argparse.ArgumentParser()
for name in ("ref64", "bug", "tiles", "stages"):
    ap.add_argument(f"--{name}", type=int, default=0)
a = ap.parse_args()
x = torch.arange(64.0)            # the kernel's input: float32 unless the default dtype was changed
if x.dtype != torch.float32:
    print("BISECTK_RESULT " + json.dumps({"rel_err": 1.0, "ok": False, "error": f"input is {x.dtype}"}))
    raise SystemExit(0)
out = x * 2 + (1 if a.bug else 0)
if a.ref64:
    torch.set_default_dtype(torch.float64)     # a double-precision reference, never reset
ref = torch.arange(64.0) * 2
print("BISECTK_RESULT " + json.dumps({"rel_err": float((out.double() - ref.double()).abs().max() / 126)}))
'''

DTYPE_SPEC = '''name = "dtype-leak"
[subject]
command = ["python", "kernel.py", "--ref64", "{ref64}", "--bug", "{bug}", "--tiles", "{tiles}", "--stages", "{stages}"]
[oracle]
metric = "rel_err"
max = 1e-6
[good]
ref64 = 0
bug = 0
tiles = 4
stages = 2
[bad]
ref64 = 1
bug = 1
tiles = 8
stages = 3
'''


def test_ablate_warm_names_the_real_culprit_when_another_factor_changes_torchs_default_dtype(tmp_path):
    """Issue 22: `ref64` sets torch's default dtype to float64 and never resets it (a reference in
    double precision); `bug` is the real culprit. In a warm worker the next run must still start
    in float32, as a fresh process does, so warm names `bug`, as cold does.

    `bug` is the culprit by construction: in a fresh process only it changes the result (ref64 acts
    on the runs after it, in the same process). Two direct cold runs pin that premise; a whole cold
    ablation of this torch subject (~50 s of CI's two cores) would add nothing more."""
    pytest.importorskip("torch")
    (tmp_path / "kernel.py").write_text(DTYPE_KERNEL)
    (tmp_path / "spec.toml").write_text(DTYPE_SPEC)
    (tmp_path / "pyproject.toml").touch()
    for fixed, code in (("ref64=1", 0), ("bug=1", 1)):     # cold, on good: ref64 alone passes, bug alone fails
        p = bisectk("run", tmp_path / "spec.toml", "--config", "good", "--set", fixed, "--ledger",
                    tmp_path / "cold.db", timeout=300)
        assert p.returncode == code, (fixed, p.stdout[-1500:], p.stderr[-1500:])
    p = bisectk("ablate", tmp_path / "spec.toml", "--json", "--ledger", tmp_path / "warm.db", "--warm", timeout=600)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert json.loads(p.stdout)["culprits"] == ["bug"]
