"""Run logs under a total cap: each run keeps up to 8 MiB a stream (run/output.py), and a CI job
running bisectk on every push would otherwise fill the disk with them.

Abstractions
------------
session_dir -- where one session's run logs go: `logs/<ledger name>-<session>/` beside the ledger.
               A directory per session (not one per configuration, shared by every command) is
               what lets a session's logs be counted, kept while it runs, and removed whole; and
               an old run's log is never overwritten by a later command's run of the same
               configuration (`--fresh`, sources changed), so the path the ledger holds for it
               names its own output or nothing.
cap_bytes   -- the cap: BISECTK_LOG_CAP_MB (MiB; 0 keeps only the last command's logs and those
               its answer points at), else DEFAULT_CAP_MB. A value that is not a whole number
               is a one-line error before anything runs.
session_of  -- the session a run's log path belongs to (its directory's name).
settle      -- at the end of a command: its own logs measured (a walk of its own directory only)
               and indexed in the ledger (`logs` table), the sessions whose runs it answered from
               the ledger marked used now (one UPDATE each: their logs are where its report points),
               then the indexed total read back (one SQL sum); over the cap, `prune`.
prune       -- the least recently used sessions' logs first (opened, or last answered from),
               until the total is under the cap. Never a session whose process is still writing
               (a concurrent command; its row names its pid), never the `keep` sessions (the
               command pruning, and those it answered from): a session is counted only once it
               has ended, so a running command's logs are not in the total it is measured by.
               A session killed before it settled is measured then (its process is gone) and
               counted like the others. The ledger's rows stay: a pruned run keeps its verdict
               and tails, and `gone` tells its report the log was pruned.
collect     -- `bisectk ledger gc --ledger FILE`: the same, and first what no indexed session
               owns: the directories of the logs' older layout (`logs/<digest>/`, one per
               configuration, before this index), and a session's the index does not hold (one
               dropped as empty after a run that never started, a ledger salvaged into a new file:
               every session this ledger opens is indexed in the same transaction, so none of
               these is a running command's).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from bisectk.contents import walk
from bisectk.errors import BisectkError, LedgerError
from bisectk.ledger import Ledger

CAP_VAR = "BISECTK_LOG_CAP_MB"
DEFAULT_CAP_MB = 512
_LEGACY = re.compile(r"[0-9a-f]{12}")      # run/runner.py's digest directories before sessions had their own
_DIGEST, _RUN = _LEGACY, re.compile(r"\d+-[a-z]+")    # a session's <digest>/<n>-<phase>/ (runner._log_dir)
_LOG_FILES = {"stdout.log", "stderr.log"}             # what a run writes there (process.captures, remote)


def logs_root(ledger_path: Path) -> Path:
    return Path(ledger_path).parent / "logs"


def session_dir(ledger_path: Path, session: int) -> Path:
    return logs_root(ledger_path) / f"{Path(ledger_path).stem}-{session}"


def session_of(ledger_path: Path, log_path: str | None) -> int | None:
    """The session whose directory under this ledger's logs holds `log_path` (None: another
    ledger's, the older layout's, or none)."""
    if not log_path:
        return None
    root = Path(os.path.abspath(log_path)).parent.parent
    m = re.fullmatch(r"(.+)-(\d+)", root.name)
    if m and m[1] == Path(ledger_path).stem and root.parent == Path(os.path.abspath(logs_root(ledger_path))):
        return int(m[2])
    return None


def cap_bytes(environ=os.environ) -> int:
    text = environ.get(CAP_VAR, "").strip()
    if not text:
        return DEFAULT_CAP_MB << 20
    if not text.isdigit():
        raise BisectkError(f"{CAP_VAR}={text!r}: give the cap on run logs as a whole number of MiB "
                           f"(0 keeps only the last command's; unset: {DEFAULT_CAP_MB})")
    return int(text) << 20


def dir_size(path: Path) -> int:
    """Bytes of the files under `path` (0 when it is gone); links are not followed."""
    total = 0
    for top, _dirs, files in walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(top, name)).st_size
            except OSError:
                pass
    return total


def settle(ledger: Ledger, session: int, cap: int, used: set[int] = frozenset()) -> list[Path]:
    """This session's logs indexed; then, over the cap, the least recently used pruned. `used`: the sessions
    whose runs this one answered from (their log paths are in what it printed): kept now, as its
    own are, and counted as used now, so a later command prunes them after those used less
    recently. Returns what was removed."""
    own = session_dir(ledger.path, session)
    if not ledger.settle_logs(session, dir_size(own)):
        _clear(own, (_DIGEST, _RUN))    # a session dropped as empty: what its unstarted runs left
    used = set(used) - {session}
    if used:
        ledger.used_logs(used)
    _settle_killed(ledger)
    if ledger.log_total() <= cap:
        return []
    return prune(ledger, cap, keep={session, *used})


def _settle_killed(ledger: Ledger) -> None:
    """Sessions whose process died before they settled (SIGKILL, a crash): measured, and counted
    from now on. Usually none: only the unsettled rows are read, and each one's pid looked at."""
    for s, _size, _settled, alive in ledger.log_sessions(unsettled=True):
        if not alive:
            ledger.settle_logs(s, dir_size(session_dir(ledger.path, s)))


def prune(ledger: Ledger, cap: int, keep: int | set[int] | None = None) -> list[Path]:
    _settle_killed(ledger)
    rows = ledger.log_sessions()
    total = ledger.log_total()
    keep = {keep} if isinstance(keep, int) else set(keep or ())
    removed = []
    for s, _size, _settled, alive in rows:
        if total <= cap:
            break
        if s in keep or alive:
            continue
        path = session_dir(ledger.path, s)
        _clear(path, (_DIGEST, _RUN))
        ledger.pruned_logs(s)
        total = ledger.log_total()
        removed.append(path)
    return removed


def collect(ledger: Ledger, cap: int) -> tuple[list[Path], list[Path]]:
    """`ledger gc`: the older layout's directories go first (no session owns them), then `prune`.
    Returns the older layout's directories removed, and the sessions' pruned."""
    root = logs_root(ledger.path)
    indexed = ledger.indexed_logs()
    def unowned(p: Path) -> bool:
        m = re.fullmatch(r"(.+)-(\d+)", p.name)
        return bool(_LEGACY.fullmatch(p.name) or (m and m[1] == ledger.path.stem and int(m[2]) not in indexed))
    legacy = sorted((p for p in (root.iterdir() if root.is_dir() else ()) if p.is_dir() and not p.is_symlink() and unowned(p)),
                    key=lambda p: p.stat().st_mtime)
    removed = []
    for path in legacy:
        if _clear(path, (_RUN,) if _LEGACY.fullmatch(path.name) else (_DIGEST, _RUN)):
            removed.append(path)
    return removed, prune(ledger, cap)


def _clear(path: Path, levels: tuple[re.Pattern, ...]) -> bool:
    """Remove the run logs under `path` in bisectk's layout (`levels`: the name of each directory
    level down to the runs' stdout.log and stderr.log), then each directory left empty; any other
    file stays, with the directories that hold it. The logs live beside the ledger, in `logs/`: with
    --ledger in a project, a folder of the user's own, whose `logs/3f2a9c1b7d4e/` (a commit's short
    sha) or `logs/bisect-3/` took the shape of a directory of the logs and was removed whole by
    `ledger gc`. True when `path` is gone."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        return not os.path.lexists(path)
    for e in entries:
        if levels and e.is_dir(follow_symlinks=False) and levels[0].fullmatch(e.name):
            _clear(Path(e.path), levels[1:])
        elif not levels and e.name in _LOG_FILES and e.is_file(follow_symlinks=False):
            try:
                os.unlink(e.path)
            except OSError:
                pass
    try:
        os.rmdir(path)      # only when nothing else was in it
    except OSError:
        return False
    return True


def gone(ledger: Ledger | None, log_path: str) -> str | None:
    """Why a run's stored log path names nothing: 'pruned' (by the cap), 'missing' (removed some
    other way), or None when it is there. A relative path (stored by a command given a relative
    --ledger, before the paths were made absolute) is looked for under this ledger's logs too."""
    if not log_path or os.path.exists(log_path):
        return None
    path = Path(os.path.abspath(log_path))
    if not Path(log_path).is_absolute() and ledger is not None and "logs" in Path(log_path).parts:
        parts = Path(log_path).parts
        path = Path(os.path.abspath(logs_root(ledger.path))).joinpath(*parts[len(parts) - parts[::-1].index("logs"):])
        if path.exists():
            return None
    root = path.parent.parent
    m = re.fullmatch(r"(.+)-(\d+)", root.name)
    try:
        if (ledger is not None and m and m[1] == ledger.path.stem
                and root.parent == Path(os.path.abspath(logs_root(ledger.path))) and ledger.was_pruned(int(m[2]))):
            return "pruned"
    except LedgerError:
        pass   # a ledger older than the index
    return "missing"
