"""Report files (--report, --html, --json-out, --junit): a path that cannot be written, or that
names what the command reads (the spec, the subject's script, the ledger, diff's trees), is one
line and exit 2 before any run, and nothing of the user's is written over; a write that fails
after the search (a full disk) comes after the printed result, which is not lost."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from bisectk.errors import BisectkError
from bisectk.report.outputs import check_outputs
from tests.conftest import bisectk


def _spec(d: Path) -> Path:
    (d / "pyproject.toml").touch()
    (d / "s.sh").write_text('[ "$1" = 1 ] && exit 1; exit 0\n')
    (d / "s.toml").write_text('[subject]\ncommand = ["sh", "s.sh", "{a}", "{b}"]\n[good]\na = 0\nb = 0\n[bad]\na = 1\nb = 1\n')
    return d / "s.toml"


def _digests(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("option,target,says", [
    ("--report", "s.toml", "is the spec"),
    ("--json-out", "s.sh", "a file the subject's command names"),
    ("--html", ".bisectk/ledger.db", "is the ledger"),
    ("--json-out", "out", "is a directory"),
    ("--report", "s.sh/x.md", "is not a directory"),
    ("--report", "-", "not stdout"),        # was a file named '-' and a folder '--figures' beside it
    ("--json-out", "-", "not stdout"),
])
def test_an_output_that_names_an_input_or_cannot_be_written_is_refused_before_any_run(tmp_path, option, target, says):
    spec = _spec(tmp_path)
    (tmp_path / "out").mkdir()
    bisectk("ablate", spec, cwd=tmp_path, check=0)      # a ledger to protect
    before = _digests(tmp_path)
    p = bisectk("ablate", spec, option, target, "--fresh", cwd=tmp_path, check=2)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"bisectk: {option} {target}: ") and says in lines[0], p.stderr
    assert "PASS" not in p.stdout + p.stderr and _digests(tmp_path) == before


@pytest.mark.parametrize("command,target", [
    ('["bash", "-c", "sh s.sh {a} {b}"]', "s.sh"),              # a shell script's word
    ('["sh", "s.sh", "--data=d.txt", "{a}", "{b}"]', "d.txt"),   # an --opt=PATH's value
])
def test_an_output_named_inside_the_subjects_command_is_refused(tmp_path, command, target):
    """The subject's script named inside `bash -c '...'` (or a data file as --data=FILE): the
    check looked at whole words only, so `--json-out s.sh` passed and the JSON document was
    written over the user's script after the runs."""
    spec = _spec(tmp_path)
    (tmp_path / "d.txt").write_text("data\n")
    spec.write_text(spec.read_text().replace('["sh", "s.sh", "{a}", "{b}"]', command))
    before = _digests(tmp_path)
    p = bisectk("ablate", spec, "--json-out", target, cwd=tmp_path, check=2)
    assert p.stderr.startswith(f"bisectk: --json-out {target}: is a file the subject's command names"), p.stderr
    assert p.stderr.count("\n") == 1 and "PASS" not in p.stdout + p.stderr and _digests(tmp_path) == before


@pytest.mark.parametrize("target,says,where", [
    ("s.toml", "is the spec", "."), ("s.sh", "is a file the subject's command names", "."),
    ("../s.toml", "is the spec", "sub"),        # elsewhere: the spec is found from the ledger's home
])
@pytest.mark.parametrize("option", ["--report", "--html"])
def test_report_of_a_stored_session_never_writes_over_its_spec_or_script(tmp_path, option, target, says, where):
    """`bisectk report LEDGER --report s.toml` wrote the debug log over the session's spec (exit
    0): report protected the ledger alone, the spec being known only once the record is read."""
    spec = _spec(tmp_path)
    bisectk("ablate", spec, cwd=tmp_path, check=0)
    (tmp_path / "sub").mkdir()
    before = _digests(tmp_path)
    p = bisectk("report", os.path.relpath(tmp_path / ".bisectk" / "ledger.db", tmp_path / where), option, target,
                cwd=tmp_path / where, check=2)
    assert p.stderr.strip().splitlines() == [f"bisectk: {option} {target}: {says}, which this command reads; writing "
                                             "the report there would destroy it: name another file"], p.stderr
    assert _digests(tmp_path) == before
    ok = bisectk("report", ".bisectk/ledger.db", option, "r.out", cwd=tmp_path, check=0)   # any other file is written
    assert (tmp_path / "r.out").is_file() and "culprit" in ok.stdout


@pytest.mark.parametrize("option", ["--json-out", "--report", "--html"])
def test_an_output_on_a_new_ledgers_path_is_refused(tmp_path, option):
    """`--ledger new.db --json-out new.db`: the ledger does not exist yet when the outputs are
    checked, so it was no input to protect; the command ran, the report was written over the
    open ledger and lost (exit 0, nothing said)."""
    spec = _spec(tmp_path)
    p = bisectk("ablate", spec, "--ledger", "new.db", option, "new.db", cwd=tmp_path, check=2)
    assert p.stderr.strip() == f"bisectk: {option} new.db: is the ledger, which this command reads; writing the " \
                               "report there would destroy it: name another file", p.stderr
    assert not (tmp_path / "new.db").exists()


def test_a_write_that_fails_after_the_search_comes_after_the_result(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    spec = _spec(tmp_path)
    p = bisectk("ablate", spec, "--report", "/dev/full", cwd=tmp_path, check=2)
    assert "culprit: a" in p.stdout
    assert p.stderr.strip().splitlines()[-1] == "bisectk: could not write --report /dev/full: No space left on device"


def test_check_outputs_trees_and_two_options_on_one_file(tmp_path):
    tree = tmp_path / "good"
    tree.mkdir()
    with pytest.raises(BisectkError, match=r"--report .*: is inside .*good, an input"):
        check_outputs({"--report": tree / "sub" / "r.md"}, trees=[tree])
    with pytest.raises(BisectkError, match="--json-out r.x: --report names the same file"):
        check_outputs({"--report": Path("r.x"), "--json-out": Path("r.x")})
    check_outputs({"--report": tmp_path / "new" / "deeper" / "r.md", "--json-out": None})     # made when written



def test_two_options_on_one_file_through_a_link_are_refused(tmp_path):
    """`--report out/r.md --html latest/r.md` where latest links to out (a CI's `latest` folder),
    or a --json-out that is a link to the --report: one file, written twice, the last writer's
    text left (the debug log lost to the JSON); each spelling passed the check."""
    (tmp_path / "out").mkdir()
    (tmp_path / "latest").symlink_to(tmp_path / "out")
    (tmp_path / "r.json").symlink_to(tmp_path / "out" / "r.md")
    with pytest.raises(BisectkError, match="--html .*latest/r.md: --report names the same file"):
        check_outputs({"--report": tmp_path / "out" / "r.md", "--html": tmp_path / "latest" / "r.md"})
    with pytest.raises(BisectkError, match="--json-out .*r.json: --report names the same file"):
        check_outputs({"--report": tmp_path / "out" / "r.md", "--json-out": tmp_path / "r.json"})
    with pytest.raises(BisectkError, match="--json-out .*latest/r-culprit.patch: is where --report"):
        check_outputs({"--report": tmp_path / "out" / "r.md", "--json-out": tmp_path / "latest" / "r-culprit.patch"})
    with pytest.raises(BisectkError, match="--html .*latest/r-figures/x.html: is where --report"):
        check_outputs({"--report": tmp_path / "out" / "r.md", "--html": tmp_path / "latest" / "r-figures" / "x.html"})
    check_outputs({"--report": tmp_path / "out" / "r.md", "--html": tmp_path / "latest" / "r.html"})


def test_an_output_through_a_link_loop_or_a_dangling_link_is_checked_where_the_link_leads(tmp_path):
    """A link loop as --json-out was an internal error (RuntimeError from Path.resolve, exit 3);
    a link into a directory that does not exist yet passed the check and the write failed after the
    search ('could not write --json-out ...: No such file or directory'): the target is what is
    created, as for a plain path, its directories made."""
    spec = _spec(tmp_path)
    (tmp_path / "loop").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop")
    for target in ("loop", "loop/r.json"):
        p = bisectk("ablate", spec, "--json-out", target, cwd=tmp_path, check=2)
        assert p.stderr.strip() == f"bisectk: --json-out {target}: its path goes through a symbolic link that loops " \
                                   "(a link that leads back to itself); name another file", p.stderr
        assert "PASS" not in p.stdout + p.stderr
    (tmp_path / "latest.json").symlink_to(tmp_path / "runs" / "today" / "r.json")
    p = bisectk("ablate", spec, "--json-out", "latest.json", cwd=tmp_path, check=0)
    assert "could not write" not in p.stderr, p.stderr
    assert '"culprits"' in (tmp_path / "runs" / "today" / "r.json").read_text()


def test_report_files_are_written_when_stdouts_reader_has_left(tmp_path):
    """`bisectk ... --junit j.xml | head -1` in CI: the reader leaves after the first line; the
    command ends as SIGPIPE would (141), but the files it was asked for are written."""
    import subprocess
    import sys
    spec = _spec(tmp_path)
    p = subprocess.Popen([sys.executable, "-m", "bisectk", "ablate", str(spec), "--report", "r.md", "--json-out",
                          "r.json"], cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    assert p.stdout.readline().startswith(b"s: 2 differences")
    p.stdout.close()
    assert p.wait(timeout=120) == 141
    assert "culprit" in (tmp_path / "r.md").read_text() and (tmp_path / "r.json").read_text().startswith("{")


def test_a_large_output_cut_by_its_reader_ends_as_sigpipe_would_under_pythonunbuffered(tmp_path):
    """`bisectk report L --json | head -c 10` with PYTHONUNBUFFERED=1 (set in many CI jobs and
    containers): Python's stdout then has no buffer, and a write the closed pipe cut short (the
    64 KiB the pipe took of a 400 KB document) was taken as done: exit 0, the output truncated
    without a word. The command now ends with 141, as without the variable, and as git does."""
    import subprocess
    import sys
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "s.sh").write_text('case "$*" in *bad*) exit 1;; esac; exit 0\n')
    names = [f"f{i}" for i in range(40)]
    good = "".join(f'{n} = "{"g" * 5000}"\n' for n in names)
    bad = "".join(f'{n} = "{"bad" * 2000 if n == "f7" else "b" * 5000}"\n' for n in names)
    command = ", ".join(['"sh"', '"s.sh"'] + ['"{%s}"' % n for n in names])
    (tmp_path / "s.toml").write_text(f"[subject]\ncommand = [{command}]\n[good]\n{good}[bad]\n{bad}")
    bisectk("ablate", "s.toml", cwd=tmp_path, check=0)
    for args in (["report", ".bisectk/ledger.db", "--json"], ["ablate", "s.toml", "--json"]):
        p = subprocess.Popen([sys.executable, "-m", "bisectk", *args], cwd=tmp_path, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert len(p.stdout.read(10)) == 10
        p.stdout.close()
        assert p.wait(timeout=120) == 141, (args, p.returncode)
        assert b"Traceback" not in p.stderr.read(), args


@pytest.mark.parametrize("args,says", [
    (["--report", "r.md", "--html", "r-figures"], "--html r-figures: is where --report r.md writes its pictures"),
    (["--report", "r.md", "--json-out", "r-figures/run-matrix.svg"], "--json-out r-figures/run-matrix.svg: is where"),
    (["--report", "f.md"], "--report f.md: its pictures go in f-figures/, which is a file"),
    (["--report", "r.md", "--json-out", "r-culprit.patch"], "--json-out r-culprit.patch: is where --report r.md"),
    (["--html", "h.html", "--json-out", "h-culprit.patch"], "--json-out h-culprit.patch: is where --html h.html"),
    (["--report", "d.md"], "--report d.md: a culprit patch that is not UTF-8 goes in d-culprit.patch, which is a "
                           "directory"),
])
def test_an_output_where_the_reports_pictures_go_is_refused_before_any_run(tmp_path, args, says):
    """--report r.md writes its pictures in r-figures/, made after the search: `--html r-figures`
    was lost to "Is a directory" after the runs (exit 2), a --json-out in it was overwritten by a
    picture, and a file named f-figures lost the debug log itself. So with the culprit patch a
    report writes beside it (FILE-culprit.patch, a diff's patch that is not UTF-8): a --json-out of
    that name was overwritten by the patch, and a directory there lost the report after the search."""
    spec = _spec(tmp_path)
    (tmp_path / "f-figures").write_text("mine")
    (tmp_path / "d-culprit.patch").mkdir()
    before = _digests(tmp_path)
    p = bisectk("ablate", spec, *args, cwd=tmp_path, check=2)
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"bisectk: {says}"), p.stderr
    assert "PASS" not in p.stdout + p.stderr and _digests(tmp_path) == before
    assert sorted(q.name for q in tmp_path.iterdir()) == ["d-culprit.patch", "f-figures", "pyproject.toml", "s.sh",
                                                          "s.toml"]
