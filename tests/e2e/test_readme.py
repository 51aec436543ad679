"""Every code block of README.md runs as written, from a fresh copy of the repository, and prints
what the README shows (tests/e2e/readme.py says how blocks are read and compared)."""
import shutil

import pytest

from tests.e2e import readme as R

BLOCKS = R.blocks()


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """Run every runnable block once, in README order (later blocks use what earlier ones made)."""
    tmp = tmp_path_factory.mktemp("readme")
    copy = R.fresh_copy(tmp / "bisectk")
    env = R.environment(copy, tmp)
    return {b.line: R.run_block(b, copy, env) for b in BLOCKS if b.kind in ("transcript", "bash", "spec")}


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
