"""Issue 21: when the environment is the problem, the endpoints' diagnosis says so -- a missing
module (and the extra that installs it), no GPU visible, an import that fails, a driver/runtime
mismatch, out of memory at start -- in one line, exit 2, then the facts; `bisectk env` shows the
same facts. One CLI test per diagnosis, and the rule itself on in-memory runs."""
import json
import re
import tomllib
from dataclasses import replace

import pytest

from bisectk.engine.environment import diagnose, missing_paths, recognise_cause
from bisectk.outcome import FailKind, Outcome, Reason, Run
from bisectk.errors import MODULE_EXTRAS
from bisectk.spaces.env import gpu_visibility
from tests.conftest import ROOT, bisectk

# a subject that stops before its kernel, as a missing library or a GPU-less machine stops one
SUBJECT = """import sys
print("BISECTK_PHASE imports", file=sys.stderr, flush=True) if sys.argv[1] == "late" else None
kind = sys.argv[2]
if kind == "import":
    raise ImportError("libcuda.so.1: cannot open shared object file: No such file or directory")
if kind == "nodriver":
    raise RuntimeError("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU")
if kind == "crash":
    raise ValueError("tile 3 out of range")
print('BISECTK_RESULT {"err": 0.0}')
"""

# Python's start-up imports sitecustomize from PYTHONPATH: this one makes `import torch` (and
# cutlass) fail as on a machine where they were never installed
BLOCKER = """import importlib.abc, sys
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "cutlass"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Missing())
"""


def spec(tmp_path, good: str, bad: str) -> str:
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "subject.py").write_text(SUBJECT)
    (tmp_path / "s.toml").write_text('[subject]\ncommand = ["python", "subject.py", "{when}", "{kind}"]\n'
                                     '[oracle]\nmetric = "err"\nmax = 0\n'
                                     f'[good]\nwhen = "early"\nkind = "{good}"\n'
                                     f'[bad]\nwhen = "late"\nkind = "{bad}"\n')
    return tmp_path / "s.toml"


def problem(p) -> tuple[str, list[str]]:
    """The one problem line and the detail lines under it."""
    lines = p.stdout.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("problem: "))
    return lines[i], [line for line in lines[i + 1:] if line.startswith("  ")]


def test_missing_module_names_the_extra_that_installs_it(tmp_path):
    """A GPU variant where torch and the CuTe DSL are not installed: both endpoints stop at their
    imports. Not 'the good configuration fails too': the module, and `pip install 'bisectk[kernels]'`."""
    (tmp_path / "block").mkdir()
    (tmp_path / "block" / "sitecustomize.py").write_text(BLOCKER)
    env = {"PYTHONPATH": f"{tmp_path / 'block'}:{ROOT}"}
    p = bisectk("check", ROOT / "variants" / "gpu" / "gpu-ws-hang-phase.toml", "--ledger", tmp_path / "l.db",
                env=env, timeout=300)
    assert p.returncode == 2, p.stderr
    line, details = problem(p)
    # the extra, installed from the checkout this bisectk runs from (a clone has no index entry)
    assert line == f"problem: environment problem: missing Python module 'torch': pip install -e '{ROOT}[kernels]'"
    assert details[0] == "  good: FAIL (ModuleNotFoundError: No module named 'torch'), before its first BISECTK_PHASE"
    assert "fails too" not in p.stdout and "Traceback" not in p.stderr
    doc = json.loads(bisectk("ablate", ROOT / "variants" / "gpu" / "gpu-ws-hang-phase.toml", "--json", "--ledger",
                             tmp_path / "l.db", env=env, timeout=300, check=2).stdout)
    assert doc["endpoints"]["environment_problem"]["kind"] == "missing-module"
    assert doc["endpoints"]["problem"] == line[len("problem: "):]
    # `bisectk env` shows the same fact
    checks = json.loads(bisectk("env", env=env, check=0).stdout)["checks"]
    assert checks["missing_modules"]["torch"] == f"pip install -e '{ROOT}[kernels]'"


def test_no_gpu_visible_is_named_with_the_machines_facts(tmp_path):
    """Both endpoints stop where the subject looks for a GPU (here with CUDA_VISIBLE_DEVICES
    emptied, so a machine with GPUs hides them too): 'no GPU visible', with what nvidia-smi,
    /dev/nvidia* and CUDA_VISIBLE_DEVICES say."""
    s = spec(tmp_path, "nodriver", "nodriver")
    p = bisectk("ablate", s, "--ledger", tmp_path / "l.db", env={"CUDA_VISIBLE_DEVICES": ""})
    assert p.returncode == 2, p.stderr
    line, details = problem(p)
    assert re.fullmatch(r"problem: environment problem: no GPU visible \((no nvidia-smi|nvidia-smi lists none), "
                        r"(no|but) /dev/nvidia\*( exists)?\): run where a GPU is visible|problem: environment problem: "
                        r"no GPU visible \(CUDA_VISIBLE_DEVICES='' hides this machine's \d+\): run where a GPU is "
                        r"visible", line), line
    assert details[1] == "  bad: FAIL (RuntimeError: Found no NVIDIA driver on your system. Please check that you " \
                         "have an NVIDIA GPU), after 'imports'"
    assert any(d.startswith("  nvidia-smi: ") and "CUDA_VISIBLE_DEVICES: ''" in d for d in details)
    checks = json.loads(bisectk("env", env={"CUDA_VISIBLE_DEVICES": ""}, check=0).stdout)["checks"]
    assert checks["gpu_visible"] is False and "CUDA_VISIBLE_DEVICES: ''" in checks["gpu"]


def test_an_import_that_fails_is_named(tmp_path):
    p = bisectk("check", spec(tmp_path, "import", "import"), "--ledger", tmp_path / "l.db")
    assert p.returncode == 2, p.stderr
    line, details = problem(p)
    assert line == "problem: environment problem: an import fails (libcuda.so.1): install or repair what it names"
    assert "  all 2 runs of both endpoints stopped this way: the differences between them were never tested" \
        in details


def test_the_differences_stay_in_question_when_the_sides_differ(tmp_path):
    """The good side stopping at an import while the bad one crashes differently is no
    environment diagnosis: the old words stay."""
    p = bisectk("check", spec(tmp_path, "import", "crash"), "--ledger", tmp_path / "l.db")
    assert p.returncode == 2
    line, _ = problem(p)
    assert "environment problem" not in line


# -- the rule on in-memory runs --------------------------------------------------------------------

def crash(text: str, points=()) -> Run:
    timeline = tuple((k, 0.1) for k in points) + (("<end>", 0.2),)
    return Run(Outcome.FAIL, FailKind.CRASH, signature=text.splitlines()[-1], stderr_tail=text, exit_code=1,
               timeline=timeline)


GPU_LESS = {"nvidia_smi": None, "device_files": [], "cuda_visible_devices": None, "gpus": 0, "driver_cuda": "12.2"}


@pytest.mark.parametrize("text, points, kind, words", [
    ("RuntimeError: CUDA driver version is insufficient for CUDA runtime version", (), "driver-mismatch",
     "the CUDA driver and runtime do not match (driver version is insufficient; the driver supports CUDA 12.2)"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB", ("phase:imports",), "oom-at-start",
     "out of memory at start, before the kernel was launched"),
    ("AssertionError: Torch not compiled with CUDA enabled", (), "cpu-torch", "torch is a CPU-only build"),
    ("ModuleNotFoundError: No module named 'cutlass.cute'", (), "missing-module",
     "missing Python module 'cutlass': pip install -e '"),
])
def test_each_cause_is_named(text, points, kind, words):
    env = diagnose([crash(text, points)], [crash(text, points)] * 2, facts=GPU_LESS)
    assert env is not None and env.kind == kind and env.line.startswith(f"environment problem: {words}"), env


def test_what_is_not_the_environment():
    oom_in_kernel = crash("RuntimeError: CUDA out of memory", ("phase:imports", "phase:launch"))
    assert recognise_cause(oom_in_kernel) is None          # after the launch: the kernel's own allocation
    missing = crash("ModuleNotFoundError: No module named 'cutlass'")
    assert diagnose([Run(Outcome.PASS)], [missing], facts=GPU_LESS) is None       # good ran: the differences matter
    assert diagnose([missing], [crash("ModuleNotFoundError: No module named 'torch'")], facts=GPU_LESS) is None
    assert diagnose([missing], [crash("ValueError: tile 3")], facts=GPU_LESS) is None
    skip = Run(Outcome.UNRESOLVED, reason=Reason.BUILD, signature="skip (exit 125): no CUDA device")
    assert diagnose([skip], [skip], facts=GPU_LESS).kind == "no-gpu"


@pytest.mark.parametrize("text, paths", [
    ("FileNotFoundError: [Errno 2] No such file or directory: 'data/w.bin'", ["data/w.bin"]),
    ("cat: cfg/local.txt: No such file or directory", ["cfg/local.txt"]),
    ("sh: 1: ./run-me: not found\n./x.sh: 3: ./gen: No such file or directory", ["./gen", "./run-me"]),
    ("sh: 1: make: not found", []),             # a program, not a path: command-not-found's business
    ("python3: can't open file '/u/.cache/bisectk/worktrees/r-0123456789ab/wt-0/tool.py': [Errno 2] No such file "
     "or directory", ["/u/.cache/bisectk/worktrees/r-0123456789ab/wt-0/tool.py"]),
    ("RuntimeError: tile 3", []),
    # dash (Debian's /bin/sh) sourcing a helper or redirecting from a file says "No such file" alone
    ("/u/r/t.sh: 2: .: cannot open ./helper.sh: No such file", ["./helper.sh"]),
    ("/u/r/t.sh: 3: cannot open ref.txt: No such file", ["ref.txt"]),
])
def test_the_paths_a_run_could_not_open(text, paths):
    assert missing_paths(crash(text)) == paths


@pytest.mark.parametrize("text", ["/tmp/t.sh: 2: nvcc_x: not found", "/tmp/t.sh: line 2: nvcc_x: command not found",
                                  "sh: 1: nvcc_x: not found"])
def test_a_program_the_shell_did_not_find_is_named(text):
    """A test script calling a tool that is not installed exits 127 on both endpoints: before,
    "the good configuration fails too, with the same failure (non-zero exit)"."""
    run = Run(Outcome.FAIL, FailKind.CRASH, signature="exit 127", stderr_tail=text, exit_code=127)
    assert recognise_cause(run) == ("command-not-found", "nvcc_x")
    env = diagnose([run], [run], facts=GPU_LESS)
    assert env.kind == "command-not-found" and "runs 'nvcc_x', which the shell did not find (exit 127)" in env.line
    assert recognise_cause(replace(run, exit_code=1)) is None      # the words alone, in a test's own output


def test_a_path_every_run_missed_and_the_checkout_has_untracked_is_named_first():
    known = {"w.bin": "/home/u/repo/w.bin"}
    both = crash("FileNotFoundError: [Errno 2] No such file or directory: 'w.bin'")
    got = diagnose([both], [both], facts=GPU_LESS, untracked=known.get)
    assert got.kind == "untracked-file" and got.subject == "/home/u/repo/w.bin"
    assert "/home/u/repo/w.bin, which your checkout has but git does not track" in got.line
    other = crash("cat: other.txt: No such file or directory")
    assert diagnose([both], [other], facts=GPU_LESS, untracked=known.get) is None      # not missed by every run
    assert diagnose([Run(Outcome.PASS)], [both], facts=GPU_LESS, untracked=known.get) is None
    assert diagnose([both], [both], facts=GPU_LESS, untracked=lambda path: None) is None  # tracked, or nowhere


def test_a_script_beside_the_spec_but_not_in_the_subjects_cwd_is_named(tmp_path):
    """A spec in a subdirectory runs `python subject.py`, the script beside it: the command runs
    from the project root (relative to which `cwd` is read), where there is no subject.py. Both
    endpoints stop with python's "can't open file": not 'the good configuration fails too ... or
    the good side is flaky', but the file, where it is, and where the command looked."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "subject.py").write_text(SUBJECT)
    (tmp_path / "sub" / "s.toml").write_text('[subject]\ncommand = ["python", "subject.py", "{when}", "ok"]\n'
                                             '[good]\nwhen = "early"\n[bad]\nwhen = "late"\n')
    p = bisectk("check", tmp_path / "sub" / "s.toml", "--ledger", tmp_path / "l.db")
    assert p.returncode == 2, p.stderr
    line, _ = problem(p)
    assert "fails too" not in line and str(tmp_path / "sub" / "subject.py") in line, line
    assert "[subject] cwd" in line and "Traceback" not in p.stderr
    doc = json.loads(bisectk("ablate", tmp_path / "sub" / "s.toml", "--json", "--ledger", tmp_path / "l.db",
                             check=2).stdout)
    assert doc["endpoints"]["environment_problem"]["kind"] == "beside-spec"


def test_module_extras_exist_in_pyproject():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {extra for extra in MODULE_EXTRAS.values()} <= set(extras)
    assert any(r.startswith("torch") for r in extras["kernels"]) and any("cutlass" in r for r in extras["kernels"])


def test_install_hint_outside_a_checkout(tmp_path):
    """Installed from a package index (no pyproject.toml beside the package), the hint names the
    extra by package name."""
    import shutil
    import subprocess
    import sys
    shutil.copytree(ROOT / "bisectk", tmp_path / "site" / "bisectk")
    p = subprocess.run([sys.executable, "-c", "from bisectk.errors import install_hint as h; print(h('cutlass'));"
                        "print(h('numba'))"], capture_output=True, text=True, cwd=tmp_path, check=True,
                       env={"PYTHONPATH": str(tmp_path / "site")})
    assert p.stdout.splitlines() == ["pip install 'bisectk[kernels]'", "install the package that provides 'numba'"]


def test_gpu_visibility_reads_the_machine():
    facts = gpu_visibility()
    assert set(facts) == {"nvidia_smi", "device_files", "cuda_visible_devices", "gpus", "driver_cuda"}
    assert all(f.startswith("/dev/nvidia") for f in facts["device_files"])


def test_ptx_without_the_cute_dsl_names_the_module(tmp_path):
    (tmp_path / "block").mkdir()
    (tmp_path / "block" / "sitecustomize.py").write_text(BLOCKER)
    p = bisectk("ptx", ROOT / "variants" / "gpu" / "gpu-ws-hang-arrive.toml",
                env={"PYTHONPATH": f"{tmp_path / 'block'}:{ROOT}"})
    assert p.returncode == 2
    hint = re.escape(f"pip install -e '{ROOT}[kernels]'")
    assert re.search(rf"^good: missing Python module '(torch|cutlass)': {hint} "
                     r"\(the compile-only run of ws_pipeline.py needs it\)$", p.stdout, re.MULTILINE), p.stdout


def test_ptx_of_a_spec_that_is_no_cute_dsl_kernel_says_why_on_stderr():
    """The reasons are in the stdout table; a script keeping stderr only (`2>err.log`, CI) still
    gets the one `bisectk:` line every refused input gives, not an exit 2 without a word."""
    p = bisectk("ptx", ROOT / "variants" / "cpu" / "crash-oob.toml")
    assert p.returncode == 2
    (line,) = p.stderr.splitlines()
    assert line.startswith("bisectk: ptx ") and "not a CuTe DSL kernel" in line and "(and 1 more)" in line, p.stderr
    assert "Traceback" not in p.stderr


def test_a_script_the_command_names_that_is_nowhere_is_named(tmp_path):
    """A first spec with a typo in the script's path (`subjct.py`): both endpoints stop at
    python's "can't open file", before any of the kernel ran. Not 'the good configuration fails
    too ... or the good side is flaky', but the path the command names, and that it is nowhere."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "subject.py").write_text(SUBJECT)
    (tmp_path / "s.toml").write_text('[subject]\ncommand = ["python", "subjct.py", "{when}", "ok"]\n'
                                     '[good]\nwhen = "early"\n[bad]\nwhen = "late"\n')
    p = bisectk("check", tmp_path / "s.toml", "--ledger", tmp_path / "l.db")
    assert p.returncode == 2, p.stderr
    line, _ = problem(p)
    assert "fails too" not in line and str(tmp_path / "subjct.py") in line and "no such file" in line, line
    assert "Traceback" not in p.stderr
    # no run of bad was judged: not 'bad failed 0/0 runs (95% Wilson interval 0.00-1.00)'
    assert "reproducibility: not measured (no run of bad was judged: each was unresolved)" in p.stdout, p.stdout


def test_a_script_only_the_bad_side_names_and_that_is_not_there_is_no_crash(tmp_path):
    """`command = ["python", "k/{variant}.py"]` where k/b.py (the bad side's) does not exist: python's
    "can't open file" (exit 2) was a crash of the kernel, so `ablate` named `variant` the culprit of
    "crash (exit 2)" and `run` said "FAIL crash (exit 2)". Now the bad side is untestable, said with
    the path, and `run` exits 125 (cannot test) as git bisect's protocol has it."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "a.py").write_text(SUBJECT)
    (tmp_path / "s.toml").write_text('[subject]\ncommand = ["python", "k/{variant}.py", "early", "ok"]\n'
                                     '[good]\nvariant = "a"\n[bad]\nvariant = "b"\n')
    missing = f"cannot start the script {tmp_path / 'k' / 'b.py'}: No such file or directory"
    p = bisectk("run", tmp_path / "s.toml", "--ledger", tmp_path / "l.db", cwd=tmp_path)
    assert p.returncode == 125 and missing in p.stdout and "crash" not in p.stdout, (p.returncode, p.stdout)
    p = bisectk("ablate", tmp_path / "s.toml", "--ledger", tmp_path / "l.db", cwd=tmp_path)
    assert p.returncode == 2 and "culprit" not in p.stdout and "crash" not in p.stdout, (p.stdout, p.stderr)
    assert f"the bad configuration cannot be tested: UNRESOLVED infra ({missing}" in p.stdout, p.stdout
    assert "Traceback" not in p.stderr


def test_a_missing_path_is_named_only_when_the_command_names_it():
    both = crash("python3: can't open file '/w/subjct.py': [Errno 2] No such file or directory")
    named = {"/w/subjct.py": "/w/subjct.py"}
    got = diagnose([both], [both], facts=GPU_LESS, missing=named.get)
    assert got.kind == "missing-file" and "cannot open /w/subjct.py, which the command names" in got.line
    assert diagnose([both], [both], facts=GPU_LESS, missing=lambda path: None) is None     # the subject's own file
    found = {"/w/subjct.py": "/w/sub/subjct.py"}
    assert diagnose([both], [both], facts=GPU_LESS, beside_spec=found.get, missing=named.get).kind == "beside-spec"


def test_a_missing_path_the_build_names_is_said_of_the_build():
    """`build = ["python", "nobuild.py"]` with no nobuild.py: both endpoints' builds fail to open
    it, and the problem said "which the command names ... correct the path in the spec's command",
    where the command was right."""
    text = "python3: can't open file '/w/nobuild.py': [Errno 2] No such file or directory"
    built = Run(Outcome.UNRESOLVED, None, Reason.BUILD, signature=f"build failed: {text}", stderr_tail=text, exit_code=2)
    got = diagnose([built], [built], facts=GPU_LESS, missing={"/w/nobuild.py": "/w/nobuild.py"}.get)
    assert got.kind == "missing-file" and "cannot open /w/nobuild.py, which the build names" in got.line, got.line
    assert "correct the path in the spec's build," in got.line, got.line
