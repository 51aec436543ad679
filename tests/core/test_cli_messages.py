"""Issue 16: every bad-input message is one `bisectk:` line, help is readable at 80 columns and
names the real ledger location, and `env --diff` takes both forms."""
import json
import os
import shlex
import subprocess
import sys

import pytest

from tests.conftest import ROOT, bisectk

COMMANDS = ["run", "check", "ablate", "diff", "bisect", "triage", "log", "replay", "report", "ptx", "env",
            "ledger", "ledger check", "demo", "demo history"]


def cli(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "bisectk", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, timeout=120)


@pytest.mark.parametrize("args", [
    ["run", "--nope", "x.toml"],                    # unknown option
    ["ablate", "--max-runs", "0"],                  # out of range
    ["ablate", "--max-runs", "many"],               # not a number
    ["diff", "a"],                                  # missing argument
    ["bisect", "--good"],                           # option without its value
    ["bisect", "--bad", "HEAD"],                    # missing required option
    ["nosuch"],                                     # unknown command
    ["check", "a.toml", "b.toml"],                  # extra argument
    ["env", "--diff", "a.json", "b.json", "c.json"],
    ["env", "a.json"],
])
def test_option_parsing_errors_are_one_line(args, tmp_path):
    p = cli(*args, cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bisectk: "), p.stderr
    assert "Usage:" not in p.stderr and "Traceback" not in p.stderr and p.stdout == ""


@pytest.mark.parametrize("args, says", [
    (["diff", "", "b", "--run", "true"], "GOOD is empty"),                      # "" is not "."
    (["run", str(ROOT / "variants/cpu/pipeline-hang.toml"), "--timeout", "1e400"], "at most a week"),
    (["run", str(ROOT / "variants/cpu/pipeline-hang.toml"), "--repeat", "99999999999"], "from 1 to 1000"),
    (["ablate", str(ROOT / "variants/cpu/pipeline-hang.toml"), "--timeout", "nan"], "must be more than 0"),
    (["bisect", "--repo", "b/f.sh", "--good", "HEAD~1", "--run", "true"], "is a file"),     # not its directory
    (["bisect", "--good", "HEAD~1", "--run", "true", "--term-new", ""], "--term-new is empty"),
    # '-y' is of the characters the line named ("letters, digits, '.', '_' or '-'"), yet refused
    (["bisect", "--good", "HEAD~1", "--run", "true", "--term-new=-y"], "starting with a letter or digit"),
    (["bisect", "--good", "HEAD~1", "--run", "true", "--term-old", "x" * 41], "at most 40 characters"),
    # a --build given with a SPEC is a template as the spec's own: a placeholder naming no factor
    # ended the first run in an internal error (KeyError, exit 3)
    ([*("diff", *(str(ROOT / "variants/cpu/diff-softmax" / x) for x in ("good", "bad", "spec.toml"))),
      "--build", "echo {zz}"], "--build: placeholder {zz} names no factor"),
    # --build '' was taken as no build at all while --run '' was refused (review j)
    ([*("diff", *(str(ROOT / "variants/cpu/diff-softmax" / x) for x in ("good", "bad"))), "--run", "true",
      "--build", ""], "--build: empty command"),
    ([*("diff", *(str(ROOT / "variants/cpu/diff-softmax" / x) for x in ("good", "bad"))), "--run", ""],
      "--run: empty command"),
    ([*("diff", *(str(ROOT / "variants/cpu/diff-softmax" / x) for x in ("good", "bad", "spec.toml"))),
      "--build", " "], "--build: empty command"),
    # --json prints its document on stdout: a report written to stdout too followed it there
    (["ablate", str(ROOT / "variants/cpu/pipeline-hang.toml"), "--json", "--json-out", "/dev/stdout"], "is stdout"),
    ([*("diff", *(str(ROOT / "variants/cpu/diff-softmax" / x) for x in ("good", "bad"))), "--run", "true", "--json",
      "--report", "/dev/fd/1"], "is stdout"),
    # --gpus ',,' set CUDA_VISIBLE_DEVICES='' on every run (no GPU visible), 'a,b' a name CUDA ignores,
    # '' no pinning at all; --calibrate-runs had no bound where --repeat has one
    (["ablate", str(ROOT / "variants/cpu/pipeline-hang.toml"), "--gpus", ",,"], "'' is no GPU"),
    (["ablate", str(ROOT / "variants/cpu/pipeline-hang.toml"), "--gpus", ""], "'' is no GPU"),
    (["ablate", str(ROOT / "variants/cpu/pipeline-hang.toml"), "--gpus", "0,a"], "'a' is no GPU"),
    (["bisect", "--good", "HEAD~1", "--run", "true", "--gpus", "1,,2"], "'' is no GPU"),
    (["check", str(ROOT / "variants/cpu/pipeline-hang.toml"), "--calibrate-runs", "100000000"], "from 1 to 1000"),
    # --resume and --fresh together: one was dropped without a word
    (["ablate", str(ROOT / "variants/cpu/pipeline-hang.toml"), "--resume", "--fresh"], "contradict each other"),
    (["bisect", "--good", "HEAD~1", "--run", "true", "--resume", "--fresh"], "contradict each other"),
    (["triage", "--good", "HEAD~1", "--run", "true", "--fresh", "--resume"], "contradict each other"),
    # report, replay and env printed their --json document and the file named after or before it on
    # stdout too (ablate's and diff's were refused): the document did not parse
    (["report", "ledger.db", "--json", "--html", "/dev/stdout"], "--html /dev/stdout: is stdout, where --json"),
    (["replay", "bisect.log", "--json", "--html", "/dev/fd/1"], "--html /dev/fd/1: is stdout, where --json"),
    (["env", "--json", "--save", "/dev/stdout"], "--save /dev/stdout: is stdout, where --json"),
    # an option typed after git's `--` is a path there: '-- src --run ./t.sh' read 'src' as the SPEC
    # ("src: is a directory, not a spec file"), or said "no commit touches --run t.sh"
    (["bisect", "--good", "HEAD~1", "--", "src", "--run", "./t.sh"], "--run comes after '--'"),
    (["triage", "--good", "HEAD~1", "--run", "true", "--", "src", "--json"], "--json comes after '--'"),
    (["bisect", "--good", "HEAD~1", "--run", "true", "--", "--max-runs=3"], "--max-runs comes after '--'"),
    # --exhaustive beside another --strategy: the --strategy was dropped without a word
    (["ablate", str(ROOT / "variants/cpu/pipeline-hang.toml"), "--exhaustive", "--strategy", "dd"],
     "--exhaustive and --strategy dd contradict each other"),
    (["ablate", str(ROOT / "variants/cpu/pipeline-hang.toml"), "--strategy", "adaptive", "--exhaustive"],
     "--exhaustive and --strategy adaptive contradict each other"),
])
def test_values_no_run_could_honour_are_one_line_before_any_run(args, says, tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "f.sh").write_text("exit 0\n")
    p = cli(*args, cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.strip().startswith("bisectk: ") and says in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and p.stdout == ""


@pytest.mark.parametrize("command", ["bisect", "triage"])
@pytest.mark.parametrize("option, value, says", [
    ("--timeout", "nan", "--timeout nan: must be more than 0"),
    ("--timeout", "inf", "at most a week"),
    ("--confidence", "nan", "--confidence nan: "),
])
def test_a_history_commands_nan_and_infinite_numbers_are_one_line_before_any_run(command, option, value, says, tmp_path):
    """click's range check lets NaN through (every comparison with it is false): bisect's
    --timeout nan ended in the ledger ("NOT NULL constraint failed: claims.expires"), --timeout
    inf was taken though `run` says "at most a week", and --confidence nan was an internal error
    (exit 3)."""
    r = tmp_path / "r"
    r.mkdir()
    git = lambda *a: subprocess.run(["git", *a], cwd=r, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    for i in range(3):
        (r / "n").write_text(f"{i}\n")
        git("add", "n")
        git("-c", "user.name=T", "-c", "user.email=t@x", "commit", "-qm", f"c{i}")
    p = cli(command, "--good", "HEAD~2", "--bad", "HEAD", "--run", "true", option, value, cwd=r)
    assert p.returncode == 2 and p.stderr.strip().startswith("bisectk: ") and says in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and p.stdout == ""
    assert not (r / ".git" / "bisectk").exists()          # refused before a session opened


def test_usage_error_names_the_help_to_read(tmp_path):
    p = cli("run", "--nope", "x.toml", cwd=tmp_path)
    assert p.stderr.strip() == "bisectk: No such option: --nope (see 'bisectk run --help')"


@pytest.mark.parametrize("command", COMMANDS)
def test_help_fits_80_columns(command):
    p = cli(*command.split(), "--help", env={"COLUMNS": "80"})
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith(f"Usage: bisectk {command}")
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert "…" not in p.stdout and "<list[" not in p.stdout and "<str>" not in p.stdout


def test_run_help_describes_snapshots_without_a_search():
    """`run` has no search and no culprit: its --snapshots help says what it reads of its own runs."""
    text = " ".join(cli("run", "--help", env={"COLUMNS": "200"}).stdout.split())
    said = text[text.index("--snapshots"):]
    assert "culprit" not in said.split("--ledger")[0] and "--repeat" in said.split("--ledger")[0], said[:300]


def test_diff_help_names_the_ledger_diff_uses(tmp_path):
    cache = tmp_path / "cache"
    p = cli("diff", "--help", env={"COLUMNS": "200", "XDG_CACHE_HOME": str(cache)})
    # help wraps at hyphens and at a space of the path (a TMPDIR with one): compared without either
    assert "".join(f"{cache}/bisectk/ledger.db".split()) in "".join(p.stdout.split())
    for side, code in (("good", 0), ("bad", 1)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "k.py").write_text(f"import sys\nsys.exit({code})\n")
    p = cli("diff", "good", "bad", "--run", "python k.py", env={"XDG_CACHE_HOME": str(cache)}, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (cache / "bisectk" / "ledger.db").is_file()


def _capture(path, **env):
    p = cli("env", "--save", path, env=env)
    assert p.returncode == 0, p.stderr


def test_env_diff_takes_both_forms(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    _capture(a)
    _capture(b, CUDA_LAUNCH_BLOCKING="1")
    for args in (["--diff", a, b], ["--diff", a, "--diff", b], [a, b]):     # the last: as the help says
        p = cli("env", *args, "--json")
        assert p.returncode == 1, p.stderr
        keys = [d["key"] for d in json.loads(p.stdout)["differences"]]
        assert "env.CUDA_LAUNCH_BLOCKING" in keys
    p = cli("env", "--diff", a, a)
    assert p.returncode == 0, p.stderr
    p = cli("env", a)
    assert p.returncode == 2 and "exactly two captures" in p.stderr


def test_env_diff_on_a_narrow_terminal_shows_every_key_and_value_whole(tmp_path):
    """Before: the table cut a key or a value that did not fit to '…' ('env.CUDA_LAUNCH_BLOCKI…'
    at 80 columns; a module's path cut before the part that differs), so the variable to set
    could not be read off it. Now cells wrap, as the other tables' names do."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    _capture(a)
    data = json.loads(a.read_text())
    data["env"]["CUDA_LAUNCH_BLOCKING"] = "1"
    data["modules"]["torch"] = "/opt/venvs/kernel-bench-py311-cuda13/lib/python3.11/site-packages/torch/__init__.py"
    b.write_text(json.dumps(data))
    p = cli("env", "--diff", a, b, env={"COLUMNS": "60"})
    assert p.returncode == 1, p.stderr
    assert "\u2026" not in p.stdout, p.stdout
    rows = [line.split("\u2502")[1:-1] for line in p.stdout.splitlines() if line.startswith("\u2502")]
    columns = ["".join(row[k].strip() for row in rows) for k in range(3)]    # each column read down, wraps joined
    assert "env.CUDA_LAUNCH_BLOCKING" in columns[0] and "modules.torch" in columns[0], p.stdout
    assert data["modules"]["torch"] in columns[2], p.stdout


@pytest.mark.parametrize("text, op", [
    ("true && grep -q 4 code", "&&"), ("./t.sh > out.log", ">"), ("./build.sh; ./t.sh", ";"), ("./t.sh | tee x", "|"),
    ("./t.sh 2>/dev/null", "2>"), ("./t.sh $(cat args)", "$("), ('echo "`id`"', "`"), ("make&&./t.sh", "&&"),
    ('./t.sh "$(cat args)"', "$("), ('sh -c "make" && ./t.sh', "&&"), ('sh -c "./t.sh" $(cat args)', "$("),
    # what a shell expands or drops, which git bisect run's shell would: a parameter, ~, a comment,
    # an assignment before the program (each reached the program as typed: "cannot start '$T/t.sh'")
    ("$TESTS/t.sh", "$TESTS"), ('./t.sh "${DATA}/ref.bin"', "${DATA}"), ("sh -c './t.sh' $ARGS", "$ARGS"),
    ("~/t.sh", "~"), ("./t.sh # quick one", "#"), ("CUDA_LAUNCH_BLOCKING=1 ./t.sh", "CUDA_LAUNCH_BLOCKING="),
])
def test_shell_syntax_in_a_command_is_refused_not_passed_as_arguments(text, op, tmp_path):
    """`--run 'true && grep -q 4 code'` split into argv would run `true` with four arguments:
    every commit passes and the answer is about nothing. It is refused, naming the operator and
    the `sh -c` form (or a script) that says what was meant."""
    import shlex
    from bisectk.engine.subject import runs_shell, shell_syntax
    assert shell_syntax(text, shell_script=runs_shell(shlex.split(text))) == op
    for side, text_in in (("a", "1\n"), ("b", "2\n")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "k").write_text(text_in)
    p = cli("diff", "a", "b", "--run", text, cwd=tmp_path)
    assert p.returncode == 2 and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{op!r} is shell syntax" in lines[0], p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a", "b"]     # refused before anything ran or was written
    if not any(q in text for q in "'\"$`\\"):
        assert f"""write --run "sh -c '{text}'" """.rstrip() in lines[0]


@pytest.mark.parametrize("text", ["python -c 'import k, sys; sys.exit(k.x - 1)'", "sh -c '! test -f bug && true'",
                                  "grep 'a|b' f", 'grep "a;b>c" f', r"echo a\;b", "echo '$(x)' \"\\$(y)\"",
                                  "./t.sh --mode=x", 'sh -c "test $(cat val) -lt 5"', 'bash -euc "make && ./t `nproc`"',
                                  'env A=1 /bin/bash -lc "./t.sh $(cat args)"', "./t.sh a$ b#c",
                                  "sh -c '~/t.sh $HOME # x'", 'bash -c "CUDA_X=1 ./t.sh ${N}"'])
def test_quoted_or_escaped_operators_are_words(text):
    """Quoted or escaped, an operator is a word; a substitution in the double-quoted script of
    `sh -c` is the shell's to expand (`sh -c "test $(cat val) -lt 5"` is what the user meant)."""
    import shlex
    from bisectk.engine.subject import runs_shell, shell_syntax, split_command
    assert shell_syntax(text, shell_script=runs_shell(shlex.split(text))) is None
    assert split_command(text, "--run") == shlex.split(text)


def test_the_words_of_a_shell_script_are_resolved_as_a_commands_are(tmp_path):
    """`sh -c '...'` (the form a refused `&&` asks for): the user's untracked script is copied into
    each commit's worktree (or, for an executor elsewhere, run by its absolute path) wherever it
    stands as a program or an interpreter's script; what the shell
    computes or opens (a quoted word, `$X`, a redirection's file, anything after `cd`) is left as
    typed, and only what was rewritten is reported as the user's file."""
    import shlex

    from bisectk.spaces.command import resolve_command
    from tests.fixtures.gitrepo import git
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "tracked.sh").write_text("#!/bin/sh\n")
    git(r, "add", "tracked.sh")
    git(r, "commit", "-q", "-m", "one")
    for name in ("t.sh", "out.log"):
        (r / name).write_text("#!/bin/sh\n")
    head = git(r, "rev-parse", "HEAD")
    mine = str(r / "t.sh")
    cases = {
        "sh -c './t.sh && false'": (f"sh -c '{mine} && false'", ["./t.sh"]),
        "sh -c './t.sh > out.log 2>&1 && ./t.sh x'": (f"sh -c '{mine} > out.log 2>&1 && {mine} x'", ["./t.sh"]),
        "bash -euc 'A=1 ./t.sh \"./t.sh\" $X'": (f"bash -euc 'A=1 {mine} \"./t.sh\" $X'", ["./t.sh"]),
        "sh -c 'cd sub && ./t.sh'": ("sh -c 'cd sub && ./t.sh'", []),
        "sh -c 'python3 t.sh | tee out.log'": (f"sh -c 'python3 {mine} | tee {r / 'out.log'}'", ["t.sh", "out.log"]),
        "sh -c \"'./t.sh'\"": ("sh -c \"'./t.sh'\"", []),
        "sh -c './tracked.sh; ./t.sh'": (f"sh -c './tracked.sh; {mine}'", ["./tracked.sh", "./t.sh"]),
    }
    for text, (want, words) in cases.items():      # by absolute path: an executor on other hosts
        out, files = resolve_command(text, "--run", user_cwd=r, root=r, commit=head, copy=False)
        assert shlex.split(out) == shlex.split(want), text
        assert [f.word for f in files] == words, (text, files)
        # on this host the user's files are copied into each commit's worktree: the script stays as
        # typed, and each file is said once (`./t.sh` twice in the line: one copy)
        out, files = resolve_command(text, "--run", user_cwd=r, root=r, commit=head)
        quoted = ["./t.sh"] if text == "sh -c \"'./t.sh'\"" else words   # copied: the quoted word reads it too
        assert out == text and [f.word for f in files] == quoted, (text, files)
        assert all(f.copy == f.word.removeprefix("./") for f in files if f.use == "yours"), files
    _, files = resolve_command("sh -c './tracked.sh; ./t.sh'", "--run", user_cwd=r, root=r, commit=head, copy=False)
    assert [(f.use, f.runs) for f in files] == [("tree", True), ("yours", False)]
    _, files = resolve_command("sh -c './tracked.sh; ./t.sh'", "--run", user_cwd=r, root=r, commit=head)
    assert [(f.use, f.runs) for f in files] == [("tree", True), ("yours", True)]


def test_a_good_side_equal_to_the_bad_side_is_one_line_without_a_run(tmp_path):
    """`check` of a spec whose [bad] is its [good] (as the subject receives them: 3 and "3") says
    so in one line, before ten runs of bad that 'does not reproduce'; `ablate` too, after a
    warning that names the factor written two ways."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "s.toml").write_text('[subject]\ncommand = ["python", "-c", "pass", "{n}", "{m}"]\n'
                                     '[good]\nn = 3\nm = "a"\n[bad]\nn = "3"\nm = "a"\n')
    for command in ("check", "ablate"):
        p = cli(command, tmp_path / "s.toml", "--ledger", tmp_path / "l.db", cwd=tmp_path)
        assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert lines[-1].startswith("bisectk: ") and "are identical as the subject receives them" in lines[-1], lines
        assert any("factor 'n' is 3 (int) in [good] and \"3\" (str) in [bad]" in line for line in lines), lines
        assert "Traceback" not in p.stderr and not (tmp_path / "l.db").exists()


def test_values_that_read_as_rich_markup_are_shown_as_they_are(tmp_path):
    """Environment values, factor values and a spec's name are text from outside: `[bf16]` was
    dropped from the tables (read as a style) and `[/bold]` ended the command with a MarkupError."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"bisectk_env": 1, "env": {"CUDA_X": "[bf16]"}}))
    b.write_text(json.dumps({"bisectk_env": 1, "env": {"CUDA_X": "[/bold]"}}))
    p = cli("env", "--diff", a, b, env={"COLUMNS": "200"})
    assert p.returncode == 1, p.stderr
    assert "[bf16]" in p.stdout and "[/bold]" in p.stdout
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "spec.toml").write_text(
        'name = "[/k]"\n[subject]\ncommand = ["python", "-c", "import sys; sys.exit(sys.argv[1] != \'[bf16]\')", "{dtype}"]\n'
        '[good]\ndtype = "[bf16]"\n[bad]\ndtype = "[fp8]"\n')
    p = cli("check", tmp_path / "spec.toml", env={"COLUMNS": "200"}, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "[/k]: key differences" in p.stdout
    assert "[bf16]" in p.stdout and "[fp8]" in p.stdout


def test_env_save_where_no_file_can_be_written_is_one_line(tmp_path):
    """`env --save` to a directory, or under a file, ended with an internal error (exit 3)."""
    (tmp_path / "a.json").write_text("{}")
    for where, says in ((tmp_path, "is a directory"), (tmp_path / "a.json" / "x.json", "is not a directory")):
        p = cli("env", "--save", where)
        assert p.returncode == 2 and p.stderr.startswith("bisectk: ") and says in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert (tmp_path / "a.json").read_text() == "{}"


def test_env_save_into_a_directory_that_is_not_there_is_refused_as_ledger_is(tmp_path):
    """`env --save /new/dir/x.json` made /new/dir/ without a word, where --ledger and `ledger check
    --salvage` refuse a directory that does not exist (a typo's directories are not made): one
    line, exit 2, nothing made, before the capture."""
    where = tmp_path / "new" / "dir" / "x.json"
    p = cli("env", "--save", where)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert p.stderr.startswith(f"bisectk: --save {where}: the directory {where.parent} does not exist"), p.stderr
    assert f"create {where.parent} first" in p.stderr and not (tmp_path / "new").exists()
    assert cli("env", "--save", tmp_path / "x.json").returncode == 0 and (tmp_path / "x.json").is_file()


def test_env_save_that_fails_while_writing_is_one_line(tmp_path):
    from bisectk.spaces import env as envmod
    (tmp_path / "a.json").write_text("{}")
    with pytest.raises(envmod.EnvError, match="cannot be written"):
        envmod.save(tmp_path / "a.json" / "x.json", {"bisectk_env": 1})


def test_env_diff_refuses_the_options_of_a_capture_rather_than_dropping_them(tmp_path):
    """`env --diff A B --save C` compared and exited, writing no C and saying nothing."""
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"bisectk_env": 1, "env": {}}))
    for extra in (["--save", tmp_path / "c.json"], ["--torch"]):
        p = cli("env", "--diff", a, a, *extra)
        assert p.returncode == 2 and "not with --diff" in p.stderr, p.stderr
    assert not (tmp_path / "c.json").exists()


def test_env_diff_says_equal_captures_are_equal_and_shows_an_empty_value(tmp_path):
    """Two equal captures printed an empty table with no word (exit 0 the only sign); a variable
    set empty on one side printed a blank cell beside `None` (an unset one is `(unset)` now)."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    _capture(a, CUDA_FOO="")
    _capture(b)
    p = cli("env", a, a)
    assert p.returncode == 0 and p.stdout.strip() == f"{a} vs {a}: the captures are equal", p.stdout
    p = cli("env", a, b)
    (row,) = [line for line in p.stdout.splitlines() if "env.CUDA_FOO" in line]
    assert p.returncode == 1 and [c.strip() for c in row.split("│")[1:4]] == ["env.CUDA_FOO", '""', "(unset)"], row


@pytest.mark.parametrize("command", ["diff", "bisect", "triage"])
@pytest.mark.parametrize("value,said", [("0", "--build-timeout 0: must be more than 0 seconds"),
                                        ("-3", "--build-timeout -3: must be more than 0 seconds"),
                                        ("nan", "--build-timeout nan: must be more than 0 seconds"),
                                        ("1e9", "--build-timeout 1e+09: must be more than 0 seconds and at most a week"),
                                        ("5", "--build-timeout: there is no build step to limit")])
def test_build_timeout_is_validated_in_one_line(command, value, said, tmp_path):
    """--build-timeout, where --build is accepted: a limit that cannot hold, or one with no build
    step to limit (the last case gives no --build), is one line before any run."""
    from tests.fixtures.gitrepo import counter_repo
    repo = tmp_path / "r"
    counter_repo(repo, 2)
    (tmp_path / "good").mkdir()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "v.txt").write_text("1\n")
    where = ["good", "bad"] if command == "diff" else ["--repo", repo, "--good", "HEAD~1", "--bad", "HEAD"]
    build = [] if value == "5" else ["--build", "true"]
    p = cli(command, *where, "--run", "true", *build, "--build-timeout", value, cwd=tmp_path)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("bisectk: " + said), p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("raised", ["plain", "abort", "during_import"])
def test_a_ctrl_c_that_typer_or_an_import_wraps_is_said_as_interrupted(monkeypatch, capsys, raised):
    """A Ctrl-C that no command catches (during bisect's setup, before its runs) is turned by
    typer into exit 130 without a word; one inside the command's own lazy imports (bisect's
    engine, loaded once the command runs) reaches `entry` wrapped: a dataclass being defined
    turns it into RuntimeError('Error calling __set_name__ ...'), reported as 'bisectk: internal
    error: RuntimeError ...' (exit 3); click's Abort left with exit 130 and no word. Each is said
    as the interrupt it is: 'bisectk: interrupted', exit 130."""
    import typer

    from bisectk import cli

    app = typer.Typer()

    @app.command()
    def boom():
        if raised == "abort":
            raise typer.Abort()
        if raised == "plain":
            raise KeyboardInterrupt
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance 'env' in 'Job'") from exc

    @app.callback()
    def group():        # a group, as bisectk's app is (its --version callback)
        pass

    monkeypatch.setattr(cli, "app", app)        # built and wrapped as bisectk's own commands are
    monkeypatch.setattr(sys, "argv", ["bisectk", "boom"])
    monkeypatch.delenv("BISECTK_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exit_:
        cli._entry()
    assert exit_.value.code == 130
    assert capsys.readouterr().err == "bisectk: interrupted\n"


def test_report_of_a_session_still_running_says_so(tmp_path):
    """`bisectk report LEDGER --session N` while that command runs (or after it was killed) said
    'no finished session with id N with a stored result', as if N did not exist; now it names
    the session's command and that it has stored no result yet."""
    from bisectk.ledger import Ledger
    db = Ledger(tmp_path / "l.db")
    sid = db.open_session("triage", "fp", {"repo": "/r", "good": "a", "bad": "b"})
    db.close()
    p = cli("report", tmp_path / "l.db", "--session", sid)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert f"session {sid} (triage)" in p.stderr and "still running" in p.stderr, p.stderr
    p = cli("report", tmp_path / "l.db", "--session", sid + 1)
    assert p.returncode == 2 and f"no finished session with id {sid + 1}" in p.stderr, p.stderr


@pytest.mark.parametrize("value", ["{gpu}", "2"], ids=["factor", "fixed"])
def test_gpus_beside_a_spec_that_sets_cuda_visible_devices_is_refused_before_any_run(value, tmp_path):
    """`bisectk env --diff` makes a differing CUDA_VISIBLE_DEVICES a factor (`env =
    {CUDA_VISIBLE_DEVICES = "{cuda_visible_devices}"}`); --gpus then set every run's
    CUDA_VISIBLE_DEVICES over the spec's, without a word: a bad endpoint that fails on GPU 1 ran
    on the --gpus GPU, passed 10 times, and ablate said 'the bad configuration does not
    reproduce'. One of the two settings is dropped: that is refused, naming both."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "k.py").write_text('import json, os\nbad = os.environ.get("CUDA_VISIBLE_DEVICES") == "1"\n'
                                   'print("BISECTK_RESULT " + json.dumps({"err": float(bad)}))\n')
    spec = tmp_path / "s.toml"
    spec.write_text(f'[subject]\ncommand = ["python", "k.py", "{{gpu}}", "{{x}}"]\nenv = {{CUDA_VISIBLE_DEVICES = "{value}"}}\n'
                    '[oracle]\nmetric = "err"\nmax = 0.5\n[good]\ngpu = "0"\nx = 0\n[bad]\ngpu = "1"\nx = 1\n')
    p = cli("ablate", spec, "--gpus", "0,1", "--ledger", tmp_path / "l.db", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.strip().startswith("bisectk: ") and p.stdout == "", p.stderr[-2000:]
    assert len(p.stderr.strip().splitlines()) == 1 and "CUDA_VISIBLE_DEVICES" in p.stderr, p.stderr
    assert not (tmp_path / "l.db").exists()       # refused before a session opened


@pytest.mark.parametrize("args", [["env"], ["run", str(ROOT / "variants/cpu/crash-oob.toml")],
                                  ["check", str(ROOT / "variants/cpu/crash-oob.toml")]], ids=lambda a: a[0])
def test_a_current_directory_deleted_under_the_shell_is_one_line_not_an_internal_error(args, tmp_path):
    """A shell left in a directory that was removed (a `git worktree remove`, a scratch directory
    cleaned up): `bisectk env`, `run` and `check` ended in 'internal error: FileNotFoundError'
    and exit 3, which says a bug of bisectk's."""
    gone = tmp_path / "gone"
    gone.mkdir()
    argv = [sys.executable, "-m", "bisectk", *args, *(["--ledger", str(tmp_path / "l.db")] if args[0] != "env" else [])]
    p = subprocess.run(["sh", "-c", f"cd {shlex.quote(str(gone))} && rmdir {shlex.quote(str(gone))} && exec {shlex.join(argv)}"],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})
    assert p.returncode == 2 and p.stderr.strip().startswith("bisectk: "), (p.returncode, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1 and "current directory" in p.stderr, p.stderr


def test_a_set_on_a_spec_without_factors_names_the_spec_not_a_run_command(tmp_path):
    """`bisectk run s.toml --set x=1` on a spec whose [good] and [bad] name no factor said
    `(factors: none: a --run command has no factors)`: no --run was given. It says the spec has none."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "s.toml").write_text('[subject]\ncommand = ["true"]\n')
    p = bisectk("run", "s.toml", "--set", "x=1", cwd=tmp_path)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert "--run" not in p.stderr and "s.toml" in p.stderr and "no factor" in p.stderr, p.stderr


def test_counts_of_one_are_said_in_the_singular(tmp_path):
    """"1 differences between good and bad", "over 1 differences", "1 candidate commits" and, in the
    Markdown log, "1 commits in range": a one-factor spec and a one-commit range, as users make."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "s.py").write_text("import sys\nprint('BISECTK_RESULT {\"err\": %s}' % sys.argv[1])\n")
    (tmp_path / "s.toml").write_text('[subject]\ncommand = ["python", "s.py", "{err}"]\n[oracle]\nmetric = "err"\n'
                                     'max = 0\n[good]\nerr = 0\n[bad]\nerr = 1\n')
    p = cli("ablate", tmp_path / "s.toml", "--ledger", tmp_path / "l.db", cwd=tmp_path)
    assert p.returncode == 0 and "s: 1 difference between good and bad: err 0 -> 1" in p.stdout, p.stdout
    assert " over 1 difference: err" in p.stderr, p.stderr
    r = tmp_path / "r"
    r.mkdir()
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}
    for i in (1, 2):
        (r / "v").write_text(f"{i}\n")
        for argv in ([["init", "-q", "-b", "main"]] if i == 1 else []) + [["add", "v"], ["commit", "-qm", f"c{i}"]]:
            subprocess.run(["git", *argv], cwd=r, check=True, env={**os.environ, **env})
    p = cli("bisect", "--good", "HEAD~1", "--bad", "HEAD", "--run", "grep -q 1 v", "--report", tmp_path / "b.md", cwd=r)
    assert p.returncode == 0, p.stderr
    assert "\n1 candidate commit from " in "\n" + p.stdout and "over 1 candidate commit\n" in p.stdout + p.stderr, p
    assert "- 1 commit in range;" in (tmp_path / "b.md").read_text()


def test_a_suggested_command_names_a_latin1_spec_and_a_tab_value_as_they_are(tmp_path):
    """A spec saved as b'sp\\xe9c.toml': the suggested `bisectk run` was shlex-quoted on the
    undecodable byte and then shown escaped ('sp\\xe9c.toml'), so pasting it named another file.
    Run in sh, the suggestion now gives bisectk the spec's real bytes (a value with a tab is
    written as --set reads it back, a TOML string, as before)."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "s.py").write_text("import sys\nprint('BISECTK_RESULT {\"err\": %d}' % ('\\t' not in sys.argv[1]))\n")
    spec = os.fsdecode(bytes(tmp_path) + b"/sp\xe9c.toml")
    with open(os.fsencode(spec), "w") as f:
        f.write('[subject]\ncommand = ["python", "s.py", "{a}"]\n[oracle]\nmetric = "err"\nmax = 0\n'
                '[good]\na = "x\\ty"\n[bad]\na = "x y"\n')
    p = subprocess.run([sys.executable, "-m", "bisectk", "ablate", os.fsencode(spec), "--ledger", tmp_path / "l.db"],
                       capture_output=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    line = next(ln for ln in p.stdout.decode().splitlines() if "Verify the fix candidate" in ln)
    suggested = line.split("bad configuration: ", 1)[1]
    assert suggested.startswith("bisectk run "), suggested
    words = subprocess.run(["sh", "-c", 'set -- ' + suggested[len("bisectk "):] + '\nprintf "%s\\0" "$@"'],
                           capture_output=True, check=True).stdout.split(b"\0")[:-1]
    assert words == [b"run", os.fsencode(spec), b"--config", b"bad", b"--set", b'a="x\\ty"', b"--repeat", b"5"], words
