"""End-to-end: `bisectk diff` isolates culprit hunks between two versions of a stand-in kernel."""
import hashlib
import json
import os
import sys
from pathlib import Path


from tests.conftest import ROOT, bisectk
from tests.fixtures.gitrepo import git

sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "diffsrc"))
from kernelpair import make_pair  # noqa: E402

SPEC = """name = "kernelpair"
[subject]
command = ["python", "run.py"]
build = ["python", "-m", "compileall", "-q", "kernel"]
[oracle]
metric = "err"
max = 0
"""


def tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if "__pycache__" in p.parts:
            continue
        h.update(str(p.relative_to(root)).encode())
        if p.is_file() and not p.is_symlink():
            h.update(p.read_bytes())
    return h.hexdigest()


def run_diff(tmp_path, pair, *extra, code=0):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    (tmp_path / "cache").mkdir(exist_ok=True)    # a --ledger's directory is not made (engine/session.py)
    p = bisectk("diff", pair.good, pair.bad, spec, "--json", "--ledger", tmp_path / "cache" / "l.db", *extra,
                cwd=tmp_path, timeout=600)
    assert p.returncode == code, (p.stdout[-3000:], p.stderr[-3000:])
    return json.loads(p.stdout)


def test_one_culprit_among_36_hunks_with_build_breakers(tmp_path):
    pair = make_pair(tmp_path / "src", hunks=36, culprit="one", breakers=3, seed=1)
    before = tree_digest(pair.good), tree_digest(pair.bad)
    doc = run_diff(tmp_path, pair)
    assert doc["hunks"] >= 30
    assert len(doc["culprit_hunks"]) == 1 and doc["interaction"] is False
    h = doc["culprit_hunks"][0]
    assert any(line.strip() in h["text"] for line in pair.culprit_lines)
    assert {"file", "good_lines", "bad_lines", "text"} <= h.keys()
    assert doc["runs"] < 36  # fewer runs than trying each hunk
    assert (tree_digest(pair.good), tree_digest(pair.bad)) == before
    assert not list((tmp_path / "cache").glob("scratch-*"))  # scratch trees are removed
    assert not (tmp_path / ".bisectk").exists()  # nothing written into the user's working directory


def test_two_hunks_only_together(tmp_path):
    pair = make_pair(tmp_path / "src", hunks=32, culprit="pair", breakers=2, seed=3)
    doc = run_diff(tmp_path, pair)
    assert len(doc["culprit_hunks"]) == 2 and doc["interaction"] is True
    texts = "\n".join(h["text"] for h in doc["culprit_hunks"])
    assert all(line.strip() in texts for line in pair.culprit_lines)


def test_breakers_make_build_failures_unresolved(tmp_path):
    pair = make_pair(tmp_path / "src", hunks=30, culprit="one", breakers=4, seed=5)
    doc = run_diff(tmp_path, pair, "--strategy", "ofat")
    # one-at-a-time applies each breaker half alone: those hybrids do not build
    assert doc["unresolved"], doc["attempts"]
    assert len(doc["culprit_hunks"]) == 1


def test_bad_inputs(tmp_path):
    p = bisectk("diff", tmp_path / "nope", tmp_path, "--run", "true", cwd=tmp_path)
    assert p.returncode == 2 and "no such file" in p.stderr and "Traceback" not in p.stderr
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    p = bisectk("diff", tmp_path / "a", tmp_path / "b", "--run", "true", cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.splitlines()) == 1


def test_two_commits_given_as_git_diff_takes_them_say_what_diff_compares(tmp_path):
    """`bisectk diff HEAD~1 HEAD` in a repository, as `git diff` takes them: one line that says
    they are commits and what to give instead; a word that names nothing stays plain."""
    r = tmp_path / "r"
    r.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "one"],
                 ["commit", "-q", "--allow-empty", "-m", "two"]):
        git(r, *args)
    p = bisectk("diff", "HEAD~1", "HEAD", "--run", "true", cwd=r)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith("bisectk: HEAD~1: no such file or directory; HEAD~1 is a commit here")
    assert "git worktree add DIR HEAD~1" in p.stderr and "bisectk triage" in p.stderr
    p = bisectk("diff", "nothing", "HEAD", "--run", "true", cwd=r)
    assert p.returncode == 2 and p.stderr == "bisectk: nothing: no such file or directory\n"


def test_env_capture_and_diff(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    bisectk("env", "--save", a, check=0)
    data = json.loads(a.read_text())
    assert {"gpu", "python", "packages", "env"} <= data.keys()
    data["env"]["CUDA_LAUNCH_BLOCKING"] = "1"
    data["packages"]["torch"] = "0.0.1"
    b.write_text(json.dumps(data))
    p = bisectk("env", "--diff", a, "--diff", b, "--json", check=1)
    keys = {d["key"] for d in json.loads(p.stdout)["differences"]}
    assert {"env.CUDA_LAUNCH_BLOCKING", "packages.torch"} <= keys
    p = bisectk("env", "--diff", a, "--diff", b, check=1)
    assert "CUDA_LAUNCH_BLOCKING" in p.stdout and "[good]" in p.stdout
    p = bisectk("env", "--diff", a, "--diff", tmp_path / "missing.json")
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_a_file_that_became_a_directory_is_one_hunk_and_can_be_the_culprit(tmp_path):
    """`conf` is a file in GOOD and a directory in BAD (its files added): one hunk, applied or not
    as a whole, beside ordinary ones; a subject that needs the file names it."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        side.mkdir()
    (good / "conf").write_text("threads = 4\n")
    (bad / "conf").mkdir()
    (bad / "conf" / "threads").write_text("4\n")
    (good / "k.py").write_text("a = 1\nb = 2\n")
    (bad / "k.py").write_text("a = 1\nb = 3\n")
    p = bisectk("diff", good, bad, "--run", "test -f conf", "--json", "--ledger", tmp_path / "l.db",
                cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert [h["id"] for h in doc["culprit_hunks"]] == ["conf:retype"]
    assert "deleted file mode 100644" in doc["culprit_hunks"][0]["text"]
    assert (good / "conf").is_file() and (bad / "conf" / "threads").is_file()     # the inputs untouched


def test_a_culprit_patch_that_patch_cannot_apply_says_to_use_git_apply(tmp_path):
    """A file that became a directory (`conf` -> `conf/threads`): git apply takes the printed
    patch, GNU patch refuses it whatever its form ('Invalid file name conf/threads', as it
    refuses git's own). Before: nothing said so, and `patch -p1` with the printed culprit failed.
    Now the terminal and the debug log say that this patch is one for `git apply`, and why."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        side.mkdir()
    (good / "conf").write_text("threads = 4\n")
    (bad / "conf").mkdir()
    (bad / "conf" / "threads").write_text("4\n")
    p = bisectk("diff", good, bad, "--run", "test -f conf", "--ledger", tmp_path / "l.db", "--report",
                tmp_path / "r.md", cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    said = "apply this patch with `git apply`: conf:retype replaces a file by a directory or the reverse"
    assert said in p.stdout, p.stdout
    assert said in (tmp_path / "r.md").read_text()


def test_a_culprit_binary_patch_says_to_use_git_apply(tmp_path):
    """A binary file's change is printed as git's binary patch, which `patch -p1` cannot apply:
    the terminal and the debug log say the patch is one for `git apply`."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        side.mkdir()
    (good / "w.bin").write_bytes(b"\0\1ok")
    (bad / "w.bin").write_bytes(b"\0\1no")
    p = bisectk("diff", good, bad, "--run", "grep -q ok w.bin", "--ledger", tmp_path / "l.db", "--report",
                tmp_path / "r.md", cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    said = "apply this patch with `git apply`: it changes a binary file"
    assert said in p.stdout, p.stdout
    assert said in (tmp_path / "r.md").read_text()


def test_the_printed_binary_patch_applies_to_good_as_printed(tmp_path):
    """A binary file's change, the last of the culprit patch: git's binary patch ends with an empty
    line, which git apply needs ('corrupt binary patch'). The terminal and the debug log dropped it
    (the patch's trailing newlines were stripped), so the patch as printed, up to the note under it,
    did not apply. It is printed whole and applies to a copy of GOOD, giving BAD's file."""
    import re
    import shutil
    import subprocess
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        side.mkdir()
    (good / "w.bin").write_bytes(bytes(range(256)) * 4)
    (bad / "w.bin").write_bytes(bytes(range(255, -1, -1)) * 4)
    p = bisectk("diff", good, bad, "--run", "python3 -c \"import sys; sys.exit(open('w.bin', 'rb').read(1) != b'\\0')\"",
                "--ledger", tmp_path / "l.db", "--report", tmp_path / "r.md", cwd=tmp_path, timeout=300)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    lines = p.stdout.splitlines(keepends=True)
    start = next(k for k, line in enumerate(lines) if line.startswith("diff --git"))
    end = next(k for k, line in enumerate(lines) if line.startswith("apply this patch"))
    printed = "".join(lines[start:end])
    logged = re.search(r"```diff\n(diff --git.*?)```", (tmp_path / "r.md").read_text(), re.S).group(1)
    for patch in (printed, logged):
        copy = tmp_path / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(good, copy)
        proc = subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=copy, capture_output=True)
        assert proc.returncode == 0, (proc.stderr, patch)
        assert (copy / "w.bin").read_bytes() == (bad / "w.bin").read_bytes()


def test_two_hunks_that_each_fail_alone_are_two_sets_not_a_flake(tmp_path):
    """Two independent breakages that exit the same way (a lowered limit; a call of a function
    that does not exist): bad without either still fails, which the confirmation once read as an
    intermittent failure ("unconfirmed"). Both are named, as ablate names independent sets."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for root in (good, bad):
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "__init__.py").write_text("")
        for i in range(8):      # neutral files: a hunk each
            (root / "pkg" / f"m{i}.py").write_text(f"# module {i}\nVALUE = {i}\n")
    (good / "pkg" / "core.py").write_text("LIMIT = 10\n\n\ndef check(x):\n    return x < LIMIT\n")
    (bad / "pkg" / "core.py").write_text("LIMIT = 1\n\n\ndef check(x):\n    return x < LIMIT\n")
    (good / "pkg" / "util.py").write_text("from pkg import core\n\nREADY = True\n")
    (bad / "pkg" / "util.py").write_text("from pkg import core\n\nREADY = core.warm_up()\n")
    for i in range(8):
        (bad / "pkg" / f"m{i}.py").write_text(f"# module {i}, reworded\nVALUE = {i}\n")
    code = "import sys, pkg.util; from pkg.core import check; sys.exit(0 if check(5) else 1)"
    p = bisectk("diff", good, bad, "--run", f"{sys.executable} -c \"{code}\"", "--json",
                "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=600)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["complete"], (p.stdout[-2000:], p.stderr[-2000:])
    sets = sorted(sorted(s["members"]) for s in doc["sets"])
    assert [[m.split(":")[0] for m in s] for s in sets] == [["pkg/core.py"], ["pkg/util.py"]], sets
    assert {h["file"] for h in doc["culprit_hunks"]} == {"pkg/core.py", "pkg/util.py"}
    text = bisectk("diff", good, bad, "--run", f"{sys.executable} -c \"{code}\"", "--ledger", tmp_path / "l.db",
                   cwd=tmp_path, timeout=600).stdout
    assert "2 independent failing sets" in text and "failing set 2:" in text and "unconfirmed" not in text


def test_a_path_that_climbs_out_of_the_trees_is_named_not_called_good_fails_too(tmp_path):
    """`open('../shared.txt')` beside GOOD and BAD works by hand in either tree; each hybrid runs in a
    scratch copy of GOOD elsewhere, where `..` names nothing. The problem names the path and what it
    is from GOOD, not "the good configuration fails too"."""
    (tmp_path / "shared.txt").write_text("data\n")
    for side, v in (("good", 1), ("bad", 2)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "t.py").write_text(f"open('../shared.txt')\nV = {v}\nraise SystemExit(V > 1)\n")
    p = bisectk("diff", "good", "bad", "--run", "python3 t.py", "--json", cwd=tmp_path, check=2)
    endpoints = json.loads(p.stdout)["endpoints"]
    assert endpoints["environment_problem"]["kind"] == "outside-path"
    assert endpoints["environment_problem"]["subject"] == str(tmp_path / "shared.txt")
    assert sorted(x.name for x in tmp_path.iterdir())[:3] == ["bad", "good", "shared.txt"]


def test_a_good_tree_that_fails_after_its_first_run_is_no_culprit_found(tmp_path):
    """A run leaves state the next one sees (a counter outside the trees; `mkdir out` in the scratch
    tree did, before each hybrid started from GOOD and its hunks alone): GOOD passes its first run
    and fails every later one. The search's answer is then the empty set, which once came out as
    exit 0, `culprit hunk(s): none`. GOOD is run again and the endpoints are unusable."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 0), (bad, 1)):
        side.mkdir()
        (side / "k.txt").write_text(f"v={v}\n")
    count = tmp_path / "runs-so-far"
    script = f'n=$(cat {count} 2>/dev/null || echo 0); echo $((n + 1)) > {count}; [ "$n" = 0 ] && grep -q v=0 k.txt'
    p = bisectk("diff", good, bad, "--run", f"bash -c '{script}'", "--json",
                "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=300)
    doc = json.loads(p.stdout)
    assert p.returncode == 2 and not doc["culprit_hunks"], (p.stdout[-2000:], p.stderr[-2000:])
    assert "the good configuration fails intermittently" in doc["endpoints"]["problem"]
    assert not (good / "out").exists() and not (bad / "out").exists()


def test_a_fifo_in_the_trees_neither_hangs_the_diff_nor_the_memo_key(tmp_path):
    """A named pipe in GOOD and BAD (and named by the command): it was read to hash it, which
    waits for a writer forever, before the first run."""
    import os
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 0), (bad, 1)):
        side.mkdir()
        (side / "k.txt").write_text(f"v={v}\n")
        os.mkfifo(side / "pipe")
    os.mkfifo(tmp_path / "events")
    p = bisectk("diff", good, bad, "--run", f"bash -c 'grep -q v=0 k.txt' {tmp_path / 'events'}", "--json",
                "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=60)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert [h["id"] for h in json.loads(p.stdout)["culprit_hunks"]] == ["k.txt:1"]


def test_a_command_that_names_a_file_inside_bad_is_warned_about(tmp_path):
    """The command as run by hand in BAD (`python3 /abs/bad/run.py`, or `bad/run.py` from the
    directory above): each hybrid runs in a scratch copy of GOOD, so that word never runs the
    hybrid's code. Once only "the good configuration fails too" was said; now a warning names the
    word and the path to use instead."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 0), (bad, 1)):
        side.mkdir()
        (side / "k.py").write_text(f"V = {v}\n")
        (side / "run.py").write_text("import os, sys\nsys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
                                     "import k\nsys.exit(k.V)\n")
    for command in (f"python3 {bad / 'run.py'}", "python3 bad/run.py"):
        p = bisectk("diff", good, bad, "--run", command, "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
        warning = [line for line in p.stderr.splitlines() if line.startswith("bisectk: warning:")]
        assert len(warning) == 1 and "inside BAD" in warning[0] and "('run.py')" in warning[0], p.stderr[-2000:]
    p = bisectk("diff", good, bad, "--run", "python3 run.py", "--ledger", tmp_path / "l.db", cwd=tmp_path, check=0)
    assert "warning" not in p.stderr


def test_a_word_that_is_only_a_trees_name_is_warned_about_as_maybe_no_path(tmp_path):
    """`--run "grep -q good k.py"` with trees named good and bad: the pattern `good` was warned
    about as naming GOOD ("name it relative to the tree ('.')") though it is no path and the
    answer was right. A bare word that is a tree's name is said as what it may be, either way."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        side.mkdir()
        (side / "k.py").write_text(f"x = {side.name}\n")
    p = bisectk("diff", good, bad, "--run", "grep -q good k.py", "--json", "--ledger", tmp_path / "l.db", cwd=tmp_path,
                timeout=120)
    assert p.returncode == 0 and [h["id"] for h in json.loads(p.stdout)["culprit_hunks"]] == ["k.py:1"], p.stderr
    warning = [line for line in p.stderr.splitlines() if line.startswith("bisectk: warning:")]
    assert len(warning) == 1 and "'good' is also GOOD's name" in warning[0] and "if it is no path" in warning[0], \
        p.stderr[-2000:]


def test_a_file_name_that_is_not_utf8_comes_out_of_json_readable_by_a_strict_reader(tmp_path):
    """A latin-1 file name (`lat\\xe9.py`, bytes no UTF-8 decoder takes) was written into --json and
    --json-out as a lone surrogate escape (`\\udce9`), which is not Unicode: jq shows U+FFFD and a
    strict reader refuses it. Its undecodable byte is written as `\\xe9` text instead."""
    import os
    good, bad = tmp_path / "good", tmp_path / "bad"
    name = os.fsdecode(b"lat\xe9.py")
    for side, v in ((good, 0), (bad, 1)):
        side.mkdir()
        (side / name).write_text(f"v = {v}\n")
    p = bisectk("diff", good, bad, "--run", "bash -c 'grep -q \"v = 0\" lat*.py'", "--json", "--json-out",
                tmp_path / "r.json", "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    for text in (p.stdout, (tmp_path / "r.json").read_text()):
        doc = json.loads(text)
        ids = [h["id"] for h in doc["culprit_hunks"]]
        assert ids == ["lat\\xe9.py:1"], ids
        json.dumps(doc, ensure_ascii=False).encode("utf-8")     # strict: no lone surrogate anywhere


def test_a_test_that_makes_a_directory_is_run_on_a_clean_hybrid_each_time(tmp_path):
    """`mkdir out` in the test: the scratch copy kept the last run's `out`, so every hybrid after
    the first failed (the good tree included: "the good configuration failed in the search").
    Without a build step each hybrid starts from GOOD and its hunks alone, as a fresh copy would."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 0), (bad, 1)):
        side.mkdir()
        (side / "k.txt").write_text(f"v={v}\n")
        (side / "other.txt").write_text(f"other {v}\n")
    p = bisectk("diff", good, bad, "--run", "bash -c 'mkdir out && grep -q v=0 k.txt'", "--json",
                "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert [h["id"] for h in json.loads(p.stdout)["culprit_hunks"]] == ["k.txt:1"]
    assert sorted(x.name for x in good.iterdir()) == ["k.txt", "other.txt"]     # GOOD itself untouched


def test_with_a_build_step_a_run_starts_on_the_builds_outputs_without_the_last_runs(tmp_path):
    """`--build` kept what the build made, but what a run made went with it: `mkdir out` in the
    test failed from the second hybrid on ("the good configuration fails"). Now what appears after
    the build is the run's, and goes before the next hybrid; the build's own output stays for the
    same hybrid's runs (its build is not run again) and goes before another hybrid's build (its
    log restarts: each hybrid is built from GOOD and its hunks alone)."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 0), (bad, 1)):
        side.mkdir()
        (side / "k.txt").write_text(f"v={v}\n")
        (side / "other.txt").write_text(f"other {v}\n")
    seen = tmp_path / "seen"
    build = "bash -c 'mkdir -p build && echo built >> build/log'"
    run = f"bash -c 'wc -l < build/log >> {seen} && mkdir out && touch build/run.txt && grep -q v=0 k.txt'"
    p = bisectk("diff", good, bad, "--build", build, "--run", run, "--json",
                "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert [h["id"] for h in json.loads(p.stdout)["culprit_hunks"]] == ["k.txt:1"]
    counts = [int(x) for x in seen.read_text().split()]
    assert len(counts) >= 3 and set(counts) == {1}, counts   # each hybrid's build from scratch
    assert sorted(x.name for x in good.iterdir()) == ["k.txt", "other.txt"]


def test_a_make_build_without_header_dependencies_builds_each_hybrid_from_scratch(tmp_path):
    """GOOD and BAD differ in a header (and a comment in a .c file); the Makefile does not know
    the objects depend on it. The scratch copy kept GOOD's objects when BAD's hunks were applied,
    make rebuilt only a.o, and BAD ran GOOD's b.o: "the bad configuration does not reproduce"
    (exit 2). Each hybrid's build now starts from GOOD and its hunks alone: the header is named."""
    import shutil
    import pytest
    if not (shutil.which("make") and shutil.which("cc")):
        pytest.skip("make and cc are needed")
    good, bad = tmp_path / "good", tmp_path / "bad"
    make = ("build/t: build/a.o build/b.o\n\tcc -o build/t build/a.o build/b.o\n"
            "build/%.o: %.c\n\t@mkdir -p build\n\tcc -c $< -o $@\n")
    for side, n, note in ((good, 42, ""), (bad, 43, "/* cosmetic */\n")):
        side.mkdir()
        (side / "Makefile").write_text(make)
        (side / "k.h").write_text(f"#define N {n}\n")
        (side / "a.c").write_text(f"int f(void);\n{note}int main(void) {{ return f() != 42; }}\n")
        (side / "b.c").write_text('#include "k.h"\nint f(void) { return N; }\n')
    p = bisectk("diff", good, bad, "--build", "make", "--run", "./build/t", "--json", "--no-lines",
                "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert [h["id"] for h in json.loads(p.stdout)["culprit_hunks"]] == ["k.h:1"]
    assert sorted(x.name for x in good.iterdir()) == ["Makefile", "a.c", "b.c", "k.h"]     # GOOD untouched


def _without_file_permissions_override(args):
    """argv that runs `args` where mode bits bind: as root, without CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH (setpriv), so a mode-000 file is unreadable as it is to any user."""
    import os
    import shutil
    import pytest
    if os.geteuid() != 0:
        return args
    if not shutil.which("setpriv"):
        pytest.skip("root without setpriv: every file is readable")
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", *args]


def test_an_unreadable_file_or_directory_in_good_or_bad_is_one_line_not_an_internal_error(tmp_path):
    """A mode-000 file in GOOD was an internal error (PermissionError, exit 3); a mode-000
    directory in GOOD too (at the scratch copy), and one in BAD was walked past in silence: its
    files became 'delete' hunks that no one made, which a search could name as the culprit. Each
    is bad input: one line naming the path, exit 2, the trees untouched."""
    import os
    import subprocess
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 0), (bad, 1)):
        (side / "sub").mkdir(parents=True)
        (side / "k.txt").write_text(f"v={v}\n")
        (side / "sub" / "f.txt").write_text("inner\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for locked in (good / "k.txt", good / "sub", bad / "sub"):
        before = tree_digest(good), tree_digest(bad)
        os.chmod(locked, 0)
        try:
            p = subprocess.run(_without_file_permissions_override(
                [sys.executable, "-m", "bisectk", "diff", str(good), str(bad), "--run", "grep -q v=0 k.txt", "--json"]),
                cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
        finally:
            os.chmod(locked, 0o755 if locked.name == "sub" else 0o644)
        assert p.returncode == 2, (locked, p.returncode, p.stdout[-2000:], p.stderr[-2000:])
        assert p.stderr.startswith("bisectk: ") and len(p.stderr.splitlines()) == 1, p.stderr
        assert str(locked) in p.stderr and "Permission denied" in p.stderr and "internal error" not in p.stderr
        assert (tree_digest(good), tree_digest(bad)) == before
    assert not list((tmp_path / "cache").rglob("scratch-*"))


def test_a_test_that_changes_permissions_in_its_tree_neither_ends_the_diff_nor_leaves_the_scratch_tree(tmp_path):
    """The test makes its tree read-only (`chmod 555 src`), a file unreadable and a directory it
    made unreadable. As any user but root the next hybrid's apply could not write there: an
    internal error, and the scratch tree, which rmtree could not remove, was left in the cache (the
    next command's clean-up failed the same way). Each hybrid starts with GOOD's modes, the
    scratch tree goes, with or without a build step."""
    import os
    import subprocess
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 0), (bad, 1)):
        (side / "src").mkdir(parents=True)
        for k in range(6):
            (side / "src" / f"m{k}.txt").write_text(f"v{k} = {v if k == 4 else 0}\n" if k == 4 else f"v{k} = {v}{v}\n")
    test = tmp_path / "t.sh"
    test.write_text("""[ -w src ] && [ -r src/m0.txt ] || exit 3
[ -e out ] && [ "$1" != keeps ] && exit 3     # with a build step, what a run made stays
grep -q 'v4 = 1' src/m4.txt && r=1 || r=0
mkdir -p out/x; chmod 000 out; chmod 000 src/m0.txt; chmod 555 src
exit $r
""")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    before = tree_digest(good), tree_digest(bad)
    for build, keeps in (([], ""), (["--build", "true"], " keeps")):
        p = subprocess.run(_without_file_permissions_override(
            [sys.executable, "-m", "bisectk", "diff", str(good), str(bad), "--run", f"bash {test}{keeps}", "--json", *build]),
            cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
        assert p.returncode == 0, (build, p.returncode, p.stdout[-2000:], p.stderr[-2000:])
        assert [h["id"] for h in json.loads(p.stdout)["culprit_hunks"]] == ["src/m4.txt:1"]
        assert not list((tmp_path / "cache" / "bisectk").glob("scratch-*")), build
    assert (tree_digest(good), tree_digest(bad)) == before


def test_a_link_beside_the_trees_reaches_the_same_directory_from_each_hybrid_never_bisectks_cache(tmp_path):
    """GOOD and BAD hold `logs -> ../logs`, a directory beside them, and the test clears it before
    it writes. Each hybrid's copy of that link named `../logs` from the scratch tree in bisectk's
    cache: bisectk's own run logs, which the test emptied; and what the test reads there was never
    what GOOD's test reads. The link names the user's `logs` from every hybrid."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "limit").write_text("3\n")
    for side, v in ((good, 2), (bad, 5)):
        side.mkdir()
        (side / "k.txt").write_text(f"{v}\n")
        (side / "other.txt").write_text(f"{v}\n")
        (side / "logs").symlink_to("../logs")
    script = 'limit=$(cat logs/limit) && find logs/ -name "run*" -delete && date > logs/run.txt && [ "$(cat k.txt)" -le "$limit" ]'
    cache = tmp_path / "cache"
    p = bisectk("diff", good, bad, "--run", f"bash -c '{script}'", "--json", cwd=tmp_path, timeout=120,
                env={"XDG_CACHE_HOME": str(cache)})
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert [h["id"] for h in json.loads(p.stdout)["culprit_hunks"]] == ["k.txt:1"]
    assert sorted(x.name for x in (tmp_path / "logs").iterdir()) == ["limit", "run.txt"]
    assert list((cache / "bisectk" / "logs").iterdir())        # bisectk's own run logs are still there


def test_a_ledger_inside_good_or_bad_is_refused_before_anything_is_written_there(tmp_path):
    """`--ledger good/l.db`, or a cache directory inside GOOD (XDG_CACHE_HOME=good/.cache): the
    ledger was created in GOOD (and its run logs beside it), then the scratch tree beside it was
    refused as overlapping GOOD: GOOD was modified by a command that only failed. Refused first."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 0), (bad, 1)):
        side.mkdir()
        (side / "k.txt").write_text(f"v={v}\n")
    before = tree_digest(good), tree_digest(bad)
    for args, env in ((["--ledger", "good/l.db"], None), (["--ledger", str(bad / "sub" / "l.db")], None),
                      ([], {"XDG_CACHE_HOME": str(good / ".cache")})):
        p = bisectk("diff", good, bad, "--run", "grep -q v=0 k.txt", *args, cwd=tmp_path, env=env)
        assert p.returncode == 2 and p.stderr.startswith("bisectk: ") and len(p.stderr.splitlines()) == 1, p.stderr
        assert "ledger" in p.stderr and ("inside GOOD" in p.stderr or "inside BAD" in p.stderr), p.stderr
        assert (tree_digest(good), tree_digest(bad)) == before, args
        assert sorted(x.name for x in good.iterdir()) == ["k.txt"] and sorted(x.name for x in bad.iterdir()) == ["k.txt"]


def test_a_command_that_names_a_script_beside_the_trees_is_warned_about(tmp_path):
    """`--run ./check.sh` with check.sh beside GOOD and BAD (git bisect run's habit): every hybrid
    runs in a scratch copy of GOOD, where ./check.sh names nothing, and all that was said was
    "cannot start './check.sh': No such file or directory" while the file is right there. A
    warning names the word and its absolute path."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 0), (bad, 1)):
        side.mkdir()
        (side / "k.txt").write_text(f"v={v}\n")
    check = tmp_path / "check.sh"
    check.write_text("#!/bin/sh\ngrep -q v=0 k.txt\n")
    check.chmod(0o755)
    p = bisectk("diff", good, bad, "--run", "./check.sh", "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
    warning = [line for line in p.stderr.splitlines() if line.startswith("bisectk: warning:")]
    assert p.returncode == 2 and len(warning) == 1, p.stderr[-2000:]
    assert "./check.sh" in warning[0] and f"'{check}'" in warning[0] and "not in GOOD" in warning[0]
    p = bisectk("diff", good, bad, "--run", str(check), "--ledger", tmp_path / "l.db", cwd=tmp_path, check=0)
    assert "warning" not in p.stderr


def test_a_command_that_names_a_file_pair_by_another_name_is_warned_about(tmp_path):
    """`bisectk diff repro.py kernel.py --run 'python3 kernel.py'`: each hybrid is GOOD's file,
    named `repro.py`, in a scratch directory, so `kernel.py` (BAD itself, from here) named nothing
    there, every run failed alike, and all that was said was that the good configuration fails
    too; `/abs/repro.py` ran the user's GOOD for every hybrid. The warning the trees have names
    the word and the name to use."""
    good, bad = tmp_path / "repro.py", tmp_path / "kernel.py"
    good.write_text("import sys\nx = 1\nsys.exit(0 if x == 1 else 1)\n")
    bad.write_text("import sys\nx = 2\nsys.exit(0 if x == 1 else 1)\n")
    for word in ("kernel.py", str(good), "./kernel.py"):
        p = bisectk("diff", good.name, bad.name, "--run", f"python3 {word}", "--ledger", tmp_path / "l.db",
                    cwd=tmp_path, timeout=120, check=None)
        warning = [line for line in p.stderr.splitlines() if line.startswith("bisectk: warning:")]
        assert p.returncode == 2 and len(warning) == 1, (word, p.stderr[-2000:])
        assert word in warning[0] and "'repro.py'" in warning[0], warning[0]
    p = bisectk("diff", good.name, bad.name, "--run", "python3 repro.py", "--ledger", tmp_path / "l.db",
                cwd=tmp_path, timeout=120)
    assert "warning" not in p.stderr and "culprit hunk(s): repro.py:2" in p.stdout, p.stderr[-2000:]


def test_a_specs_cwd_is_a_directory_of_the_hybrid_tree(tmp_path):
    """A spec with `cwd = "k"` (its command `sh run.sh`, k/run.sh in both trees): diff ran every
    hybrid from the tree's root, where run.sh is not, said nothing of the key it dropped, and
    answered that the good configuration fails too. The spec's `cwd` is read in the hybrid tree,
    as bisect reads it in each commit's; one GOOD does not have is said in a warning (the runs are
    made from the tree's root, as before)."""
    good, bad, specs = tmp_path / "good", tmp_path / "bad", tmp_path / "specs"
    for side, code in ((good, 0), (bad, 1)):
        (side / "k").mkdir(parents=True)
        (side / "k" / "run.sh").write_text(f"exit {code}\n")
    specs.mkdir()
    (specs / "pyproject.toml").touch()
    spec = specs / "s.toml"
    spec.write_text('[subject]\ncommand = ["sh", "run.sh"]\ncwd = "k"\n')
    p = bisectk("diff", good, bad, spec, "--json", "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert [h["id"] for h in json.loads(p.stdout)["culprit_hunks"]] == ["k/run.sh:1"]
    spec.write_text('[subject]\ncommand = ["sh", "run.sh"]\ncwd = "nope"\n')
    p = bisectk("diff", good, bad, spec, "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
    warning = [line for line in p.stderr.splitlines() if line.startswith("bisectk: warning:")]
    assert len(warning) == 1 and "'nope'" in warning[0] and "not followed" in warning[0], p.stderr[-2000:]


def test_a_renamed_directory_is_gone_from_the_hybrid_with_all_hunks_as_it_is_from_bad(tmp_path):
    """`kernels/old/` became `kernels/new/`: a delete hunk and an add hunk. With both applied the
    scratch copy kept `kernels/old/`, empty, as a directory GOOD has, so the hybrid with every hunk
    was not BAD: a test that counts the kernels' directories passed on GOOD and on BAD, failed
    there, and `kernels/new/x.py:add` was named the culprit of a failure BAD does not have. A
    directory a deletion empties goes unless BAD has it too."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, sub in ((good, "old"), (bad, "new")):
        for d in ("keep", sub):
            (side / "kernels" / d).mkdir(parents=True)
            (side / "kernels" / d / "x.py").write_text(f"# {d}\n" if d == "keep" else "# x\n")
    (good / "kernels" / "keep" / "y.py").write_text("y = 1\n")       # a deletion from a directory BAD keeps
    count = "import os, sys; sys.exit(sorted(os.listdir('kernels')) not in (['keep', 'old'], ['keep', 'new']))"
    p = bisectk("diff", good, bad, "--run", f"{sys.executable} -c \"{count}\"", "--json",
                "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
    doc = json.loads(p.stdout)
    assert p.returncode == 2 and not doc["culprit_hunks"], (p.stdout[-2000:], p.stderr[-2000:])
    assert "does not reproduce" in doc["endpoints"]["problem"]
    p = bisectk("diff", good, bad, "--run", "test -d kernels/keep", "--ledger", tmp_path / "l.db", cwd=tmp_path)
    assert p.returncode == 2 and "does not reproduce" in p.stdout     # BAD keeps kernels/keep/


def test_directories_no_hunk_carries_are_named_not_passed_over(tmp_path):
    """An empty directory on one side only (`out/`), or a directory whose mode differs: no hunk
    carries it, so every hybrid has GOOD's. Trees that differ only so were called identical; beside
    other hunks, BAD's failure through it read as 'the bad configuration does not reproduce' with
    no word of why. Either way they are named."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        (side / "d").mkdir(parents=True)
        (side / "k.txt").write_text("k\n")
    (good / "out").mkdir()
    (good / "d").chmod(0o755)                   # not the umask's (077 made both 700)
    (bad / "d").chmod(0o700)
    p = bisectk("diff", good, bad, "--run", "test -d out", cwd=tmp_path, env={"XDG_CACHE_HOME": str(tmp_path / "c")})
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert "out/ (GOOD only, empty)" in p.stderr and "d/ (mode 755 -> 700)" in p.stderr, p.stderr
    (bad / "k.txt").write_text("k2\n")
    p = bisectk("diff", good, bad, "--run", "test -d out", cwd=tmp_path, env={"XDG_CACHE_HOME": str(tmp_path / "c")})
    warning = [line for line in p.stderr.splitlines() if line.startswith("bisectk: warning:")]
    assert p.returncode == 2 and len(warning) == 1 and "out/ (GOOD only, empty)" in warning[0], p.stderr


def test_runs_of_hybrids_made_the_old_way_are_not_reused(tmp_path):
    """How a hunk set becomes a tree changed (a renamed directory's old name gone, a link that
    climbs out of its tree): a ledger's runs of hybrids made the old way answered again, with the
    wrong culprit they found then. The hunk space's revision carries the way hybrids are made."""
    from bisectk.spaces.hunkspace import MADE, HunkSpace
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 0), (bad, 1)):
        side.mkdir()
        (side / "k.txt").write_text(f"v={v}\n")
    space = HunkSpace(good, bad, tmp_path / "scratch")
    try:
        assert space.revision.startswith(f"diff-{MADE}-") and MADE == "made3"
    finally:
        space.close()


def test_swapped_trees_are_told_to_swap_good_and_bad_as_diff_names_them(tmp_path):
    """A diff whose GOOD fails and BAD passes is told how diff's endpoints are swapped (its two
    arguments), and, with a --run command and no thresholds, to check the command's exit status:
    it said 'swap [good] and [bad] or check the oracle thresholds', a spec's words."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 2), (bad, 1)):
        side.mkdir()
        (side / "v.txt").write_text(f"{v}\n")
    p = bisectk("diff", str(good), str(bad), "--run", "sh -c '[ $(cat v.txt) -lt 2 ]'",
                "--ledger", str(tmp_path / "l.db"), "--report", str(tmp_path / "r.md"), cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr[-1500:])
    said = p.stdout + p.stderr
    assert "endpoints are inverted" in said and "swap GOOD and BAD or check the command's exit status" in said, said
    assert "[good]" not in said and "thresholds" not in said, said
    # the debug log's title said the bad endpoint's verdict alone: 'diff good vs bad: PASS'
    title = (tmp_path / "r.md").read_text().splitlines()[0]
    assert title.endswith(": inconclusive (bad: PASS)"), title


def test_build_timeout_limits_the_build_step(tmp_path):
    """--build had no way to set the build's limit (240 s; only a spec's `build_timeout`): BAD's
    build that hangs was four silent minutes. --build-timeout 1 makes it UNRESOLVED at once, named
    as a build that timed out, and the hung build's processes are gone."""
    from tests.conftest import new_mark, own_processes
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, build in ((good, "true\n"), (bad, "sleep 600\n")):
        side.mkdir()
        (side / "build.sh").write_text(build)
        (side / "run.sh").write_text("echo ok\n")
    mark = new_mark()
    p = bisectk("diff", good, bad, "--build", "sh build.sh", "--run", "sh run.sh", "--build-timeout", "1", "--json",
                "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120, env=mark)
    assert p.returncode == 2, (p.stdout[-2000:], p.stderr[-2000:])
    problem = json.loads(p.stdout)["endpoints"]["problem"]
    assert problem == "the bad configuration cannot be tested: UNRESOLVED build (build timed out after 1.0 s)", problem
    assert own_processes(mark) == []


def test_a_hunk_in_the_script_the_command_names_is_no_edit_of_it(tmp_path):
    """`diff good bad --run 'sh t.sh'` where t.sh itself differs: the memo key read t.sh from the
    scratch copy, where the hunks rewrite it, so the first hybrid with its hunk said "t.sh changed
    while this command ran ... none of its runs is kept for reuse", and the same command again ran
    everything again. The key reads the named files from GOOD; the hunk space's revision pins the
    hybrids: no such note, and the second command is answered from the ledger."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, code in ((good, 0), (bad, 1)):
        side.mkdir()
        (side / "t.sh").write_text(f"exit {code}\n")
        (side / "notes.txt").write_text(f"{code}\n")
    runs = []
    for _ in range(2):
        p = bisectk("diff", good, bad, "--run", "sh t.sh", "--json", "--ledger", tmp_path / "l.db", cwd=tmp_path)
        assert p.returncode == 0 and "changed while this command ran" not in p.stderr, (p.stdout[-2000:], p.stderr)
        doc = json.loads(p.stdout)
        assert [h["id"] for h in doc["culprit_hunks"]] == ["t.sh:1"]
        runs.append(doc["runs"])
    assert runs[0] > 0 and runs[1] == 0, runs


def test_trees_that_hold_their_own_build_outputs_are_said_with_a_build_step(tmp_path):
    """good/ and bad/ built in place (`make` run in each): their objects and executable were hunks
    like the sources, and the answer named `build/b.o:replace` and `build/t:replace`, never the
    header (applied alone it passed: GOOD's b.o is in the copy and make rebuilds nothing), with no
    word why. A warning names the compiled files; without a build step nothing is said."""
    import shutil
    import subprocess
    import pytest
    if not (shutil.which("make") and shutil.which("cc")):
        pytest.skip("make and cc are needed")
    good, bad = tmp_path / "good", tmp_path / "bad"
    make = ("build/t: build/a.o build/b.o\n\tcc -o build/t build/a.o build/b.o\n"
            "build/%.o: %.c\n\t@mkdir -p build\n\tcc -c $< -o $@\n")
    for side, n in ((good, 42), (bad, 43)):
        side.mkdir()
        (side / "Makefile").write_text(make)
        (side / "k.h").write_text(f"#define N {n}\n")
        (side / "a.c").write_text("int f(void);\nint main(void) { return f() != 42; }\n")
        (side / "b.c").write_text('#include "k.h"\nint f(void) { return N; }\n')
        subprocess.run(["make", "-s"], cwd=side, check=True, capture_output=True)
    for build in (["--build", "make"], []):
        p = bisectk("diff", good, bad, *build, "--run", "./build/t", "--json", "--no-lines", "--max-runs", "30",
                    "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
        warning = [line for line in p.stderr.splitlines() if "hold compiled files" in line]
        if build:
            assert len(warning) == 1 and "build/b.o" in warning[0] and "build/t" in warning[0], p.stderr
        else:
            assert warning == [], p.stderr


def test_the_line_pass_keeps_a_renamed_definition_with_its_use(tmp_path):
    """A hunk renames `x = 1` to `xx = 3` and its use on the next line; the failure needs both
    (`--run`, exit 1). Before: the line pass answered the definition's line alone, whose hybrid
    dies of `NameError: name 'x' is not defined` (exit 1 too), half a rename that is no culprit.
    Now that NameError is a different failure, and the answer is both lines."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        side.mkdir()
    (good / "r.py").write_text("import sys\nx = 1\ny = x + 1\nz = 5\nsys.exit(0 if y + z < 8 else 1)\n")
    (bad / "r.py").write_text("import sys\nxx = 3\ny = xx + 1\nz = 4\nsys.exit(0 if y + z < 8 else 1)\n")
    p = bisectk("diff", good, bad, "--run", "python r.py", "--json", "--ledger", tmp_path / "l.db", check=0)
    doc = json.loads(p.stdout)
    changed = {line for line in doc["lines_diff"].splitlines() if line[:1] in "+-" and line[:3] not in ("---", "+++")}
    assert changed == {"-x = 1", "-y = x + 1", "+xx = 3", "+y = xx + 1"}, doc["lines_diff"]


def _tiles_pair(tmp_path, run_py: str):
    """GOOD splits into tiles of 2; BAD's kern.py:6-7 and tiles.py:1-2 rework it into tiles of 3 that
    drop each short tile's last element. Splitting the two blocks into lines, most hybrids do not
    parse (IndentationError) or link (a module's missing attribute, a NameError)."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        side.mkdir()
        (side / "run.py").write_text(run_py)
    (good / "kern.py").write_text("import tiles\n\n\ndef launch(xs, k):\n    res = []\n"
                                  "    for t in tiles.split(xs):\n        res.extend(tiles.apply(t, k))\n"
                                  "    return res\n")
    (good / "tiles.py").write_text("def split(xs):\n    return [xs[i:i + 2] for i in range(0, len(xs), 2)]\n\n\n"
                                   "def apply(t, k):\n    return [x * k for x in t]\n")
    (bad / "kern.py").write_text("import tiles\n\n\ndef launch(xs, k):\n    res = []\n    width = tiles.WIDTH\n"
                                 "    for t in tiles.split_tiles(xs, width):\n        if len(t) == width:\n"
                                 "            res.extend(tiles.apply(t, k))\n        else:\n"
                                 "            res.extend(tiles.apply(t[:-1], k))\n    return res\n")
    (bad / "tiles.py").write_text("WIDTH = 3\n\n\ndef split_tiles(xs, width):\n    out = []\n"
                                  "    for i in range(0, len(xs), width):\n        out.append(xs[i:i + width])\n"
                                  "    return out\n\n\ndef apply(t, k):\n    return [x * k for x in t]\n")
    return good, bad


def test_a_hybrid_that_does_not_parse_or_link_is_run_once_not_three_times(tmp_path):
    """The line pass splits a block into lines, and most of its hybrids do not parse
    (IndentationError) or link (an AttributeError of a module, a NameError): a different failure
    under `--run`, which the oracle re-ran twice before leaving it unresolved, though the same tree
    says the same again (a hunk pair of 2: 155 runs, 120 of them such hybrids'). Now each is run
    once, and the answer is the same."""
    good, bad = _tiles_pair(tmp_path, "import sys\nimport kern\n\nout = kern.launch([1, 2, 3, 4], 2)\n"
                                      "sys.exit(0 if out == [2, 4, 6, 8] else 1)\n")
    p = bisectk("diff", good, bad, "--run", "python run.py", "--json", "--ledger", tmp_path / "l.db", check=0)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and [h["id"] for h in doc["culprit_hunks"]] == ["kern.py:6-7", "tiles.py:1-2"], doc
    unbuilt = [a for a in doc["attempts"] if a["outcome"] == "unresolved"]
    assert unbuilt and all("Error" in a["verdict"] for a in unbuilt), doc["attempts"]
    # one run each (none where the hunk pass's run of the same tree answered: same_trees)
    assert all(a["runs"] <= 1 for a in unbuilt), [(a["applied"], a["runs"], a["verdict"]) for a in unbuilt]
    assert [h["id"] for h in doc["culprit_lines"]] == ["kern.py:6-7#0", "kern.py:6-7#2", "kern.py:6-7#3",
                                                        "tiles.py:1-2#0"], doc["lines_diff"]


def test_under_a_spec_a_hybrid_that_does_not_link_is_run_once_too(tmp_path):
    """The same pair under a spec (a metric, not --run's exit code): a hybrid dying of `NameError:
    name 'width' is not defined` or `AttributeError: module 'tiles' has no attribute 'WIDTH'` is a
    CRASH there, and only parse errors were run once: each of the others was run three times (123
    runs, lines 102). It is read by --run's rule now (outcome.unlinked): 69 runs (68 once the line
    pass took the hunk pass's verdicts: same_trees), the same answer."""
    good, bad = _tiles_pair(tmp_path, "import json\nimport kern\n\nout = kern.launch([1, 2, 3, 4], 2)\n"
                                      "err = sum(abs(a - b) for a, b in zip(out, [2, 4, 6, 8])) + abs(len(out) - 4)\n"
                                      "print('BISECTK_RESULT ' + json.dumps({'err': err}))\n")
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "tiles"\n[subject]\ncommand = ["python", "run.py"]\n[oracle]\nmetric = "err"\nmax = 0.5\n')
    p = bisectk("diff", good, bad, spec, "--json", "--ledger", tmp_path / "l.db", check=0)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and [h["id"] for h in doc["culprit_hunks"]] == ["kern.py:6-7", "tiles.py:1-2"], doc
    unlinked = [a for a in doc["attempts"] if a["outcome"] == "unresolved" and "Error" in a["verdict"]
                and "IndentationError" not in a["verdict"]]
    assert any("NameError" in a["verdict"] for a in unlinked) and any("AttributeError" in a["verdict"]
                                                                       for a in unlinked), doc["attempts"]
    assert all(a["runs"] <= 1 for a in unlinked), [(a["applied"], a["runs"], a["verdict"]) for a in unlinked]
    assert [h["id"] for h in doc["culprit_lines"]] == ["kern.py:6-7#0", "kern.py:6-7#2", "kern.py:6-7#3",
                                                        "tiles.py:1-2#0"], doc["lines_diff"]


def test_the_line_pass_does_not_run_again_a_tree_the_hunk_pass_ran(tmp_path):
    """Every line of kern.py:6-7 applied is kern.py:6-7 applied: the same files, built and run the
    same way. The line pass asked for it under its units' ids and ran it again (a point of its own,
    a different failure: one run, three before Run.unbuilt). The hunk pass's verdict answers it now
    (engine/diff.py same_trees): no run, its words the hunk pass's, the same answer."""
    good, bad = _tiles_pair(tmp_path, "import sys\nimport kern\n\nout = kern.launch([1, 2, 3, 4], 2)\n"
                                      "sys.exit(0 if out == [2, 4, 6, 8] else 1)\n")
    p = bisectk("diff", good, bad, "--run", "python run.py", "--json", "--ledger", tmp_path / "l.db", check=0)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and [h["id"] for h in doc["culprit_hunks"]] == ["kern.py:6-7", "tiles.py:1-2"], doc
    units = [f"kern.py:6-7#{i}" for i in range(6)]
    asked = [a for a in doc["attempts"] if a["pass_name"] == "lines" and a["applied"] == units]
    ran = [a for a in doc["attempts"] if a["pass_name"] == "hunks" and a["applied"] == ["kern.py:6-7"]]
    assert asked and ran and ran[0]["runs"] == 1, doc["attempts"]
    assert [(a["runs"], a["outcome"]) for a in asked] == [(0, ran[0]["outcome"])], asked
    assert asked[0]["verdict"] == ran[0]["verdict"] + " (the hunk pass's, as kern.py:6-7)", asked
    assert [h["id"] for h in doc["culprit_lines"]] == ["kern.py:6-7#0", "kern.py:6-7#2", "kern.py:6-7#3",
                                                        "tiles.py:1-2#0"], doc["lines_diff"]
    assert sum(a["runs"] for a in doc["attempts"] if a["pass_name"] == "lines") == 51, doc["attempts"]


def test_a_rename_across_two_files_is_no_failing_set_beside_the_real_culprit(tmp_path):
    """bad renames `f` to `g` in a.py and its call in b.py (benign together), and raises SCALE, which
    alone makes the check fail (`--run`, exit 1). Each half of the rename tried alone dies of
    `AttributeError: module 'a' has no attribute ...`, exit 1 too: diff answered three independent
    failing sets (both halves of the rename and SCALE). The answer is SCALE's line alone."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, name, scale, lim in ((good, "f", 2, 10), (bad, "g", 3, 11)):
        side.mkdir()
        (side / "a.py").write_text(f"def {name}(x):\n    return x + 1\n\n\nSCALE = {scale}\n")
        (side / "b.py").write_text(f"import a\n\n\ndef main():\n    v = a.{name}(3) * a.SCALE\n    lim = {lim}\n"
                                   "    return v, lim\n")
        (side / "t.py").write_text("import b\nv, lim = b.main()\nraise SystemExit(1 if v > lim else 0)\n")
    p = bisectk("diff", good, bad, "--run", "python t.py", "--json", "--ledger", tmp_path / "l.db", check=0)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and [h["id"] for h in doc["culprit_hunks"]] == ["a.py:5"], (p.stdout, p.stderr[-2000:])
    changed = {line for line in doc["culprit_hunks"][0]["text"].splitlines() if line[:1] in "+-"
               and line[:3] not in ("---", "+++")}
    assert changed == {"-SCALE = 2", "+SCALE = 3"} and len(doc["sets"]) <= 1, doc


def test_diffs_warnings_reach_its_json_json_out_and_debug_log(tmp_path):
    """`ablate --json` had `warnings`; `diff --json` had none, so a CI reader of the document never
    saw what stderr warned of (here: a command naming a file inside BAD). The same warning is the
    document's `warnings` (--json and --json-out) and a line of the debug log's summary."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 0), (bad, 1)):
        side.mkdir()
        (side / "run.py").write_text(f"import sys\nsys.exit({v})\n")
    out, md = tmp_path / "d.json", tmp_path / "d.md"
    p = bisectk("diff", good, bad, "--run", "python3 run.py bad/run.py", "--json", "--json-out", out, "--report", md,
                "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
    said = [line.removeprefix("bisectk: warning: ") for line in p.stderr.splitlines()
            if line.startswith("bisectk: warning:")]
    assert len(said) == 1 and "inside BAD" in said[0], p.stderr[-2000:]
    for doc in (json.loads(p.stdout), json.loads(out.read_text())):
        assert doc["warnings"] == said, doc.get("warnings")
    assert f"- Warning: {said[0]}" in md.read_text()


def test_a_file_name_with_a_newline_is_one_line_on_the_terminal_and_raw_in_json(tmp_path):
    """A file named 'a<newline>b.py': its hunk id split the result line in two ('culprit hunk(s): a'
    and then 'b.py:2' as a line of its own). The terminal C-quotes it as git quotes the path in the
    diff below it ("a\\nb.py:2"); --json keeps the name as it is."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 0), (bad, 1)):
        side.mkdir()
        (side / "a\nb.py").write_text(f"import sys\nsys.exit({v})\n")
        (side / "run.py").write_text("import glob, runpy\nrunpy.run_path(glob.glob('a*b.py')[0])\n")
    p = bisectk("diff", good, bad, "--run", "python3 run.py", "--no-lines", "--ledger", tmp_path / "l.db",
                cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert '1 hunk; culprit hunk(s): "a\\nb.py:2"' in p.stdout.splitlines(), p.stdout
    assert not any(line.startswith("b.py") for line in (p.stdout + p.stderr).splitlines()), p.stdout
    p = bisectk("diff", good, bad, "--run", "python3 run.py", "--no-lines", "--json", "--ledger", tmp_path / "l.db",
                cwd=tmp_path, timeout=120)
    assert [h["id"] for h in json.loads(p.stdout)["culprit_hunks"]] == ["a\nb.py:2"]


def test_two_files_whose_names_hold_a_newline_are_named_on_one_line(tmp_path):
    """`diff 'good<newline>k.py' 'bad<newline>k.py'`: the first line ('1 hunk between GOOD and BAD')
    printed both paths raw, so it was three lines and its middle one read 'k.py and bad'. The paths
    are C-quoted there, as the hunk ids below it are."""
    good, bad = tmp_path / "good\nk.py", tmp_path / "bad\nk.py"
    good.write_text("import sys\nsys.exit(0)\n")
    bad.write_text("import sys\nsys.exit(1)\n")
    p = bisectk("diff", good, bad, "--run", "sh -c 'python3 -- *k.py'", "--no-lines", "--ledger", tmp_path / "l.db",
                cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    first = p.stdout.splitlines()[0]
    assert first == f'1 hunk between "{tmp_path}/good\\nk.py" and "{tmp_path}/bad\\nk.py"', p.stdout


def test_a_hang_in_a_file_whose_name_holds_a_newline_keeps_the_stuck_at_line_whole(tmp_path):
    """The hang's picture names the culprit hunks it applied to GOOD: the ids were joined raw, so
    'a<newline>b.py:2' split the 'stuck at' line in two. They are C-quoted there as everywhere, and
    so is the file of the place where the thread waits (py-spy's frame), in the picture's rows."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, body in ((good, "pass"), (bad, "time.sleep(60)")):
        side.mkdir()
        (side / "a\nb.py").write_text(f"import time\n{body}\n")
        (side / "run.py").write_text("import glob, runpy\nrunpy.run_path(glob.glob('a*b.py')[0])\n")
    p = bisectk("diff", good, bad, "--run", "python3 run.py", "--no-lines", "--timeout", "2",
                "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    lines = p.stdout.splitlines()
    assert any('the culprit hunks applied to GOOD ("a\\nb.py:2")' in line for line in lines), p.stdout
    assert any('"a\\nb.py":2 <module>' in line for line in lines), p.stdout
    assert not any(line.startswith("b.py") for line in (p.stdout + p.stderr).splitlines()), p.stdout


def test_the_printed_culprit_diff_keeps_its_tabs_and_applies_to_good(tmp_path):
    """A Makefile (a recipe line starts with a tab; so does C indented with tabs): the terminal's
    culprit diff had every tab expanded to spaces (rich's printing), so its context matched no line
    of GOOD and neither `patch -p1` nor `git apply` took it ('Hunk #1 FAILED'). It is printed as it
    is, tabs kept, and applied to a copy of GOOD it gives BAD's file."""
    import shutil
    import subprocess
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, step in ((good, "two"), (bad, "2")):
        side.mkdir()
        (side / "Makefile").write_text(f"all:\n\techo one\n\techo {step}\n\techo three\n")
    p = bisectk("diff", good, bad, "--run", "grep -q two Makefile", "--ledger", tmp_path / "l.db",
                cwd=tmp_path, timeout=120)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    lines = p.stdout.splitlines(keepends=True)
    start = next(k for k, line in enumerate(lines) if line.startswith("diff --git"))
    end = next(k for k, line in enumerate(lines) if line.startswith("failure:"))
    patch = "".join(lines[start:end])
    assert "\techo 2\n" in patch, patch
    for tool in (["patch", "-p1", "-s"], ["git", "apply", "-"]):
        if shutil.which(tool[0]) is None:
            continue
        copy = tmp_path / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(good, copy)
        proc = subprocess.run(tool, input=patch, text=True, cwd=copy, capture_output=True)
        assert proc.returncode == 0, (tool, proc.stdout, proc.stderr, patch)
        assert (copy / "Makefile").read_text() == (bad / "Makefile").read_text()


def test_the_printed_culprit_diff_of_a_crlf_file_keeps_its_line_ends_and_applies_to_good(tmp_path):
    """A file with CRLF line ends (sources from Windows): the terminal's culprit diff wrote each
    line's CR as the text `\\x0d` (control characters are escaped there), so the printed patch
    matched no line of GOOD. A CR that ends a line moves nothing a newline would not: it is
    printed as it is, and the patch applies; a CR inside a line is still escaped."""
    import shutil
    import subprocess
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, b in ((good, 2), (bad, 5)):
        side.mkdir()
        (side / "k.py").write_bytes(f"a = 1\r\nb = {b}\r\nc = '\r'\r\n".encode())
    # the bytes as printed (conftest's bisectk reads text, where CRLF is a newline)
    p = subprocess.run([sys.executable, "-m", "bisectk", "diff", good, bad, "--run", "grep -q 'b = 2' k.py",
                        "--ledger", tmp_path / "l.db"], cwd=tmp_path, capture_output=True, timeout=120)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    out = p.stdout
    patch = out[out.index(b"diff --git"):out.index(b"failure:")]
    assert b"-b = 2\r\n+b = 5\r\n" in patch and b"c = '\\x0d'\r\n" in patch, patch
    copy = tmp_path / "copy"
    shutil.copytree(good, copy)
    proc = subprocess.run(["git", "apply", "-"], input=patch.replace(b"\\x0d", b"\r"), cwd=copy, capture_output=True)
    assert proc.returncode == 0, (proc.stderr, patch)
    assert (copy / "k.py").read_bytes() == (bad / "k.py").read_bytes()


def test_two_failing_sets_that_share_a_hunk_list_it_once_among_the_culprit_hunks(tmp_path):
    """GOOD fails with lines 1 and 4 changed, or with lines 4 and 7: two failing sets that share
    `k.py:4`. --json's culprit_hunks listed each set's hunks one after the other, so `k.py:4` came
    twice (4 culprit hunks of 3). Each hunk is listed once, in the sets' order."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 0), (bad, 1)):
        side.mkdir()
        (side / "k.py").write_text("".join(f"k{i} = {v if i % 3 == 0 else 0}\n" for i in range(9)))
    (tmp_path / "check.py").write_text(
        "import sys\nsys.path.insert(0, '.')\nimport k\n"
        "sys.exit(1 if (k.k0 and k.k3) or (k.k3 and k.k6) else 0)\n")
    p = bisectk("diff", good, bad, "--run", f"{sys.executable} {tmp_path / 'check.py'}", "--json",
                "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=300)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["complete"], (p.stdout[-2000:], p.stderr[-2000:])
    assert sorted(sorted(s["members"]) for s in doc["sets"]) == [["k.py:1", "k.py:4"], ["k.py:4", "k.py:7"]]
    assert sorted(h["id"] for h in doc["culprit_hunks"]) == ["k.py:1", "k.py:4", "k.py:7"]
    assert sorted(h["id"] for h in doc["culprit_lines"]) == ["k.py:1", "k.py:4", "k.py:7"]


HALF_FLAKE = """import random, sys
from pathlib import Path
P = {p}
seed, counts = sys.argv[1], Path(sys.argv[2])
count = counts / str(P)                  # the k-th run of each tree draws its own number
k = int(count.read_text()) if count.exists() else 0
count.write_text(str(k + 1))
sys.exit(1 if random.Random(f"{{seed}}:{{P}}:{{k}}").random() < P else 0)
"""


def test_a_hunk_that_makes_a_clean_test_fail_half_the_time_is_named_without_flaky(tmp_path):
    """One hunk raises a test's failure rate from 0 to 50%, nothing declared (no --flaky), the
    draws seeded: the bad endpoint passed first and failed 6 of its 10 runs. The confirmation
    judged the hunk's failures against the good side's one run, could never tell the two rates
    apart and stopped after 60 runs of the hunk, `unconfirmed`, exit 1 (with --max-runs 40: the
    budget spent, no verdict). Good is run in the confirmation too now: the hunk is named within
    a budget of 40 runs."""
    for side, p in (("good", 0.0), ("bad", 0.5)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "t.py").write_text(HALF_FLAKE.format(p=p))
    (tmp_path / "counts").mkdir()
    p = bisectk("diff", "good", "bad", "--run", f"{sys.executable} t.py 1 {tmp_path / 'counts'}", "--max-runs", "40",
                "--json", "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=300)
    doc = json.loads(p.stdout)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert [h["file"] for h in doc["culprit_hunks"]] == ["t.py"] and "P = 0.5" in doc["culprit_hunks"][0]["text"]
    assert doc["endpoints"]["bad_rate"]["runs"] == 10 and doc["phase_runs"]["search"] < 40, doc["phase_runs"]


def test_trees_nested_deeper_than_python_can_walk_are_refused_in_one_line(tmp_path):
    """GOOD and BAD with a directory 1,200 levels deep: the walk (os.walk, recursive on Python 3.11)
    raised RecursionError, said as `bisectk: internal error` (exit 3). It is refused as input, in one
    line naming the tree, and nothing is written in either."""
    try:        # the chains are taken down in `finally` however far they were made: a chain left in
        # pytest's base temp broke the next sessions, whose removal of old temp dirs recursed
        for side, v in (("good", 0), ("bad", 1)):
            d = tmp_path / side
            d.mkdir()
            (d / "top").write_text(f"{v}\n")
            fd = os.open(d, os.O_RDONLY)
            try:
                for _ in range(1200):      # by descriptor: the path grows past what one call may name
                    os.mkdir("d", dir_fd=fd)
                    fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
                    os.close(old)
            finally:
                os.close(fd)
        p = bisectk("diff", "good", "bad", "--run", "grep -q 0 top", "--ledger", tmp_path / "l.db", cwd=tmp_path)
        assert p.returncode == 2 and p.stderr.startswith("bisectk: ") and len(p.stderr.splitlines()) == 1, p.stderr
        assert "deep" in p.stderr and "internal error" not in p.stderr, p.stderr
        assert sorted(x.name for x in (tmp_path / "good").iterdir()) == ["d", "top"]
    finally:        # pytest's removal of tmp_path recurses too: the chain is taken down one level at a time
        for side in ("good", "bad"):
            top = tmp_path / side
            while top.is_dir() and (top / "d").exists():
                if (top / "d" / "d").exists():
                    os.rename(top / "d" / "d", top / "up")
                    os.rmdir(top / "d")
                    os.rename(top / "up", top / "d")
                else:
                    os.rmdir(top / "d")


def test_a_culprit_that_changes_only_line_endings_is_said_to(tmp_path):
    """BAD's t.sh has CRLF line endings (`exit 0\\r`: bash exits 2): the culprit patch printed
    `-exit 0` and `+exit 0`, alike on a terminal (the CR is kept so that the patch applies), and
    nothing said what differs. A line under the patch says it."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, eol in ((good, "\n"), (bad, "\r\n")):
        side.mkdir()
        (side / "t.sh").write_bytes(f"echo a{eol}exit 0{eol}".encode())
    p = bisectk("diff", good, bad, "--run", "bash t.sh", "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert "+exit 0" in p.stdout and "only in their line endings" in p.stdout, p.stdout
    (bad / "t.sh").write_bytes(b"echo a\nexit 3\n")
    p = bisectk("diff", good, bad, "--run", "bash t.sh", "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
    assert p.returncode == 0 and "line endings" not in p.stdout, p.stdout


def test_a_culprit_patch_of_a_file_that_is_not_utf8_is_given_as_its_bytes(tmp_path):
    """Review j: a latin-1 source (`# caf\\xfc`, the byte 0xFC): the culprit patch was printed, and
    written in the Markdown log and --json, with the byte as the text `\\xfc`, so none of them
    applied. The terminal says so and how to get the bytes; --report FILE writes them to
    FILE-culprit.patch beside the log, which applies; --json holds them in base64. --html alone
    showed `\\xfc` and kept no bytes: it writes them beside the page as --report does."""
    import base64
    import shutil
    import subprocess
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 1), (bad, 2)):
        side.mkdir()
        (side / "k.py").write_bytes(f"x = {v}\n# caf".encode() + b"\xfc\n")
    p = bisectk("diff", good, bad, "--run", "grep -q 'x = 1' k.py", "--report", tmp_path / "r.md",
                "--json-out", tmp_path / "r.json", "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert "not UTF-8" in p.stdout and "r-culprit.patch" in p.stdout, p.stdout
    patch = (tmp_path / "r-culprit.patch").read_bytes()
    assert b"# caf\xfc\n" in patch, patch
    assert "r-culprit.patch" in (tmp_path / "r.md").read_text(encoding="utf-8")
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert base64.b64decode(doc["lines_diff_base64"] or doc["diff_base64"]) == patch
    for bytes_ in (patch, base64.b64decode(doc["diff_base64"])):
        copy = tmp_path / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(good, copy)
        proc = subprocess.run(["git", "apply", "-"], input=bytes_, cwd=copy, capture_output=True)
        assert proc.returncode == 0, (proc.stderr, bytes_)
        assert (copy / "k.py").read_bytes() == (bad / "k.py").read_bytes()
    html = tmp_path / "h" / "page.html"       # --html alone: the page showed \xfc, said nothing, kept no bytes
    p = bisectk("diff", good, bad, "--run", "grep -q 'x = 1' k.py", "--html", html, "--ledger", tmp_path / "l.db",
                cwd=tmp_path, timeout=120)
    assert p.returncode == 0 and "page-culprit.patch" in p.stdout, (p.stdout[-2000:], p.stderr[-2000:])
    assert (tmp_path / "h" / "page-culprit.patch").read_bytes() == patch
    assert "page-culprit.patch" in html.read_text(encoding="utf-8")
    (bad / "k.py").write_bytes(b"x = 2\n# cafe\n")        # UTF-8 both sides: nothing more is said or written
    (good / "k.py").write_bytes(b"x = 1\n# cafe\n")
    p = bisectk("diff", good, bad, "--run", "grep -q 'x = 1' k.py", "--report", tmp_path / "s.md",
                "--json-out", tmp_path / "s.json", "--ledger", tmp_path / "l.db", cwd=tmp_path, timeout=120)
    assert p.returncode == 0 and "UTF-8" not in p.stdout and not (tmp_path / "s-culprit.patch").exists(), p.stdout
    doc = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert doc["diff_base64"] is None and doc["lines_diff_base64"] is None
