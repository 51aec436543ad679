"""`--warm` on diff and bisect (issue 13): hybrids and commits run in warm workers, each importing its
own tree's modules fresh, with answers identical to cold runs; hangs are reported where they stopped."""
import json
import sys

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
