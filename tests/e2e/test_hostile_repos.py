"""Repositories in odd states (issue 22, item 8): subjects, authors and file names that carry
terminal escape sequences and XML-invalid control characters; a shallow clone whose history is cut."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import bisectk
from tests.fixtures.gitrepo import git, make_repo

# a title change (OSC 0), a screen clear, an 8-bit CSI, a bell, a bidi override, a vertical tab, and
# the separators git's own --format output is often split on
HOSTILE = "fix\x1b]0;pwned\x07 the\x1b[2J ring\x9b31m \u202eevil\x0b end\x1e\x1f"
ACTING = ("\x1b", "\x07", "\x9b", "\u202e", "\x0b")


def hostile_repo(root: Path) -> list[str]:
    shas = make_repo(root, n=6, culprit=3, broken=())
    # rewrite the culprit's subject and author, and make it add a file with a control character in its name
    git(root, "checkout", "-q", shas[3])
    (root / "odd\x1b[2Jname.txt").write_text("x\n")
    git(root, "add", "-A")
    git(root, "-c", "user.name=Evil\x1b]0;owned\x07\x1f Author", "-c", "user.email=e@example.com", "commit", "-q",
        "--amend", "--reset-author", "-m", HOSTILE)
    new = git(root, "rev-parse", "HEAD")
    for sha in shas[4:]:
        git(root, "cherry-pick", "--allow-empty", sha)
    git(root, "branch", "-f", "main", "HEAD")
    git(root, "checkout", "-q", "main")
    return [*shas[:3], new, *git(root, "rev-list", "--reverse", f"{new}..main").split()]


def test_hostile_subjects_never_reach_the_terminal_or_break_the_junit_xml(tmp_path):
    shas = hostile_repo(tmp_path / "r")
    junit = tmp_path / "t.xml"
    p = bisectk("triage", "--repo", tmp_path / "r", "--good", shas[0], "--bad", "main", "--run", "python kernel.py",
                "--junit", junit, "--json-out", tmp_path / "t.json", "--ledger", tmp_path / "l.db", timeout=600)
    assert p.returncode == 1, p.stderr[-2000:]
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["first_bad"]["subject"] == HOSTILE            # the data itself is kept as it is ...
    for stream in (p.stdout, p.stderr):                      # ... and never acts on the terminal
        assert not any(c in stream for c in ACTING), [c for c in ACTING if c in stream]
    assert "\\x1b]0;pwned\\x07" in p.stdout and "\\u202eevil" in p.stdout   # shown, escaped
    root = ET.parse(junit).getroot()                          # well-formed XML
    text = ET.tostring(root, encoding="unicode")
    assert "\\x1b" in text and "\x1b" not in text
    # the bisection's own terminal summary and `report` go through the same console
    for argv in (["bisect", "--repo", tmp_path / "r", "--good", shas[0], "--bad", "main", "--run", "python kernel.py"],
                 ["report", tmp_path / "l.db"]):
        q = bisectk(*argv, "--ledger", tmp_path / "l.db", timeout=600) if argv[0] == "bisect" else bisectk(*argv)
        assert q.returncode in (0, 1), q.stderr[-2000:]
        assert HOSTILE.split("\x1b")[0] in q.stdout and not any(c in q.stdout + q.stderr for c in ACTING)


def test_a_shallow_clone_says_its_history_is_cut_not_swap_them(tmp_path):
    shas = make_repo(tmp_path / "origin", n=8, culprit=5, broken=())
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{tmp_path / 'origin'}", str(clone)], check=True)
    git(clone, "fetch", "-q", "--depth", "1", "origin", shas[1])   # --good is there, its history to --bad is not
    p = bisectk("bisect", "--repo", clone, "--good", shas[1], "--bad", "HEAD", "--run", "python kernel.py",
                "--ledger", tmp_path / "l.db")
    assert p.returncode == 2, p.stderr
    line = p.stderr.strip()
    assert len(line.splitlines()) == 1 and "shallow" in line and "git fetch --unshallow" in line, line
    assert "swap them" not in line
    # a --good that is not fetched at all names the shallow clone too
    p = bisectk("bisect", "--repo", clone, "--good", shas[0], "--bad", "HEAD", "--run", "python kernel.py",
                "--ledger", tmp_path / "l.db")
    assert p.returncode == 2 and "shallow" in p.stderr, p.stderr
    # a real swap in a shallow clone is still called a swap
    p = bisectk("bisect", "--repo", clone, "--good", "HEAD", "--bad", "HEAD~1", "--run", "python kernel.py",
                "--ledger", tmp_path / "l.db")
    assert p.returncode == 2 and "swap them" in p.stderr, p.stderr


@pytest.mark.skipif(not __import__("shutil").which("ssh-keygen"), reason="ssh-keygen (commit signing) is missing")
def test_a_signers_git_settings_do_not_break_the_listing(tmp_path):
    """A user who signs commits often sets log.showSignature: `git log --format` then prints
    "No signature" / "Good signature" lines among the fields bisectk reads. It was an internal
    error (KeyError on the good commit). color.ui=always and submodule.recurse change nothing."""
    r = tmp_path / "r"
    r.mkdir()
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, capture_output=True)
    git(r, "init", "-q", "-b", "main")
    for k, v in (("gpg.format", "ssh"), ("user.signingkey", f"{key}.pub"), ("commit.gpgsign", "true")):
        git(r, "config", k, v)
    shas = []
    for i in range(1, 9):
        (r / "v").write_text(f"{i}\n")
        git(r, "add", "v")
        git(r, "commit", "-q", "-m", f"c{i}")
        shas.append(git(r, "rev-parse", "HEAD"))
    for k, v in (("log.showSignature", "true"), ("color.ui", "always"), ("submodule.recurse", "true")):
        git(r, "config", k, v)
    assert "signature" in git(r, "log", "-1", "--format=%H").lower()    # the premise: git prints it there
    (tmp_path / "t.sh").write_text("#!/bin/sh\n[ $(cat v) -lt 5 ]\n")
    (tmp_path / "t.sh").chmod(0o755)
    p = bisectk("bisect", "--repo", r, "--good", shas[0], "--bad", shas[-1], "--run", tmp_path / "t.sh", "--json",
                timeout=120)
    assert p.returncode == 0, (p.stdout[-1500:], p.stderr[-1500:])
    assert json.loads(p.stdout)["first_bad"]["sha"] == shas[4]


def test_a_repository_git_refuses_as_another_users_says_so_with_gits_fix(tmp_path):
    """A CI container whose checkout another user owns: git refuses it ("detected dubious
    ownership"). bisectk said "is not inside a git repository", which sends the user looking for
    the wrong thing. (git's own test knob stands for the other owner.)"""
    shas = make_repo(tmp_path / "r", n=4, culprit=2, broken=())
    p = bisectk("bisect", "--repo", tmp_path / "r", "--good", shas[0], "--bad", shas[-1], "--run", "python kernel.py",
                env={"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"}, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "detected dubious ownership" in p.stderr and "git config --global --add safe.directory" in p.stderr
    assert "not inside a git repository" not in p.stderr


def test_a_file_name_with_a_newline_in_the_first_bad_commit_keeps_its_files_line_whole(tmp_path):
    """The first bad commit's `files:` line printed a name holding a newline as it is, so
    'two<newline>lines.txt' split the line in two and its second half read as a line of its own;
    each name is C-quoted there, as diff's culprit line quotes it ('"two\\nlines.txt"')."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = []
    for i in range(4):
        (r / "v").write_text(f"{i}\n")
        if i == 2:
            (r / "two\nlines.txt").write_text("x\n")
        git(r, "add", "-A")
        git(r, "commit", "-q", "-m", f"c{i}")
        shas.append(git(r, "rev-parse", "HEAD"))
    (tmp_path / "t.sh").write_text("#!/bin/sh\n[ $(cat v) -lt 2 ]\n")
    (tmp_path / "t.sh").chmod(0o755)
    p = bisectk("bisect", "--repo", r, "--good", shas[0], "--bad", shas[-1], "--run", tmp_path / "t.sh",
                "--ledger", tmp_path / "l.db", timeout=120)
    assert p.returncode == 0, (p.stdout[-1500:], p.stderr[-1500:])
    line = next(line for line in p.stdout.splitlines() if "files:" in line)
    assert line.endswith('files: "two\\nlines.txt", v'), p.stdout
    assert not any(line.startswith("lines.txt") for line in p.stdout.splitlines()), p.stdout
