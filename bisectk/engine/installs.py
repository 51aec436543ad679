"""Python packages that a run's build installed from a directory of bisectk's.

`--build 'pip install -e .'` is how many kernel packages are built. `git bisect run` does it in
the user's checkout, so the editable install points where it pointed before. bisectk builds in
its own worktrees and scratch copies. There the same command re-points the user's environment at
bisectk's directory: the package imports the last commit built there (or nothing, once a scratch
copy is removed or `ledger gc` takes the worktree), and nothing says so. bisectk cannot undo a
command the user asked it to run, so it finds such installs when the command ends and names
each one with the way back.

Abstractions
------------
path_python -- the `python` first on PATH (the one a shell, and `git bisect run`, would run).
site_dirs   -- the site-packages directories a build may have installed into: this interpreter's,
               the user's, and those of the virtual environment whose `python` is first on PATH.
installed_from -- [(distribution, the directory it points at)] for the installs, made or changed
               since `since`, that point into one of `roots` (prefixed COPY: a `pip install .`,
               not an editable one).
warning     -- those installs in one line each, with the command that puts them back.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse


def path_python() -> str | None:
    """The `python` a shell would run (`python`, else `python3`, first on PATH). A bare `python`
    in a command is bisectk's own interpreter (spec.py); this is the one `git bisect run` runs."""
    return shutil.which("python") or shutil.which("python3")


def site_dirs() -> list[Path]:
    dirs = [*getattr(site, "getsitepackages", lambda: [])(), site.getusersitepackages()]
    exe = path_python()
    if exe:
        env = Path(exe).parent.parent           # a venv: BIN/../pyvenv.cfg, BIN/../lib/pythonX.Y/site-packages
        if (env / "pyvenv.cfg").is_file():
            dirs += [str(p) for p in env.glob("lib/python3*/site-packages")]
    seen, out = set(), []
    for d in dirs:
        p = Path(d)
        if p.is_dir() and p.resolve() not in seen:
            seen.add(p.resolve())
            out.append(p)
    return out


def _inside(path: str, roots: list[str]) -> str | None:
    path = os.path.realpath(path) if path else ""
    return next((path for r in roots if path == r or path.startswith(r + os.sep)), None)


def _pointed(entry: os.DirEntry, roots: list[str]) -> tuple[str, str] | None:
    """(distribution, directory) when this site-packages entry installs from inside `roots`."""
    name = entry.name
    try:
        if name.endswith(".dist-info") and entry.is_dir():
            record = json.loads(Path(entry.path, "direct_url.json").read_text())
            url = record.get("url", "")
            where = _inside(unquote(urlparse(url).path), roots) if url.startswith("file:") else None
            if where and not (record.get("dir_info") or {}).get("editable"):
                where = COPY + where        # `pip install .`: a copy of what was built there
            return (name[:-len(".dist-info")].rpartition("-")[0] or name, where) if where else None
        if name.endswith(".egg-link"):          # setup.py develop: its first line is the directory
            where = _inside(Path(entry.path).read_text().splitlines()[0].strip(), roots)
            return (name[:-len(".egg-link")], where) if where else None
        if name.endswith(".pth"):               # a directory per line (an `import` line is code)
            for line in Path(entry.path).read_text(errors="replace").splitlines():
                where = None if line.startswith(("import ", "#")) else _inside(line.strip(), roots)
                if where:
                    return (name[:-len(".pth")].removeprefix("__editable__."), where)
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return None


def installed_from(roots: list[Path], since: float) -> list[tuple[str, str]]:
    """The installs made or changed since `since` (a time.time()) that point into `roots`."""
    real = [os.path.realpath(r) for r in roots]
    found: dict[str, str] = {}
    for d in site_dirs():
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                if e.stat(follow_symlinks=False).st_mtime < since - 1:
                    continue
            except OSError:
                continue
            hit = _pointed(e, real)
            if hit:
                found.setdefault(hit[1], hit[0])
    return sorted((name, where) for where, name in found.items())


COPY = "copy:"


def warning(found: list[tuple[str, str]], yours: str) -> list[str]:
    lines = []
    for name, where in found:
        if where.startswith(COPY):
            lines.append(f"a build installed {name} built in bisectk's directory {where[len(COPY):]}: your "
                         f"environment now has the version of the last commit built there; install it again "
                         f"from {yours} (e.g. `pip install {yours}`)")
        else:
            lines.append(f"a build installed {name} from bisectk's directory {where}: your Python now imports it "
                         f"from there (the last version built there, gone once bisectk removes it), not from "
                         f"your copy; install it again from {yours} (e.g. `pip install -e {yours}`)")
    return lines


def check(roots: list[Path], since: float, yours: str) -> None:
    """Say on stderr, one line each, what installed from `roots` since `since`."""
    if not roots:
        return
    for line in warning(installed_from(roots, since), yours):
        sys.stderr.write(f"bisectk: warning: {line}\n")
