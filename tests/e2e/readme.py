"""The README's code blocks as tests: parse them, run them in order in a fresh copy of the
repository, and compare exit codes and output with what the README shows.

How a block is read (the line before a fenced block may annotate it with an HTML comment):
- `<!-- readme: skip REASON -->`: not run (the reason is the test's skip reason);
- `<!-- readme: text -->`: not a command (a protocol line, a layout);
- `<!-- readme: spec FILE -->`: a TOML spec, written to FILE in the copy and checked with
  `bisectk check FILE` (exit 0: it loads, good passes and bad fails);
- `<!-- readme: no-gpu -->`: a transcript of what a machine without an NVIDIA GPU prints (run only
  there; skipped where `nvidia-smi -L` lists a GPU);
- a block with lines starting with `$ ` is a transcript: each `$ ` line (with `\\` continuations)
  is a command and the lines up to the next `$ ` are its output. The command must exit 0, or N
  when it carries a `# exit N` comment. The output must match: a line `...` stands for any number
  of lines, every other line must equal the next line of stdout (stderr's `bisectk:` lines are
  appended after it; progress lines on stderr are not output). Before comparing, durations
  (`2.7 s`, `wall s: 0.12`) become `<t> s`, the counts of a summary's `runs:` and `confidence`
  lines become `<n>`, and so does the list of hangs read after the bad endpoint's (the
  confirmation plans by what runs cost, a hang more than a pass, so how many runs it makes, and
  how many re-runs of a hang, follow the machine's load), and the copy's path becomes
  /path/to/bisectk;
- a ```bash block without `$ ` lines: every line is a command that must exit 0 (or `# exit N`);
- any other block must be annotated, so no example goes untested by accident.

Commands run with bash (pipefail) in the copy's root, `bisectk` on PATH running the copy's code,
XDG_CACHE_HOME in the test's temporary directory and COLUMNS=100.

`python -m tests.e2e.readme` runs every block and prints what each command really printed (to
regenerate the README's shown output); `--check` exits non-zero on a mismatch; `--fill` writes the
real output into README.md under every transcript command that shows none yet (delete a command's
shown output to have it regenerated; elide with `...` by hand).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PLACEHOLDER_ROOT = "/path/to/bisectk"
_FENCE = re.compile(r"^```(\w*)\s*$")
_NOTE = re.compile(r"^<!--\s*readme:\s*([\w-]+)\s*(.*?)\s*-->\s*$")
_EXIT = re.compile(r"#\s*exit (\d+)")
_SECONDS = re.compile(r"\b\d+(?:\.\d+)? s\b")
_WALL_S = re.compile(r"wall s: \d+(?:\.\d+)?(?:, \d+(?:\.\d+)?)*")
_COUNT = re.compile(r"\b\d+\b")
# summary lines whose counts follow the confirmation's plan (it plans by what runs cost, a hang more
# than a pass, so how many runs it makes, and how many re-runs of a hang, follow the machine's load)
_HANGS_LINE = "stuck at the same places as the bad endpoint: "
_PLANNED = ("runs: ", "confidence ", _HANGS_LINE)
_HANGS_READ = re.compile(r"\d+ more hang\(s\) read \(.*\)$")


@dataclass
class Command:
    text: str
    expected: list[str] = field(default_factory=list)
    exit: int = 0
    check_output: bool = True


@dataclass
class Block:
    line: int            # 1-based line of the opening fence
    lang: str
    body: list[str]
    kind: str            # transcript | bash | spec | skip | text | unannotated
    note: str = ""
    no_gpu: bool = False  # shows what a machine without a GPU prints

    @property
    def name(self) -> str:
        return f"README.md:{self.line}"

    def commands(self) -> list[Command]:
        if self.kind == "bash":
            return [Command(c, exit=_exit_of(c), check_output=False) for c in _logical(self.body)]
        if self.kind != "transcript":
            return []
        out: list[Command] = []
        lines = list(self.body)
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                raise ValueError(f"{self.name}: output before the first `$ ` command: {lines[i]!r}")
            text = lines[i][2:]
            while text.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
            expected = []
            while i < len(lines) and not lines[i].startswith("$ "):
                expected.append(lines[i])
                i += 1
            out.append(Command(text, expected, _exit_of(text)))
        return out


def _exit_of(command: str) -> int:
    m = _EXIT.search(command)
    return int(m.group(1)) if m else 0


def _logical(lines: list[str]) -> list[str]:
    out, cur = [], ""
    for line in lines:
        if not line.strip() and not cur:
            continue
        cur += line.rstrip()[:-1] + " " if line.rstrip().endswith("\\") else line
        if not line.rstrip().endswith("\\"):
            out.append(cur.strip())
            cur = ""
    return out


def parse(text: str) -> list[Block]:
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        body = lines[i + 1:j]
        prev = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        note = _NOTE.match(prev.strip())
        no_gpu = bool(note) and note.group(1) == "no-gpu"
        if no_gpu:
            note = None
        if note:
            kind, detail = note.group(1), note.group(2)
            if kind not in ("skip", "text", "spec"):
                raise ValueError(f"README.md:{start + 1}: unknown readme annotation {kind!r}")
        elif any(line.startswith("$ ") for line in body):
            kind, detail = "transcript", ""
        elif lang == "bash":
            kind, detail = "bash", ""
        else:
            kind, detail = "unannotated", ""
        blocks.append(Block(start + 1, lang, body, kind, detail, no_gpu))
        i = j + 1
    return blocks


def has_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return p.returncode == 0 and "GPU" in p.stdout


def blocks() -> list[Block]:
    return parse(README.read_text(encoding="utf-8"))


# -- running --------------------------------------------------------------------------------------

def fresh_copy(dest: Path) -> Path:
    """The repository as a clone would hold it: tracked and untracked-but-not-ignored files (outside
    a git checkout, everything but ledgers, caches and build outputs)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True)
    if listed.returncode != 0:
        shutil.copytree(ROOT, dest, symlinks=True, ignore=shutil.ignore_patterns(
            ".git", ".bisectk", "__pycache__", "*.egg-info", ".pytest_cache", ".hypothesis", "build", "dist", "out"))
        return dest
    files = listed.stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if not os.path.lexists(src):
            continue                  # deleted in the working tree, not yet committed
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), target)
        elif src.is_file():
            shutil.copy2(src, target)
    return dest


def commit_copy(copy: Path) -> None:
    """Make the copy a git repository whose one commit holds it, so `untracked` can say what
    following the README wrote outside the ignored places (`out/`, `.bisectk/`, caches)."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "readme", "GIT_AUTHOR_EMAIL": "readme@example.com",
           "GIT_COMMITTER_NAME": "readme", "GIT_COMMITTER_EMAIL": "readme@example.com"}
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "the copy"]):
        subprocess.run(argv, cwd=copy, env=env, check=True, capture_output=True)


def untracked(copy: Path) -> list[str]:
    """What changed in a committed copy: files added outside .gitignore, or tracked files edited."""
    p = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=copy, capture_output=True,
                       text=True, check=True)
    return p.stdout.splitlines()


def environment(copy: Path, scratch: Path) -> dict[str, str]:
    shim = scratch / "bin"
    shim.mkdir(parents=True, exist_ok=True)
    exe = shim / "bisectk"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m bisectk "$@"\n')
    exe.chmod(0o755)
    env = dict(os.environ)
    for key in ("BISECTK_DEBUG", "CUDA_LAUNCH_BLOCKING"):
        env.pop(key, None)
    env.update({"PATH": f"{shim}{os.pathsep}{env.get('PATH', '')}", "PYTHONPATH": str(copy),
                "XDG_CACHE_HOME": str(scratch / "cache"), "COLUMNS": "100", "PYTHONDONTWRITEBYTECODE": "1"})
    return env


def placeholder(line: str, copy: Path) -> str:
    """`line` with the copy's directory written as PLACEHOLDER_ROOT. Where that directory has a space
    (a TMPDIR with one), bisectk quotes the words it prints ('/tmp/a b/bisectk/out/demo'); the
    README's placeholder needs no quotes, so a quoted word under the copy loses them."""
    line = re.sub("'" + re.escape(str(copy)) + r"(/[\w./-]*)?'", lambda m: PLACEHOLDER_ROOT + (m[1] or ""), line)
    return line.replace(str(copy), PLACEHOLDER_ROOT)


def normalise(line: str, copy: Path) -> str:
    line = placeholder(line, copy).rstrip()
    line = _WALL_S.sub("wall s: <t>", line)
    line = _SECONDS.sub("<t> s", line)
    if line.startswith(_HANGS_LINE):
        line = _HANGS_READ.sub("<n> more hang(s) read (...)", line)
    if not line.startswith(_PLANNED):
        return line
    head, sep, rest = line.partition("; ") if line.startswith("confidence ") else ("", "", line)
    return head + sep + _COUNT.sub("<n>", rest)    # the confidence itself is compared as it is


def matches(expected: list[str], actual: list[str]) -> str | None:
    """None if `actual` fits `expected` (with `...` gaps), else what differs, in words."""
    def fit(e: int, a: int) -> bool:
        if e == len(expected):
            return a == len(actual)
        if expected[e] == "...":
            return any(fit(e + 1, k) for k in range(a, len(actual) + 1))
        return a < len(actual) and actual[a] == expected[e] and fit(e + 1, a + 1)
    if fit(0, 0):
        return None
    # the first expected line that cannot be found in order, for the message
    a = 0
    for line in expected:
        if line == "...":
            continue
        try:
            a = actual.index(line, a) + 1
        except ValueError:
            return f"expected line not found (in order): {line!r}"
    return "extra or missing lines (no `...` allows them)"


@dataclass
class Result:
    command: str
    code: int
    stdout: str
    stderr: str
    seconds: float
    problem: str | None = None


def run_command(cmd: Command, copy: Path, env: dict[str, str], timeout: float = 300) -> Result:
    start = time.monotonic()
    p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd.text], cwd=copy, env=env, capture_output=True,
                       text=True, timeout=timeout)
    res = Result(cmd.text, p.returncode, p.stdout, p.stderr, time.monotonic() - start)
    if p.returncode != cmd.exit:
        res.problem = f"exit {p.returncode}, README says {cmd.exit}; stderr: {p.stderr[-800:]}"
    elif cmd.check_output:
        actual = [normalise(ln, copy) for ln in p.stdout.splitlines()]
        actual += [normalise(ln, copy) for ln in p.stderr.splitlines() if ln.startswith("bisectk:")]
        expected = [normalise(ln, copy) for ln in cmd.expected]
        why = matches(expected, actual)
        if why:
            res.problem = f"{why}\n--- actual output ---\n" + "\n".join(actual)
    return res


def run_block(block: Block, copy: Path, env: dict[str, str]) -> list[Result]:
    if block.no_gpu and has_gpu():
        return []
    if block.kind == "spec":
        name = block.note or "readme-spec.toml"
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_text("\n".join(block.body) + "\n", encoding="utf-8")
        cmd = Command(f"bisectk check {name}", check_output=False)
        return [run_command(cmd, copy, env)]
    results = []
    for cmd in block.commands():
        results.append(run_command(cmd, copy, env))
        if results[-1].problem and results[-1].code != cmd.exit:
            break
    return results


def fill(text: str, outputs: dict[tuple[int, int], list[str]]) -> str:
    """README text with `outputs[(block line, command index)]` written under each such command."""
    lines = text.splitlines()
    inserts: dict[int, list[str]] = {}
    for block in parse(text):
        if block.kind != "transcript":
            continue
        n = -1
        for k, line in enumerate(block.body):
            if line.startswith("$ "):
                n += 1
                end = k
                while block.body[end].rstrip().endswith("\\") and end + 1 < len(block.body):
                    end += 1
                nxt = block.body[end + 1] if end + 1 < len(block.body) else "$ "
                if nxt.startswith("$ ") and (block.line, n) in outputs:
                    inserts[block.line + end] = outputs[(block.line, n)]   # after body line `end`
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        out += inserts.get(i, [])
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    outputs: dict[tuple[int, int], list[str]] = {}
    bad = 0
    with tempfile.TemporaryDirectory(prefix="bisectk-readme-") as tmp:
        copy = fresh_copy(Path(tmp) / "bisectk")
        env = environment(copy, Path(tmp))
        for block in blocks():
            if block.kind in ("skip", "text"):
                print(f"## {block.name}: {block.kind} {block.note}")
                continue
            if block.kind == "unannotated":
                print(f"## {block.name}: UNANNOTATED ({block.lang or 'no language'}): annotate it")
                bad += 1
                continue
            for n, r in enumerate(run_block(block, copy, env)):
                print(f"## {block.name} ({r.seconds:.1f} s) $ {r.command}  [exit {r.code}]")
                shown = [normalise(ln, copy) for ln in r.stdout.splitlines()]
                shown += [normalise(ln, copy) for ln in r.stderr.splitlines() if ln.startswith("bisectk:")]
                print("\n".join(shown))
                real = [placeholder(ln, copy).rstrip() for ln in r.stdout.splitlines()]
                real += [ln.rstrip() for ln in r.stderr.splitlines() if ln.startswith("bisectk:")]
                outputs[(block.line, n)] = real
                if r.problem:
                    bad += 1
                    print(f"!! {r.problem.splitlines()[0]}")
    if "--fill" in argv:
        README.write_text(fill(README.read_text(encoding="utf-8"), outputs), encoding="utf-8")
    return 1 if check and bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
