"""A commit's tree exported as a checkout of it has it, not as a release tarball.

Abstractions
------------
checkout_attributes -- the git options that make `git archive` of a repository's commit leave
                       its `export-ignore` and `export-subst` attributes unapplied: a git
                       directory of its own (`dir`), empty but for the repository's objects (an
                       alternate), its config (included: filters, core.autocrlf, as the
                       repository's own git reads them) and `info/attributes`: the repository's
                       own, then both unset.

Why: those attributes are for `git archive` as a release (`tests/ export-ignore` is a common line;
`$Format:%H$` a version stamp). A bisection checks commits out; the hunk isolation after it (and a
Ray worker) export them with `git archive`. Applied, a commit's tests were missing from every tree
it exported, and a stamp differed between a commit and its parent, a hunk no commit made.
`info/attributes` is read before any `.gitattributes` and outranks it; it is written in a
directory of bisectk's, never in the user's repository, and holds the repository's own first (a
`* eol=crlf` there is what the bisection's checkouts wrote).
"""

from __future__ import annotations

from pathlib import Path

from bisectk.run.process import run_process

UNSET = "* -export-ignore -export-subst\n"


def checkout_attributes(repo: str | Path, env: dict[str, str], dir: Path) -> list[str]:
    """Options to put before `archive` in a git command run in `repo`; [] where git could not
    say where the repository's objects are (then archive applies the attributes, as before)."""
    def ask(*args: str, cwd: str | Path = repo) -> str | None:
        p = run_process(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=cwd, base_env=env, timeout=60)
        return p.stdout.strip() if p.started and p.exit_code == 0 else None
    objects = ask("rev-parse", "--path-format=absolute", "--git-path", "objects")
    config = ask("rev-parse", "--path-format=absolute", "--git-path", "config")
    form = ask("rev-parse", "--show-object-format") or "sha1"
    mine = ask("rev-parse", "--path-format=absolute", "--git-path", "info/attributes")
    if not objects or not config or not mine:
        return []
    if ask("init", "-q", "--bare", f"--object-format={form}", str(dir), cwd=dir.parent) is None:
        return []
    (dir / "objects" / "info").mkdir(parents=True, exist_ok=True)
    (dir / "objects" / "info" / "alternates").write_text(objects + "\n")
    (dir / "info").mkdir(exist_ok=True)
    try:        # the repository's own (eol, filters), as its checkouts read it; the two unset after it
        own = Path(mine).read_text(errors="replace")
    except OSError:
        own = ""
    (dir / "info" / "attributes").write_text(own + ("\n" if own and not own.endswith("\n") else "") + UNSET)
    return ["--git-dir", str(dir), "-c", f"include.path={config}"]
