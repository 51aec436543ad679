"""The bisect log: `bisectk log` writes it and `bisectk replay` reads it -- its format, both ways.

A log is a header naming the command and one `observe SHA OUTCOME` line per observation, in the
order made (like `git bisect log`, which `git bisect replay` reads back):

    # bisectk log of session 3
    # bisectk bisect --repo /path/r --good a08415c --bad b8ec30e [--first-parent] [--flaky] [--any-failure]
    observe 3f2c...  fail  # FAIL hang (timeout after 1.0 s)
    # first bad commit: c30383c... (confidence 1.0)

Everything after a `#` is a comment (the verdict in words, the answer), except the header.

Abstractions
------------
log_lines -- a bisection's session (its arguments and stored result) and its observation events
             (ledger.py) as the log's lines.
parse_log -- the header's repository, refs and flags, and the observations, in order; a line
             that is not the format is a one-line BisectkError naming it.
read_log  -- a log file's text, or one line saying why it is not one (missing, a directory, binary).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from bisectk.errors import BisectkError
from bisectk.outcome import Outcome

HEADER = "# bisectk bisect"
FLAGS = ("first_parent", "flaky", "any_failure")


def log_lines(session: dict[str, Any], events: list[dict[str, Any]]) -> list[str]:
    args = session["args"]
    cmd = ["bisectk", "bisect", "--repo", args["repo"], "--good", args["good"], "--bad", args["bad"]]
    for flag in FLAGS:
        if args.get(flag):
            cmd.append("--" + flag.replace("_", "-"))
    lines = [f"# bisectk log of session {session['id']}", "# " + shlex.join(cmd)]
    for e in events:
        lines.append(f"observe {e['sha']} {e['outcome']}  # {e.get('verdict', '')}")
    result = session.get("result") or {}
    fb = result.get("first_bad")
    if isinstance(fb, dict) and fb.get("sha"):
        lines.append(f"# first bad commit: {fb['sha']} (confidence {result.get('confidence')})")
    return lines


def parse_log(text: str) -> tuple[dict, list[tuple[str, Outcome]]]:
    header: dict = {}
    observations = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith(HEADER):
            header = _header(line, n)
            continue
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        parts = body.split()
        if len(parts) != 3 or parts[0] != "observe":
            raise BisectkError(f"line {n}: expected 'observe SHA OUTCOME', got {line.strip()!r}")
        try:
            observations.append((parts[1], Outcome(parts[2])))
        except ValueError:
            raise BisectkError(f"line {n}: unknown outcome {parts[2]!r} (pass, fail or unresolved)") from None
    if not {"repo", "good", "bad"} <= header.keys():
        raise BisectkError("not a bisectk log: the '# bisectk bisect --repo ... --good ... --bad ...' header is missing")
    return header, observations


def _header(line: str, n: int) -> dict:
    try:
        argv = shlex.split(line[2:])
    except ValueError as exc:   # an unclosed quote: not a header bisectk wrote
        raise BisectkError(f"line {n}: the header cannot be read ({exc})") from None
    header = {"flaky": "--flaky" in argv, "first_parent": "--first-parent" in argv}
    for key in ("--repo", "--good", "--bad"):
        if key in argv and argv.index(key) + 1 < len(argv):
            header[key[2:]] = argv[argv.index(key) + 1]
    return header


def read_log(path: Path) -> str:
    """The text of a log file, or one line saying why it is not one (missing, a directory, binary)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BisectkError(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise BisectkError(f"{path}: not a bisectk log (binary data at byte {exc.start}; "
                           f"`bisectk log` writes UTF-8 text)") from None
    if "\0" in text:
        raise BisectkError(f"{path}: not a bisectk log (binary data: a NUL byte at character {text.index(chr(0))})")
    return text
