"""A commit's tree exported for triage's hunk isolation (spaces/revisions.py export_tree, over
run/remote.py git_archive_to) is the tree a checkout of the commit has."""
import sys
from pathlib import Path

from bisectk.spaces.revisions import export_tree
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import git  # noqa: E402


def test_export_ignore_and_export_subst_do_not_change_the_exported_tree(tmp_path):
    """Before: `git archive` applied the repository's `export-ignore` and `export-subst`
    attributes, which are for release tarballs: with `tests/ export-ignore` (a common line) the
    test triage runs was missing from both trees of the isolation ('file or directory not found'),
    and a `$Format:%H$` file differed between every parent and commit, a hunk no commit made.
    Now the export is the commit's tree as checked out; the repository is left as it was."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / ".gitattributes").write_text("tests/ export-ignore\nversion.txt export-subst\nk.py export-ignore\n")
    (r / "tests").mkdir()
    (r / "tests" / "test_k.py").write_text("def test_k():\n    pass\n")
    (r / "version.txt").write_text("rev $Format:%H$\n")
    (r / "k.py").write_text("V = 1\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "c0")
    sha = git(r, "rev-parse", "HEAD")
    before = sorted(p.relative_to(r).as_posix() for p in (r / ".git").rglob("*"))
    dest = export_tree(r, sha, tmp_path / "out")
    assert (dest / "tests" / "test_k.py").read_text() == "def test_k():\n    pass\n"
    assert (dest / "version.txt").read_text() == "rev $Format:%H$\n"
    assert (dest / "k.py").read_text() == "V = 1\n"
    assert sorted(p.relative_to(r).as_posix() for p in (r / ".git").rglob("*")) == before


def test_the_repositorys_own_attributes_file_still_applies_to_the_exported_tree(tmp_path):
    """<git dir>/info/attributes decides line endings and filters at a checkout, as bisect's
    worktrees have them; the export's own info/attributes (export-ignore unset) replaced it, so
    `* eol=crlf` there gave CRLF files to bisect's runs and LF ones to triage's isolation, where
    the bad commit then passed."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "data.txt").write_text("a\nb\n")
    (r / ".gitattributes").write_text("tests/ export-ignore\n")
    (r / "tests").mkdir()
    (r / "tests" / "t.txt").write_text("t\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "c0")
    (r / ".git" / "info").mkdir(exist_ok=True)
    (r / ".git" / "info" / "attributes").write_text("*.txt eol=crlf\n")
    dest = export_tree(r, git(r, "rev-parse", "HEAD"), tmp_path / "out")
    assert (dest / "data.txt").read_bytes() == b"a\r\nb\r\n"
    assert (dest / "tests" / "t.txt").read_bytes() == b"t\r\n"     # export-ignore still unset
    assert (r / ".git" / "info" / "attributes").read_text() == "*.txt eol=crlf\n"
