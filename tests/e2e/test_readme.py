"""Every code block of README.md runs as written, from a fresh copy of the repository, and prints
what the README shows (tests/e2e/readme.py says how blocks are read and compared)."""
import re
import shutil

import pytest

from tests.e2e import readme as R

BLOCKS = R.blocks()


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """Run every runnable block once, in README order (later blocks use what earlier ones made),
    in a copy committed to git first; returns (results by block, the copy)."""
    tmp = tmp_path_factory.mktemp("readme")
    copy = R.fresh_copy(tmp / "bisectk")
    R.commit_copy(copy)
    env = R.environment(copy, tmp)
    return {b.line: R.run_block(b, copy, env) for b in BLOCKS if b.kind in ("transcript", "bash", "spec")}, copy


@pytest.fixture(scope="module")
def ran(session):
    return session[0]


def test_following_the_readme_leaves_nothing_untracked(session):
    """Every example writes under out/ (or bisectk's own .bisectk/ ledgers), which .gitignore
    covers: a clone that followed the README is as clean as it was."""
    assert R.untracked(session[1]) == []


def test_the_readmes_counts_come_from_the_files():
    """'N pairs in `variants/X/`' counts the specs there; 'N `gpu-ws-*` pairs' counts that glob."""
    text = R.README.read_text()
    dirs = re.findall(r"(\d+) pairs in\s+`(variants/\w+)/`", text)
    globs = re.findall(r"(\d+) `(gpu-[\w-]+\*)`\s+(?:and\s+)?(?:pairs)?", text)
    assert {d for _, d in dirs} == {"variants/cpu", "variants/gpu"} and len(globs) >= 3
    for n, d in dirs:
        assert int(n) == len(list((R.ROOT / d).glob("*.toml"))), (n, d)
    for n, pattern in globs:
        assert int(n) == len(list((R.ROOT / "variants" / "gpu").glob(pattern + ".toml"))), (n, pattern)


def test_every_block_is_accounted_for():
    unannotated = [b.name for b in BLOCKS if b.kind == "unannotated"]
    assert not unannotated, f"annotate these README blocks (see tests/e2e/readme.py): {unannotated}"
    runnable = [b for b in BLOCKS if b.kind in ("transcript", "bash", "spec")]
    assert len(runnable) >= 10 and sum(len(b.commands()) for b in runnable) >= 20


def test_the_matcher_fails_on_a_wrong_line():
    assert R.matches(["a", "...", "d"], ["a", "b", "c", "d"]) is None
    assert R.matches(["a", "d"], ["a", "b", "d"]) is not None
    assert R.matches(["a", "x"], ["a", "b"]) == "expected line not found (in order): 'x'"
    assert R.normalise("verdict: FAIL crash (SIGSEGV)  (0.07 s)", R.ROOT) == "verdict: FAIL crash (SIGSEGV)  (<t> s)"
    # the confirmation's re-runs of a hang follow the load: one or two re-runs read the same
    one = "stuck at the same places as the bad endpoint: 1 more hang(s) read (348f0b3696 Merge branch 'x')"
    two = ("stuck at the same places as the bad endpoint: 2 more hang(s) read (348f0b3696 Merge branch 'x'; "
           "348f0b3696 Merge branch 'x')")
    assert R.normalise(one, R.ROOT) == R.normalise(two, R.ROOT)
    assert (R.normalise("confidence 1.0000; 26 observations, 23 executed", R.ROOT)
            == R.normalise("confidence 1.0000; 22 observations, 19 executed", R.ROOT))
    assert R.normalise("stuck at -- the bad endpoint: 3 threads", R.ROOT) == "stuck at -- the bad endpoint: 3 threads"
    assert R.normalise("confidence 0.9900; 4 observations", R.ROOT) != R.normalise("confidence 1.0000; 4 observations", R.ROOT)


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.name)
def test_readme_block(block, ran):
    if block.kind == "skip":
        pytest.skip(block.note)
    if block.kind == "text":
        pytest.skip("an illustration, not a command")
    if block.no_gpu and R.has_gpu():
        pytest.skip("shows what a machine without a GPU prints, and this one has a GPU")
    if any("jq " in c.text for c in block.commands()) and shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    problems = [f"$ {r.command}\n{r.problem}" for r in ran[block.line] if r.problem]
    assert not problems, "\n\n".join(problems)
