"""The commit space on small generated repositories: ranges, errors, metadata, and the commit DAG
of list_graph on octopus, criss-cross and twice-merged histories, searched and checked against
real `git bisect run` (worktrees: test_worktrees.py)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bisectk.errors import BisectkError
from bisectk.outcome import Outcome
from bisectk.search.dag import Dag
from bisectk.search.history import SearchOptions, search_dag
from bisectk.spaces.commits import SpaceError, describe, list_graph
from tests.conftest import ROOT
from tests.fixtures.gitrepo import make_dag_repo
from tests.search.dags import CRISS_CROSS, OCTOPUS, TWICE_MERGED

ENV = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "T",
       "GIT_COMMITTER_EMAIL": "t@x", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=ENV, check=True, text=True,
                          capture_output=True).stdout.strip()


def commit(repo: Path, name: str, text: str, subject: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Linear history c0..c7; c5 adds kernel.py; the checkout is left dirty with a stash."""
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    for i in range(8):
        commit(r, "state.txt", f"{i}\n", f"c{i}")
        if i == 5:
            commit(r, "kernel.py", "print('hang')\n", "c5b add kernel")
    (r / "state.txt").write_text("stashed edit\n")
    git(r, "stash", "-q")
    (r / "state.txt").write_text("uncommitted edit\n")
    (r / "staged.txt").write_text("staged\n")
    git(r, "add", "staged.txt")
    (r / "untracked.bin").write_bytes(b"\x00\x01")
    return r


def fingerprint(repo: Path) -> str:
    """HEAD, index, refs, stash list and every working-tree file, hashed."""
    h = hashlib.sha256()
    for rel in ("HEAD", "index"):
        h.update((repo / ".git" / rel).read_bytes())
    h.update(git(repo, "stash", "list", "--format=%H %gs").encode())
    h.update(git(repo, "for-each-ref").encode())
    for path in sorted(p for p in repo.rglob("*") if ".git" not in p.relative_to(repo).parts):
        st = path.lstat()
        h.update(f"{path.relative_to(repo)} {st.st_mode}".encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def worktrees(repo: Path) -> list[str]:
    return [line for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def test_graph_is_good_to_bad_in_order(repo):
    shas = git(repo, "rev-list", "--reverse", "HEAD").split()
    graph = list_graph(repo, "HEAD~8", "HEAD")
    assert graph.good.sha == shas[-9] and [c.sha for c in graph.commits] == shas[-8:]
    assert graph[0].subject == "c1" and graph[len(graph) - 1].subject == "c7"
    assert graph.index(shas[-1][:8]) == 7 and graph[3].author == "T <t@x>" and graph[3].date[:2] == "20"


def test_subjects_and_authors_in_a_declared_encoding_are_read_as_written(tmp_path):
    """A repository with i18n.commitEncoding latin1 (its commits say `encoding latin1`): git's log
    wrote their messages in latin1, read as UTF-8, so 'café' was shown 'caf\ufffd' in every report."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    git(r, "config", "i18n.commitEncoding", "latin1")
    for i in range(3):
        (r / "v.txt").write_text(f"{i}\n")
        git(r, "add", "v.txt")
        subprocess.run(["git", "commit", "-q", "-F", "-"], cwd=r, check=True, input=f"c{i} caf\xe9".encode("latin1"),
                       env={**ENV, "GIT_AUTHOR_NAME": "Jos\xe9".encode("latin1").decode("utf-8", "surrogateescape")})
    graph = list_graph(r, "HEAD~2", "HEAD")
    assert [c.subject for c in graph.commits] == ["c1 caf\xe9", "c2 caf\xe9"]
    assert describe(r, graph.bad.sha).author.startswith("Jos\xe9 <")


def test_describe_gives_file_names_as_they_are_not_in_gits_quoted_form(tmp_path):
    """diff-tree without -z quotes a name with a byte past ASCII, a quote or a newline: the first
    bad commit's `files` (--json, the report) held '"caf\\303\\251.py"', quotes and escapes in the name."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "a.txt").write_text("0\n")
    git(r, "add", ".")
    git(r, "commit", "-q", "-m", "c0")
    names = ["caf\xe9.py", 'say "hi".txt', "two\nlines.txt", " lead.txt"]
    for n in names:
        (r / n).write_text("x\n")
    git(r, "add", ".")
    git(r, "commit", "-q", "-m", "c1")
    assert sorted(describe(r, git(r, "rev-parse", "HEAD")).files) == sorted(names)


def test_describe_keeps_the_bytes_of_a_file_name_that_is_not_utf8(tmp_path):
    """A name's byte that is not UTF-8 was decoded as U+FFFD: `k\\xfe.py` and `k\\xff.py` were both
    'k\\ufffd.py' in the first bad commit's files (--json, terminal, reports), where diff and
    triage's hunks name the byte (`k\\xff.py`). Each name is now the file system's decoding."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "a.txt").write_text("0\n")
    git(r, "add", ".")
    git(r, "commit", "-q", "-m", "c0")
    names = [os.fsdecode(b"k\xfe.py"), os.fsdecode(b"k\xff.py")]
    for n in names:
        (r / n).write_text("x\n")
    git(r, "add", ".")
    git(r, "commit", "-q", "-m", "c1")
    assert sorted(describe(r, git(r, "rev-parse", "HEAD")).files) == sorted(names)

def test_describe_lists_changed_files(repo):
    graph = list_graph(repo, "HEAD~8", "HEAD")
    kernel = next(i for i, c in enumerate(graph.commits) if c.subject.startswith("c5b"))
    assert graph.describe(kernel).files == ("kernel.py",)
    assert describe(repo, graph.good.sha).files == ("state.txt",)
    root = git(repo, "rev-list", "--max-parents=0", "HEAD")
    assert describe(repo, root).files == ("state.txt",) and "files" in describe(repo, root).to_dict()


def test_first_parent_skips_merged_side_commits(tmp_path):
    r = tmp_path / "m"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    good = commit(r, "a.txt", "0", "base")
    git(r, "checkout", "-q", "-b", "side")
    side = commit(r, "b.txt", "1", "side 1")
    commit(r, "b.txt", "2", "side 2")
    git(r, "checkout", "-q", "main")
    commit(r, "a.txt", "1", "main 1")
    git(r, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    bad = commit(r, "a.txt", "2", "main 2")
    full = [c.subject for c in list_graph(r, good, bad).commits]
    assert set(full) == {"side 1", "side 2", "main 1", "merge side", "main 2"} and full[-1] == "main 2"
    mainline = list_graph(r, good, bad, first_parent=True)
    assert [c.subject for c in mainline.commits] == ["main 1", "merge side", "main 2"]
    assert mainline.good.subject == "base" and mainline.parents == ((), (0,), (1,))
    off = list_graph(r, side, bad, first_parent=True)     # a good on the merged branch, as git takes it
    assert [c.subject for c in off.commits] == ["main 1", "merge side", "main 2"] and off.parents == ((), (0,), (1,))


@pytest.mark.parametrize("good,bad,match", [
    ("nope", "HEAD", "--good 'nope' is not a commit"),
    ("HEAD~3", "v9", "--bad 'v9' is not a commit"),
    ("HEAD", "HEAD~3", "is not an ancestor of --bad"),
    ("HEAD", "main", "same commit"),
    ("--all", "HEAD", "not a revision"),
    # rev-parse reads a leading ^ as "not reachable from" and prints ^SHA: a range's half, no commit
    # (git bisect: "'^main' does not appear to be a valid revision")
    ("^HEAD~3", "HEAD", "--good '\\^HEAD~3' is not a commit"),
    ("HEAD~3", "^HEAD", "--bad '\\^HEAD' is not a commit"),
])
def test_bad_ranges_are_one_line_errors(repo, good, bad, match):
    with pytest.raises(SpaceError, match=match) as info:
        list_graph(repo, good, bad)
    assert isinstance(info.value, ValueError) and isinstance(info.value, BisectkError)
    assert "\n" not in str(info.value)


def test_bad_repository_paths(tmp_path):
    with pytest.raises(SpaceError, match="does not exist"):
        list_graph(tmp_path / "missing", "a", "b")
    with pytest.raises(SpaceError, match="not inside a git repository"):
        list_graph(tmp_path, "a", "b")


def test_a_repo_given_by_its_git_directory_names_the_work_tree_to_give(repo, tmp_path):
    """`--repo proj/.git` (the repository taken for its .git): 'is not inside a git repository's
    work tree', and no word of the work tree it is the git directory of, which git knows."""
    for given in (repo / ".git", repo / ".git" / "refs" / "tags"):
        with pytest.raises(SpaceError, match=rf"{re.escape(str(given))} is not inside a git repository's work tree: "
                                             rf"it is in the git directory of {re.escape(str(repo))}; give --repo "
                                             rf"{re.escape(str(repo))}$"):
            list_graph(given, "HEAD~3", "HEAD")
    spaced = tmp_path / "my proj"
    git(tmp_path, "clone", "-q", str(repo), str(spaced))
    with pytest.raises(SpaceError, match=rf"give --repo '{re.escape(str(spaced))}'$"):     # pastes into sh
        list_graph(spaced / ".git", "HEAD~3", "HEAD")
    bare = tmp_path / "b.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    assert list_graph(bare, "HEAD~3", "HEAD").commits      # a bare repository is bisected as it is


def test_a_name_that_reads_as_no_commit_says_why_where_git_knows(repo):
    """`git checkout --orphan fresh` (or a fresh `git init`) and HEAD is on a branch with no
    commit: the line said `--bad 'HEAD' is not a commit`, as for a typo. `main@{u}` without an
    upstream and `main@{30}` past the reflog's end were said the same way, where git says which."""
    with pytest.raises(SpaceError, match=r"--bad 'main@\{u\}' is not a commit in .*: no upstream configured "
                                         r"for branch 'main'$"):
        list_graph(repo, "HEAD~3", "main@{u}")
    with pytest.raises(SpaceError, match=r"--good 'main@\{30\}' is not a commit in .*: log for 'main' only has"):
        list_graph(repo, "main@{30}", "HEAD")
    with pytest.raises(SpaceError, match=r"--good 'nope' is not a commit in \S+$"):   # a typo: nothing to add
        list_graph(repo, "nope", "HEAD")
    git(repo, "checkout", "-q", "--orphan", "fresh")
    for bad in ("HEAD", "HEAD~1", "@"):
        with pytest.raises(SpaceError, match=rf"--bad '{re.escape(bad)}' is not a commit in .*: HEAD is on the "
                                             r"branch 'fresh', which has no commit yet; name a commit$"):
            list_graph(repo, "main~3", bad)
    assert list_graph(repo, "main~3", "main").commits       # the branch's commits are there all the same


# -- the commit DAG (list_graph) ----------------------------------------------------------------

SHAPES = {"octopus": OCTOPUS, "criss-cross": CRISS_CROSS, "twice-merged": TWICE_MERGED}


def bug_oracle(repo: Path, graph):
    """FAIL where the commit's tree holds the BUG marker: what the test script of git bisect reads."""
    def oracle(i: int) -> Outcome:
        probe = subprocess.run(["git", "cat-file", "-e", f"{graph[i].sha}:BUG"], cwd=repo, env=ENV,
                               capture_output=True)
        return Outcome.FAIL if probe.returncode == 0 else Outcome.PASS
    return oracle


def git_bisect_run(repo: Path, good: str, bad: str) -> str:
    git(repo, "bisect", "start", bad, good)
    out = subprocess.run(["git", "bisect", "run", "sh", "-c", "test ! -e BUG"], cwd=repo, env=ENV,
                         capture_output=True, text=True).stdout
    git(repo, "bisect", "reset")
    return next(line.split()[0] for line in out.splitlines() if line.endswith("is the first bad commit"))


def test_graph_keeps_side_branches_with_their_parents(tmp_path):
    r = tmp_path / "m"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    commit(r, "a.txt", "0", "root")
    git(r, "checkout", "-q", "-b", "side")
    commit(r, "b.txt", "1", "side 1")          # forked before good: not an ancestor of good
    commit(r, "b.txt", "2", "side 2")
    git(r, "checkout", "-q", "main")
    good = commit(r, "a.txt", "1", "good")
    git(r, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    bad = commit(r, "a.txt", "2", "bad")
    graph = list_graph(r, good, bad)
    subjects = [c.subject for c in graph.commits]
    assert sorted(subjects) == ["bad", "merge side", "side 1", "side 2"] and subjects[-1] == "bad"
    assert graph.good.sha == good and graph.bad.sha == bad and graph.merges() == 1
    by = {c.subject: i for i, c in enumerate(graph.commits)}
    assert graph.parents[by["merge side"]] == (by["side 2"],)     # its first parent is good
    assert graph.parent_shas[by["merge side"]] == (good, graph[by["side 2"]].sha)
    assert graph.parents[by["side 1"]] == () and graph.index(graph[by["side 1"]].sha[:9]) == by["side 1"]
    with pytest.raises(SpaceError, match="not among the candidates"):
        graph.index(good)
    # --first-parent gives the mainline chain (the merge's side parent is named, not a candidate)
    chain = list_graph(r, good, bad, first_parent=True)
    assert [c.subject for c in chain.commits] == ["merge side", "bad"] and chain.parents == ((), (0,))
    assert len(chain.parent_shas[0]) == 2 and chain.first_parent
    Dag(graph.parents)                                         # a valid candidate DAG


@pytest.mark.parametrize("shape", SHAPES)
def test_graph_of_generated_shapes_matches_their_dag(tmp_path, shape):
    parents = SHAPES[shape]
    good, shas = make_dag_repo(tmp_path / "r", parents)
    graph = list_graph(tmp_path / "r", good, shas[-1])
    assert sorted(c.sha for c in graph.commits) == sorted(shas) and graph.good.sha == good
    name = {c.sha: c.subject for c in graph.commits}
    for i, c in enumerate(graph.commits):
        assert all(p < i for p in graph.parents[i])            # parents first
        expected = tuple(f"c{p}" for p in parents[int(c.subject[1:])])
        assert tuple(name[graph[p].sha] for p in graph.parents[i]) == expected   # git's order
    assert graph.merges() == sum(len(p) > 1 for p in parents)


@pytest.mark.parametrize("shape", SHAPES)
def test_dag_search_on_real_repos_agrees_with_git_bisect(tmp_path, shape):
    parents = SHAPES[shape]
    for culprit in range(len(parents)):
        repo = tmp_path / f"r{culprit}"
        good, shas = make_dag_repo(repo, parents, culprit)
        graph = list_graph(repo, good, shas[-1])
        result = search_dag(graph.parents, bug_oracle(repo, graph))
        assert graph[result.culprit].sha == shas[culprit] == git_bisect_run(repo, good, shas[-1])
        parent_names = {graph[p].subject for p in result.parents}
        assert parent_names == {f"c{p}" for p in parents[culprit]}


def test_good_on_the_first_parent_of_the_culprits_merge_gives_the_branch_commit(tmp_path):
    """The side branch forks before --good and is merged right after it: git bisect keeps its
    commits (candidates), --ancestry-path does not and would name the merge."""
    parents = [(), (), (1,), (0, 2), (3,)]      # side 1, 2 (culprit 2); 3 = merge(mainline 0, 2)
    names = ["main", "side-a", "side-b", "merge", "tip"]
    good, shas = make_dag_repo(tmp_path / "r", parents, culprit=2, names=names)
    mainline_good = shas[0]                     # the merge's first parent
    graph = list_graph(tmp_path / "r", mainline_good, shas[-1])
    assert {c.subject for c in graph.commits} == {"side-a", "side-b", "merge", "tip"}
    # the search itself, without the confirmation runs a deterministic answer gets (search/confirm.py)
    result = search_dag(graph.parents, bug_oracle(tmp_path / "r", graph), options=SearchOptions(confirm=False))
    assert graph[result.culprit].subject == "side-b" and result.runs <= 3
    assert graph[result.culprit].sha == git_bisect_run(tmp_path / "r", mainline_good, shas[-1])


def test_graph_first_parent_with_a_good_on_a_merged_branch_is_gits_candidates(tmp_path):
    """`git bisect start --first-parent BAD GOOD` with GOOD on a merged branch: the chain's commits
    GOOD does not reach (`git rev-list --first-parent BAD ^GOOD`). It was refused."""
    good, shas = make_dag_repo(tmp_path / "r", TWICE_MERGED)
    off = list_graph(tmp_path / "r", shas[2], shas[-1], first_parent=True)    # s2 is on the branch
    listed = git(tmp_path / "r", "rev-list", "--first-parent", "--reverse", shas[-1], f"^{shas[2]}").split()
    assert [c.sha for c in off.commits] == listed and len(listed) >= 2
    chain = list_graph(tmp_path / "r", good, shas[-1], first_parent=True)
    assert [c.subject for c in chain.commits] == ["c0", "c3", "c5", "c6", "c7"]


def test_listing_the_graph_leaves_the_checkout_identical(repo, monkeypatch):
    before = fingerprint(repo)
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))
    graph = list_graph(repo, "HEAD~8", "HEAD")
    assert [c.subject for c in graph.commits] == ["c1", "c2", "c3", "c4", "c5", "c5b add kernel", "c6", "c7"]
    assert graph.good.subject == "c0" and graph.parents == ((),) + tuple((i,) for i in range(7))
    assert graph.describe(5).files == ("kernel.py",)
    assert fingerprint(repo) == before


@pytest.mark.parametrize("shape", SHAPES)
def test_the_listings_length_bad_end_and_merges_read_before_parsing_agree_with_its_arrays(tmp_path, shape):
    """A bisection's endpoints run before the listing is parsed (numpy loaded): its length, --bad
    and merge count are read from git's bytes, and must say what the arrays say."""
    import numpy as np
    good, shas = make_dag_repo(tmp_path / "r", SHAPES[shape])
    graph = list_graph(tmp_path / "r", good, shas[-1])
    early = (len(graph), graph.bad_sha, graph.sha(len(graph) - 1), graph.merges())
    arrays = graph.arrays()
    parsed = (int(arrays[0].size), arrays[0][-1].decode(), arrays[0][-1].decode(),
              int((np.diff(arrays[1]) > 1).sum()))
    assert early == parsed and graph.bad_sha == shas[-1]


def test_listing_a_history_loads_no_numpy_until_its_arrays_are_asked_for(tmp_path):
    good, shas = make_dag_repo(tmp_path / "r", SHAPES[next(iter(SHAPES))])
    probe = (f"import sys\nfrom bisectk.spaces.commits import list_graph\n"
             f"g = list_graph({str(tmp_path / 'r')!r}, {good!r}, {shas[-1]!r})\n"
             "facts = (len(g), g.bad_sha, g.merges())\n"
             "before = 'numpy' in sys.modules\n"
             "g.parents\n"
             "print(before, 'numpy' in sys.modules, *facts)\n")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr
    before, after, n, bad, merges = p.stdout.split()
    assert (before, after) == ("False", "True") and int(n) == len(shas) and bad == shas[-1]
    assert int(merges) == sum(len(ps) > 1 for ps in SHAPES[next(iter(SHAPES))])


def test_parents_are_parsed_from_rev_list_output_without_python_objects_per_commit():
    """_parse_parents reads `git rev-list --parents` as a table of fixed-width tokens; parents
    outside the listing become -(k + 1) for outside[k]. Shas sharing a 64-bit prefix fall back to
    whole-string matching; SHA-256 ids (64 hex digits) parse too."""
    import random

    import numpy as np

    from bisectk.spaces.commits import _index_parents, _parse_parents
    rng = random.Random(2)
    for width in (40, 64):
        ids = ["".join(rng.choice("0123456789abcdef") for _ in range(width)) for _ in range(60)]
        ids[1] = ids[0][:16] + ids[1][16:]          # a shared 64-bit prefix
        outside = ["f" * width, "e" * width]
        lines, truth = [], []
        for i, sha in enumerate(ids):
            ps = rng.sample(ids[:i] + outside, min(len(ids[:i]) + 2, rng.choice((0, 1, 1, 2, 3))))
            lines.append(" ".join([sha, *ps]))
            truth.append(ps)
        shas, ptr, ref, out = _parse_parents(("\n".join(lines) + "\n").encode())
        assert [s.decode() for s in shas] == ids
        for i in range(len(ids)):
            got = [ids[r] if r >= 0 else out[-r - 1].decode() for r in ref[ptr[i]:ptr[i + 1]]]
            assert got == truth[i]
    shas = np.array([b"a" * 16 + b"1" * 24, b"a" * 16 + b"2" * 24], dtype="S40")
    _, _, ref, out = _index_parents(shas, [[], [shas[0], b"c" * 40]])
    assert ref.tolist() == [0, -1] and out.tolist() == [b"c" * 40]


def test_a_failed_git_command_is_named_by_its_subcommand_not_its_options(repo):
    from bisectk.spaces.commits import git_ok, run_git
    with pytest.raises(SpaceError, match=r"^git checkout failed in .*: (error|fatal): "):
        run_git(repo, "-c", "checkout.workers=0", "checkout", "-q", "no-such-ref")
    assert git_ok(repo, "rev-parse", "--verify", "-q", "HEAD") and not git_ok(repo, "rev-parse", "--verify", "-q", "no-such-ref")
