"""Logs that `bisectk replay` reads: its own (`bisectk log`) and git's (`git bisect log`).

bisectk's log: a header `# bisectk bisect --repo R --good G [--good G2] --bad B [--find-fix]
[--term-old O --term-new N] [--manual] [--first-parent] [--any-failure] [--flaky | --no-flaky]
[--confidence P] [-- PATHSPEC...]` (these options alone, each once but the old side's; any other
word is refused, not skipped: a replay would rebuild another bisection), `# flake-aware: ...` where no --flaky was given but the bad endpoint's failure
was intermittent (the search then weighed every run, as --flaky's does, with one rate; a fix's
confirmed each pass by repeated runs), and one
`observe SHA pass|fail|unresolved` line per observation (the subject's outcome; with --find-fix a
failure is the old side). Both say which search the observations were fed to: without them a
replay would rebuild another model's answer (a flake-aware search's 0.997 as "not determined").

git's log: `git bisect start [options] [BAD [GOOD...]] [-- PATHSPEC...]`, then one `git bisect
<term> SHA` line per mark (good/bad, old/new, the terms of `--term-old/--term-new`, skip), with
`# <term>: [SHA] subject` comments. git writes the start revisions as typed (`'HEAD' 'v1.0'`) and
the comments above the start line name their shas, so those shas are what is replayed: a
branch that moved since does not change the answer. The range is the first new-side revision
(start's BAD, else the first new mark) and every old-side one; the other marks are observations.
CRLF line ends and a leading byte order mark (a log edited on Windows) are read as well.

Abstractions
------------
Header    -- what a log says about the bisection: repo (None: the current directory, as `git bisect
             replay` uses), the old refs, the new ref, pathspec, flags, Terms.
parse_log -- (Header, [(sha, the subject's Outcome)]) from either format, or one line saying why not.
log_lines -- `bisectk log`: a session's header and observations as the lines parse_log reads back
             (this module owns the format both ways).
read_log  -- a log file's text, or one line saying why it is not one (missing, a directory, binary).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bisectk.engine.direction import Terms
from bisectk.errors import BisectkError
from bisectk.outcome import Outcome

_COMMENT_MARK = re.compile(r"^#\s*([A-Za-z0-9_.-]+): \[([0-9a-f]{7,64})\]")
FLAKE_AWARE = "# flake-aware:"
DEFAULT_CONFIDENCE = 0.99          # engine/policy.py's; a header names another


@dataclass
class Header:
    repo: str | None
    olds: list[str]
    new: str
    first_parent: bool = False
    flaky: bool = False
    manual: bool = False
    terms: Terms = field(default_factory=Terms)
    paths: list[str] = field(default_factory=list)
    source: str = "bisectk"
    steady: bool = False        # --no-flaky: the failure was declared deterministic (confirmed once)
    intermittent: bool = False  # no --flaky, but the endpoints showed the failure intermittent
    confidence: float = DEFAULT_CONFIDENCE

    @property
    def good(self) -> str:
        return self.olds[0]

    @property
    def bad(self) -> str:
        return self.new


def parse_log(text: str) -> tuple[Header, list[tuple[str, Outcome]]]:
    # lines end at "\n" alone, as git's and bisectk's writers end them: splitlines() also ends one
    # at \f, \x1c-\x1e, \x85 or U+2028, which a verdict's comment may hold (a subject's own text)
    # a log saved on Windows may begin with a UTF-8 byte order mark, as it may end lines with CRLF
    lines = [line.rstrip("\r") for line in text.removeprefix("\ufeff").split("\n")]
    if any(line.startswith("git bisect ") for line in lines) and not any(line.startswith("# bisectk bisect")
                                                                           for line in lines):
        return _parse_git(lines)
    return _parse_bisectk(lines)


def _split(line: str, n: int, what: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as exc:   # an unclosed quote: not a line either program wrote
        raise BisectkError(f"line {n}: the {what} cannot be read ({exc})") from None


def _options(argv: list[str], n: int, seen: list[str] | None = None) -> tuple[dict, list[str], list[str]]:
    """(flags and values, revisions, pathspec) of a `bisectk bisect` or `git bisect start` argv;
    `seen`, where given, gets each option's name as written (`--manual=yes` whole: no value)."""
    flags: dict = {"good": [], "bad": []}
    seen = [] if seen is None else seen
    revs, paths = [], []
    k = 0
    while k < len(argv):
        a = argv[k]
        if a == "--":
            paths = argv[k + 1:]
            break
        name, eq, value = a.partition("=")
        if name in ("--good", "--bad", "--repo", "--term-old", "--term-new", "--term-good", "--term-bad",
                    "--confidence"):
            seen.append(name)
            if not eq:
                if k + 1 >= len(argv):
                    raise BisectkError(f"line {n}: {name} has no value")
                k += 1
                value = argv[k]
            key = {"--term-good": "--term-old", "--term-bad": "--term-new"}.get(name, name)[2:].replace("-", "_")
            if key in ("good", "bad"):
                flags[key].append(value)
            else:
                flags[key] = value
        elif a.startswith("--"):
            seen.append(a)
            flags[a[2:].replace("-", "_")] = True
        else:
            revs.append(a)
        k += 1
    return flags, revs, paths


def _parse_bisectk(lines: list[str]) -> tuple[Header, list[tuple[str, Outcome]]]:
    header: Header | None = None
    observations = []
    for n, line in enumerate(lines, 1):
        if line.startswith("# bisectk bisect"):
            if header is not None:
                raise BisectkError(f"line {n}: a second '# bisectk bisect' header (a log holds one bisection)")
            seen: list[str] = []
            flags, revs, paths = _options(_split(line[2:], n, "header")[2:], n, seen)
            _check_header(seen, revs, bool(flags.get("find_fix")), n)
            fix = bool(flags.get("find_fix"))
            olds, news = (flags["bad"], flags["good"]) if fix else (flags["good"], flags["bad"])
            missing = [name for name, given in (("--repo", "repo" in flags), ("--good", flags["good"]),
                                                ("--bad", flags["bad"])) if not given]
            if missing:
                raise BisectkError(f"line {n}: the header names no {' and no '.join(missing)} (`bisectk log` "
                                   "writes '# bisectk bisect --repo ... --good ... --bad ...')")
            try:
                terms = Terms.of(fix, flags.get("term_old"), flags.get("term_new"))
            except BisectkError as exc:
                raise BisectkError(f"line {n}: {exc}") from None
            header = Header(flags["repo"], olds, news[0], bool(flags.get("first_parent")), bool(flags.get("flaky")),
                            bool(flags.get("manual")), terms, paths, steady=bool(flags.get("no_flaky")),
                            confidence=_confidence(flags.get("confidence", DEFAULT_CONFIDENCE), n))
            continue
        if line.startswith(FLAKE_AWARE) and header is not None:
            header.intermittent = True
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
    if header is None:
        raise BisectkError("not a bisectk log: the '# bisectk bisect --repo ... --good ... --bad ...' header is "
                           "missing (a `git bisect log` starts with 'git bisect start')")
    return header, observations


# the options `log_lines` writes in a header: what a replay reads back (--any-failure, which it
# writes too, is accepted and, as before, not read: the replay takes the observe lines' outcomes)
_HEADER_VALUES = ("--repo", "--good", "--bad", "--term-old", "--term-new", "--confidence")
_HEADER_FLAGS = ("--manual", "--find-fix", "--first-parent", "--flaky", "--no-flaky", "--any-failure")


def _check_header(seen: list[str], revs: list[str], fix: bool, n: int) -> None:
    """A header's options are those `bisectk log` writes, each once (the old side's --good, with
    --find-fix --bad, may be repeated), as `bisectk bisect` takes them: an option it does not
    know, a second new end or a word that is no option would replay another bisection than the
    one logged, so each is refused."""
    for name in seen:
        if name not in _HEADER_VALUES + _HEADER_FLAGS:
            raise BisectkError(f"line {n}: the header's {name!r} is not an option of a bisectk log (its options: "
                               f"{', '.join(_HEADER_VALUES + _HEADER_FLAGS)})")
    if revs:
        raise BisectkError(f"line {n}: the header's {revs[0]!r} is no option: a bisectk log names its commits "
                           "with --good and --bad, a pathspec after '--'")
    repeatable = "--bad" if fix else "--good"
    for name in dict.fromkeys(seen):
        if name != repeatable and seen.count(name) > 1:
            raise BisectkError(f"line {n}: the header gives {name} {seen.count(name)} times"
                               + (f": one {name} commit ({repeatable} may be repeated)" if name in ("--good", "--bad")
                                  else ""))
    if "--flaky" in seen and "--no-flaky" in seen:
        raise BisectkError(f"line {n}: the header gives both --flaky and --no-flaky")


def _confidence(value, n: int) -> float:
    try:
        p = float(value)
    except (TypeError, ValueError):
        p = float("nan")
    if not 0.5 <= p < 1.0:
        raise BisectkError(f"line {n}: --confidence {value!r} is not a probability in [0.5, 1)")
    return p


def _parse_git(lines: list[str]) -> tuple[Header, list[tuple[str, Outcome]]]:
    start: tuple[dict, list[str], list[str]] | None = None
    noted: list[str] = []                    # shas of the `# term: [sha]` comments before `start`
    marks: list[tuple[int, str, str]] = []  # (line, word, sha)
    for n, line in enumerate(lines, 1):
        m = _COMMENT_MARK.match(line)
        if m and start is None:
            noted.append(m.group(2))
            continue
        if line.startswith("#") or not line.strip():
            continue
        argv = _split(line, n, "line")
        if argv[:2] != ["git", "bisect"] or len(argv) < 3:
            raise BisectkError(f"line {n}: expected 'git bisect ...', got {line.strip()!r}")
        if argv[2] == "start":
            start = _options(argv[3:], n)
            continue
        if start is None:
            raise BisectkError(f"line {n}: a mark before 'git bisect start'")
        if argv[2] in ("reset", "terms", "log", "visualize", "view", "next"):
            continue
        marks += [(n, argv[2], sha) for sha in argv[3:]] or [(n, argv[2], "")]
    if start is None:
        raise BisectkError("not a git bisect log: no 'git bisect start' line")
    flags, revs, paths = start
    try:
        terms = Terms.of(False, flags.get("term_old"), flags.get("term_new"))
    except BisectkError as exc:
        raise BisectkError(f"git bisect start: {exc}") from None
    old_words, new_words = {terms.old}, {terms.new}
    if terms.default:   # git takes old/new for good/bad until the terms are fixed by use
        old_words.add("old")
        new_words.add("new")
    if len(noted) == len(revs) and revs:
        revs = noted     # the shas the revisions named when the log was written
    new = revs[0] if revs else None
    olds = list(revs[1:])
    observations: list[tuple[str, Outcome]] = []
    for n, word, sha in marks:
        if not sha:
            raise BisectkError(f"line {n}: 'git bisect {word}' names no commit")
        if word in old_words:
            olds.append(sha)
        elif word in new_words:
            if new is None:
                new = sha
            else:
                observations.append((sha, Outcome.FAIL))
        elif word == "skip":
            observations.append((sha, Outcome.UNRESOLVED))
        else:
            raise BisectkError(f"line {n}: 'git bisect {word}': not a term of this log "
                               f"({terms.old}, {terms.new} or skip)")
    if new is None or not olds:
        raise BisectkError(f"the git bisect log names no {'--bad' if new is None else '--good'} commit: "
                           "nothing to replay yet")
    return Header(None, list(dict.fromkeys(olds)), new, bool(flags.get("first_parent")), False, False, terms,
                  paths, "git"), observations


LOGGED = ("bisect", "triage")   # the commands whose sessions hold a bisection that `bisectk log` writes


def log_lines(session: dict[str, Any], events: list[dict[str, Any]], undos: list[dict[str, Any]] = ()) -> list[str]:
    """`bisectk log`: a bisection's session (its arguments and stored result) and its observation
    events (ledger/sessions.py) as the log's lines; `undos`: its undo events (manual mode: the verdicts
    undone are left out). A triage's session holds its bisection's record under "bisect" and,
    after the commits' observations, those of its hunk isolation, which are no bisection's."""
    args = session["args"]
    triage = session.get("command") == "triage"
    if triage:
        events = [e for e in events if e.get("space", "commits") == "commits"]
    fix = bool(args.get("find_fix"))
    olds = args.get("olds") or [args["good"]]
    cmd = ["bisectk", "bisect", "--repo", args["repo"]]
    for sha in olds:
        cmd += ["--bad" if fix else "--good", sha]
    cmd += ["--good" if fix else "--bad", args["bad"]]
    for flag in ("manual", "find_fix", "first_parent", "flaky", "any_failure"):
        if args.get(flag):
            cmd.append("--" + flag.replace("_", "-"))
    if args.get("flaky") is False:
        cmd.append("--no-flaky")
    default = ("broken", "fixed") if fix else ("good", "bad")
    if (args.get("old"), args.get("new")) not in ((None, None), default):
        cmd += ["--term-old", args["old"], "--term-new", args["new"]]
    confidence = args.get("confidence")
    if confidence is not None and confidence != DEFAULT_CONFIDENCE:
        cmd += ["--confidence", repr(confidence)]
    if args.get("paths"):
        cmd += ["--", *args["paths"]]
    lines = [f"# bisectk log of session {session['id']}" + (" (the bisection of a triage)" if triage else ""),
             "# " + shlex.join(cmd)]
    result = session.get("result") or {}
    if triage:
        result = result.get("bisect") or {}
    if result.get("flaky") and args.get("flaky") is None:
        lines.append(f"{FLAKE_AWARE} the bad endpoint's failure was intermittent, so the search weighed every run")
    undone = {u.get("seq") for u in undos if u.get("seq") is not None}
    for e in events:
        if e.get("seq") is not None and e["seq"] in undone:
            continue
        # the verdict is the subject's words (an error, a metric's name): kept on its line, so
        # that no text of a run's can start a line of its own (`observe SHA fail`) in the log
        said = " ".join(str(e.get("verdict", "")).splitlines())
        lines.append(f"observe {e['sha']} {e['outcome']}  # {said}")
    fb = result.get("first_bad")
    if isinstance(fb, dict) and fb.get("sha"):
        words = f"first {args.get('new') or default[1]} commit"
        if result.get("complete") is False:     # a stopped search's one candidate: never confirmed
            words += " so far, not confirmed (the search stopped)"
        lines.append(f"# {words}: {fb['sha']} (confidence {result.get('confidence')})")
    return lines


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
