"""Shared fixtures: a toy subject spec writer and a CLI runner that calls bisectk as users do."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "fixtures" / "toy.py"


def toy_spec(tmp_path: Path, good: dict, bad: dict, *, extra_subject: str = "", oracle: str = 'metric = "rel_err"\nmax = 1e-4',
             args: list[str] | None = None, tail: str = "") -> Path:
    """Write a spec running tests/fixtures/toy.py with `--NAME {NAME}` for every factor."""
    names = list(good)
    argv = ["python", str(TOY)] + (args or [])
    for n in names:
        argv += [f"--{n}", "{" + n + "}"]
    def table(d):
        return "\n".join(f"{k} = {json.dumps(v)}" for k, v in d.items())
    text = (f'name = "toy"\n{tail}\n[subject]\ncommand = {json.dumps(argv)}\n{extra_subject}\n'
            f'[oracle]\n{oracle}\n[good]\n{table(good)}\n[bad]\n{table(bad)}\n')
    (tmp_path / "pyproject.toml").touch()
    p = tmp_path / "spec.toml"
    p.write_text(text)
    return p


def bisectk(*args, cwd=None, timeout=120, check=None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "bisectk", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)
    if check is not None:
        assert proc.returncode == check, (proc.returncode, proc.stdout, proc.stderr)
    return proc


@pytest.fixture
def make_spec(tmp_path):
    return lambda *a, **kw: toy_spec(tmp_path, *a, **kw)
