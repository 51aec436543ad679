"""A build that installs the package from bisectk's worktree re-points the user's environment
there (`pip install -e .` in each commit): the command ends by naming it, with the way back
(bisectk/engine/installs.py)."""
import json
import os
import sys
from pathlib import Path

from tests.conftest import ROOT, bisectk

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import make_repo  # noqa: E402

# what pip's editable install leaves in site-packages: a dist-info whose direct_url.json names the
# directory it was installed from (the build's own directory: a commit's worktree)
EDITABLE = """import json, pathlib, sys
d = pathlib.Path(sys.prefix, "lib", "python%d.%d" % sys.version_info[:2], "site-packages", "kernelpkg-0.1.dist-info")
d.mkdir(parents=True, exist_ok=True)
(d / "direct_url.json").write_text(json.dumps({"url": pathlib.Path.cwd().as_uri(), "dir_info": {"editable": True}}))
"""


def venv(tmp_path: Path) -> dict[str, str]:
    """A virtual environment (this interpreter, its own site-packages) first on PATH, as a user's
    activated venv is."""
    env = tmp_path / "venv"
    (env / "bin").mkdir(parents=True)
    (env / "lib" / ("python%d.%d" % sys.version_info[:2]) / "site-packages").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\n")
    for name in ("python", "python3"):
        (env / "bin" / name).symlink_to(sys.executable)
    return {"PATH": f"{env / 'bin'}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(env)}


def test_a_build_that_installs_from_a_worktree_is_named_with_the_way_back(tmp_path):
    shas = make_repo(tmp_path / "repo", n=6, culprit=3, broken=())
    env = venv(tmp_path)
    repo = (tmp_path / "repo").resolve()
    args = ["bisect", "--repo", repo, "--good", shas[0], "--bad", shas[-1], "--run", "python kernel.py",
            "--ledger", tmp_path / "l.db", "--json"]
    (tmp_path / "install.py").write_text(EDITABLE)
    # the venv's interpreter by its path (bisectk runs a bare `python` as its own interpreter)
    p = bisectk(*args, "--build", f"{tmp_path / 'venv' / 'bin' / 'python'} {tmp_path / 'install.py'}", env=env,
                timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    warned = [line for line in p.stderr.splitlines() if line.startswith("bisectk: warning: a build installed")]
    assert len(warned) == 1 and "kernelpkg from bisectk's directory" in warned[0], p.stderr[-2000:]
    assert "/bisectk/worktrees/" in warned[0] and f"pip install -e {repo}" in warned[0]
    # and in the result's warnings, as every warning said on stderr is: it was said at close, after
    # the JSON document and the reports were out, so a CI job reading them never learnt it
    assert json.loads(p.stdout)["warnings"] == [warned[0].removeprefix("bisectk: warning: ")], p.stdout[-2000:]
    # the premise: the environment does point into the worktree now
    url = json.loads(next((tmp_path / "venv").rglob("direct_url.json")).read_text())["url"]
    assert "/bisectk/worktrees/" in url and str(repo) not in url
    # a build that installs nothing: nothing said (the same venv, its old install untouched since)
    p = bisectk(*args, "--fresh", "--build", "python build.py", env=env, timeout=300)
    assert p.returncode == 0 and "warning: a build installed" not in p.stderr, p.stderr[-2000:]


def test_installs_found_by_each_kind_of_record(tmp_path):
    """dist-info's direct_url.json, setup.py develop's .egg-link, a path line of a .pth; an
    `import` line of a .pth and an install from elsewhere are not ones."""
    from bisectk.engine import installs
    site, wt = tmp_path / "site", tmp_path / "cache" / "wt-0"
    (site / "a-1.0.dist-info").mkdir(parents=True)
    wt.mkdir(parents=True)
    (site / "a-1.0.dist-info" / "direct_url.json").write_text(json.dumps({"url": wt.as_uri()}))
    (site / "g-1.0.dist-info").mkdir()
    (site / "g-1.0.dist-info" / "direct_url.json").write_text(json.dumps({"url": wt.as_uri(),
                                                                          "dir_info": {"editable": True}}))
    (site / "b.egg-link").write_text(f"{wt / 'b'}\n.\n")
    (site / "c.pth").write_text(f"# comment\n{wt / 'src'}\n")
    (site / "d.pth").write_text(f"import finder; finder.install({str(wt)!r})\n")
    (site / "f-3.0.dist-info").mkdir()      # `pip install .`: a copy, said as one
    (site / "f-3.0.dist-info" / "direct_url.json").write_text(json.dumps({"url": wt.as_uri(), "dir_info": {}}))
    (site / "e-2.0.dist-info").mkdir()
    (site / "e-2.0.dist-info" / "direct_url.json").write_text(json.dumps({"url": tmp_path.as_uri()}))
    found = {e.name: installs._pointed(e, [os.path.realpath(tmp_path / "cache")]) for e in os.scandir(site)}
    assert found["a-1.0.dist-info"] == ("a", installs.COPY + str(wt.resolve()))
    assert "version of the last commit built there" in installs.warning([found["a-1.0.dist-info"]], "/me")[0]
    assert found["g-1.0.dist-info"] == ("g", str(wt.resolve()))
    assert "now imports it from there" in installs.warning([found["g-1.0.dist-info"]], "/me")[0]
    assert found["f-3.0.dist-info"] == ("f", installs.COPY + str(wt.resolve()))
    assert found["b.egg-link"] == ("b", str((wt / "b").resolve()))
    assert found["c.pth"] == ("c", str((wt / "src").resolve()))
    assert found["d.pth"] is None and found["e-2.0.dist-info"] is None


def test_a_module_only_the_paths_python_has_is_named_with_that_python(tmp_path):
    """`python` in a command is bisectk's interpreter; a user whose activated venv has the kernel's
    packages (bisectk installed elsewhere) sees every run miss them. The problem names the PATH's
    python that has the module, not an install of the module."""
    env = venv(tmp_path)
    site = next((tmp_path / "venv" / "lib").glob("python3*/site-packages"))
    (site / "kernelonly").mkdir()
    (site / "kernelonly" / "__init__.py").write_text("")
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "s.toml").write_text('[subject]\ncommand = ["python", "-c", "import kernelonly; print({x})"]\n'
                                     '[good]\nx = 1\n[bad]\nx = 2\n')
    p = bisectk("check", tmp_path / "s.toml", "--ledger", tmp_path / "l.db", env=env, timeout=300)
    assert p.returncode == 2, p.stderr
    line = next(x for x in p.stdout.splitlines() if x.startswith("problem: "))
    assert f"missing Python module 'kernelonly' in bisectk's interpreter ({sys.executable})" in line, line
    assert f"the `python` on your PATH ({tmp_path / 'venv' / 'bin' / 'python'}) has it" in line, line
