"""The CPU stand-in kernels (kernels/cpu/) and their variants (variants/cpu/) behave as specified.

Every program is run directly (a fresh interpreter, as bisectk runs it), independently of bisectk's own
run adapter: good settings print BISECTK_RESULT with correct metrics and exit 0; hang settings really
block (and are killed, with nothing left behind); corrupt settings report mismatches; crash settings
die by the stated signal; the planted two-factor interactions fail only together.

The subprocesses are declared up front (CASES) and run concurrently once per module, because a torch
import costs a few seconds per process; the tests then assert on the collected results.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels" / "cpu"
VARIANTS = sorted((ROOT / "variants" / "cpu").glob("*.toml"))
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
HANG_WAIT = 2.0  # s a hang case must survive; good pipeline runs take ~0.05 s of work
RESULT = "BISECTK_RESULT "

# What the bad endpoint of each variant must do (good must always pass its oracle), and the planted
# culprits: the factors whose bad value alone makes a run fail ("independent"), or that fail only all
# together ("together"); every other differing factor is benign.
VARIANTS_EXPECTED = {
    "pipeline-hang": ("HANG", "independent", ["producer_phase"]),
    "pipeline-corrupt": ("WRONG", "independent", ["leader_sync"]),
    "pipeline-two-culprits": ("WRONG", "independent", ["leader_sync", "release_before_read"]),
    "pipeline-arrive": ("HANG", "independent", ["arrive"]),
    "pipeline-tail": ("HANG", "independent", ["consumer_tiles"]),
    "pipeline-slow": ("SLOW", "independent", ["depth"]),
    "attention-multitile": ("WRONG", "independent", ["o_rescale"]),
    "attention-warps": ("WRONG", "together", ["warps", "mma_warp"]),
    "attention-threshold": ("WRONG", "independent", ["kv_len"]),
    "attention-rowsum": ("WRONG", "independent", ["rowsum_map"]),
    "attention-nan": ("NAN", "together", ["init_max", "logit_bias"]),
    "attention-garbage": ("GARBAGE", "independent", ["consumer_wgs"]),
    "crash-oob": ("SIGSEGV", "independent", ["access"]),
    "crash-poison": ("CUDA", "independent", ["poison"]),
    "build-arch": ("SIGSEGV", "independent", ["access"]),
    "softmax-two-sets": ("WRONG", "sets", ["fast", "n", "block"]),
}
# Variants whose culprits form several independent minimal failing sets ("sets" above): each set
# alone on good fails, each set less one member passes, bad with each fix (a minimal set meeting
# every failing set) reverted passes.
PLANTED_SETS = {"softmax-two-sets": ([["fast", "n"], ["fast", "block"]], [["fast"], ["n", "block"]])}
EXPECT = {k: v[0] for k, v in VARIANTS_EXPECTED.items()}
# attention-threshold's ordinal factor: which of its declared values fail (more tiles than stages).
THRESHOLD_FAILS = {64: False, 128: False, 256: False, 512: True, 1024: True}


@dataclasses.dataclass
class Result:
    argv: list[str]
    rc: int | None          # None: still running at the deadline (killed)
    stdout: str
    stderr: str
    wall: float
    cpu_s: float | None = None   # CPU time of a hung process when it was killed
    leftover: bool = False       # something of its process group survived the kill

    @property
    def hung(self) -> bool:
        return self.rc is None

    @property
    def metrics(self) -> dict | None:
        lines = [ln for ln in self.stdout.splitlines() if ln.startswith(RESULT)]
        return json.loads(lines[-1][len(RESULT):]) if lines else None


def _proc_cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def run(argv: list[str], timeout: float = 120.0) -> Result:
    """Run argv in its own session; past the timeout kill its whole process group."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return Result(argv, proc.returncode, out, err, time.perf_counter() - t0)
    except subprocess.TimeoutExpired:
        cpu = _proc_cpu_seconds(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)  # the session id is the child's pid
        out, err = proc.communicate()
        try:
            os.killpg(proc.pid, 0)
            leftover = True
        except ProcessLookupError:
            leftover = False
        return Result(argv, None, out, err, time.perf_counter() - t0, cpu, leftover)


def script(name: str, *args: object) -> list[str]:
    return [sys.executable, str(KERNELS / name), *map(str, args)]


def substitute(argv: list[str], config: dict) -> list[str]:
    out = [PLACEHOLDER.sub(lambda m: str(config[m.group(1)]), a) for a in argv]
    return [sys.executable if i == 0 and a == "python" else a for i, a in enumerate(out)]


def load(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def oracle_failures(spec: dict, metrics: dict) -> list[str]:
    """The [oracle] thresholds of the spec format (metric/max/min or metrics = {name = {max, min}})."""
    o = spec.get("oracle", {})
    checks = dict(o.get("metrics", {}))
    if "metric" in o:
        checks[o["metric"]] = {k: o[k] for k in ("max", "min") if k in o}
    bad = []
    for name, lim in checks.items():
        v = metrics[name]
        if isinstance(v, float) and math.isnan(v):
            bad.append(f"{name} NaN")
        if "max" in lim and v > lim["max"]:
            bad.append(f"{name} {v} > {lim['max']}")
        if "min" in lim and v < lim["min"]:
            bad.append(f"{name} {v} < {lim['min']}")
    if metrics.get("ok") is False:
        bad.append(f"ok false: {metrics.get('error')}")
    return bad


def satisfies(spec: dict, config: dict) -> bool:
    """The spec's constraints on a configuration (only the simple "a OP b" form is used here)."""
    ops = {">=": lambda x, y: x >= y, "<=": lambda x, y: x <= y, "<": lambda x, y: x < y,
           ">": lambda x, y: x > y, "==": lambda x, y: x == y, "!=": lambda x, y: x != y}
    for c in spec.get("constraints", []):
        lhs, op, rhs = c.split()
        if not ops[op](config.get(lhs, lhs), config.get(rhs, rhs)):
            return False
    return True


def probes(path: Path) -> dict[str, dict]:
    """Configurations that pin the planted culprit: the endpoints; for independent culprits each
    culprit alone on top of good (must fail) and bad with every culprit reverted (must pass)."""
    spec = load(path)
    _, mode, culprits = VARIANTS_EXPECTED[path.stem]
    out = {"good": spec["good"], "bad": spec["bad"]}
    if mode == "independent":
        for f in culprits:
            out[f"only-{f}"] = dict(spec["good"], **{f: spec["bad"][f]})
        benign = dict(spec["bad"], **{f: spec["good"][f] for f in culprits})
        if satisfies(spec, benign):
            out["benign"] = benign
    if mode == "sets":
        sets, fixes = PLANTED_SETS[path.stem]
        for i, members in enumerate(sets, 1):
            out[f"set{i}"] = dict(spec["good"], **{f: spec["bad"][f] for f in members})
            for f in members:
                out[f"pass-set{i}-without-{f}"] = dict(spec["good"], **{g: spec["bad"][g] for g in members if g != f})
        for fix in fixes:
            out[f"pass-fix-{'-'.join(fix)}"] = dict(spec["bad"], **{f: spec["good"][f] for f in fix})
        for f in culprits:   # no single member outside every fix is enough to revert
            if [f] not in fixes:
                out[f"only-reverted-{f}"] = dict(spec["bad"], **{f: spec["good"][f]})
    return out


# ---------------------------------------------------------------------------------------------
# All subprocess cases, run concurrently once.

def _variant_cases() -> dict[str, tuple[list[str], float, list[str] | None]]:
    cases = {}
    for path in VARIANTS:
        kind = EXPECT.get(path.stem)
        if kind == "SLOW":
            continue  # timed on its own, not next to concurrent torch imports
        spec = load(path)
        sub = spec["subject"]
        is_torch = sub["command"][1].endswith("attention.py")
        for label, config in probes(path).items():
            if is_torch and label not in ("good", "bad"):
                continue  # the attention hybrids run in-process (test_attention_variant_hybrids)
            hang = kind == "HANG" and label != "good" and label != "benign"
            build = substitute(sub["build"], config) if "build" in sub else None
            cases[f"{path.stem}:{label}"] = (substitute(sub["command"], config),
                                              HANG_WAIT if hang else 120.0, build)
    return cases


CASES: dict[str, tuple[list[str], float, list[str] | None]] = {
    # pipeline: direct factor semantics
    "pipe:default": (script("pipeline.py"), 120.0, None),
    "pipe:depth1": (script("pipeline.py", "--depth", 1), 120.0, None),
    "pipe:consumers4": (script("pipeline.py", "--consumers", 4), 120.0, None),
    "pipe:solo-no-sync": (script("pipeline.py", "--consumers", 1, "--leader-sync", "off"), 120.0, None),
    "pipe:no-tiles": (script("pipeline.py", "--tiles", 0), 120.0, None),
    "pipe:leader-sync-off": (script("pipeline.py", "--leader-sync", "off"), 120.0, None),
    "pipe:release-before-read": (script("pipeline.py", "--release-before-read", "on"), 120.0, None),
    "pipe:depth1-leader-sync-off": (script("pipeline.py", "--depth", 1, "--leader-sync", "off"),
                                    120.0, None),
    "hang:producer-phase0": (script("pipeline.py", "--producer-phase", 0), HANG_WAIT, None),
    "hang:arrive-threads": (script("pipeline.py", "--consumers", 2, "--arrive", 64), HANG_WAIT, None),
    "hang:consumer-tiles-more": (script("pipeline.py", "--consumer-tiles", 33), HANG_WAIT, None),
    "hang:consumer-tiles-fewer": (script("pipeline.py", "--consumer-tiles", 31), HANG_WAIT, None),
    "hang:tx-low": (script("pipeline.py", "--tx-bytes", 240), HANG_WAIT, None),
    "hang:tx-high": (script("pipeline.py", "--tx-bytes", 272), HANG_WAIT, None),
    # attention: the variants' endpoints run as subprocesses (below); the factor matrix in-process
    # crash / build
    "crash:in": (script("crash.py"), 120.0, None),
    "crash:oob": (script("crash.py", "--access", "oob"), 120.0, None),
    "crash:poison": (script("crash.py", "--poison", "on"), 120.0, None),
    "crash:abort": (script("crash.py", "--abort", "on"), 120.0, None),
    "crash:skip": (script("crash.py", "--skip", "on"), 120.0, None),
    "build:sm90a": (script("build.py", "--arch", "sm_90a", "--mma", "wgmma"), 120.0, None),
    "build:sm100a": (script("build.py", "--arch", "sm_100a", "--mma", "tcgen05"), 120.0, None),
    "build:sm80": (script("build.py", "--arch", "sm_80", "--mma", "mma_sync"), 120.0, None),
    "build:mixed": (script("build.py", "--arch", "sm_90a", "--mma", "tcgen05"), 120.0, None),
    "build:smem": (script("build.py", "--smem-kb", 256), 120.0, None),
    **_variant_cases(),
}


@pytest.fixture(scope="module")
def results() -> dict[str, Result]:
    def one(item):
        key, (argv, timeout, build) = item
        if build is not None:
            b = run(build)
            if b.rc != 0:
                return key, b  # a failed build: the command is not run
        return key, run(argv, timeout)

    # Hang cases sleep in the kernel; torch imports are the CPU cost. 4 workers suit 2+ cores.
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(one, CASES.items()))


def ok_result(r: Result) -> dict:
    assert r.rc == 0, f"{r.argv}: rc={r.rc}\n{r.stderr[-2000:]}"
    m = r.metrics
    assert m is not None, f"{r.argv}: no BISECTK_RESULT line\n{r.stdout[-2000:]}"
    assert r.stdout.rstrip().splitlines()[-1].startswith(RESULT)
    assert r.stdout.count(RESULT) == 1
    return m


def assert_hung(r: Result) -> None:
    assert r.hung, f"{r.argv} finished (rc={r.rc}) instead of hanging:\n{r.stdout}{r.stderr[-2000:]}"
    assert r.metrics is None
    assert not r.leftover, f"{r.argv}: process group survived SIGKILL"
    if r.cpu_s is not None:
        # A real blocking wait, not a spin: the CPU time is little more than the interpreter start.
        assert r.cpu_s < 0.75 * HANG_WAIT, f"{r.argv}: {r.cpu_s:.2f} CPU-s while 'hung'"


# ---------------------------------------------------------------------------------------------
# pipeline.py

@pytest.mark.parametrize("key", ["pipe:default", "pipe:depth1", "pipe:consumers4",
                                 "pipe:solo-no-sync", "pipe:no-tiles"])
def test_pipeline_good_settings_are_correct(results, key):
    m = ok_result(results[key])
    assert m["mismatches"] == 0 and m["rel_err"] == 0.0
    assert m["checksum"] == m["reference"]
    assert "ok" not in m


@pytest.mark.parametrize("key", ["pipe:leader-sync-off", "pipe:release-before-read",
                                 "pipe:depth1-leader-sync-off"])
def test_pipeline_early_release_corrupts(results, key):
    m = ok_result(results[key])  # it ran to completion: exit 0, but the data is wrong
    assert m["mismatches"] > 0 and m["rel_err"] > 0
    assert m["ok"] is False and "overwritten" in m["error"]


@pytest.mark.parametrize("key", [k for k in CASES if k.startswith("hang:")])
def test_pipeline_wrong_protocol_deadlocks(results, key):
    assert_hung(results[key])


# ---------------------------------------------------------------------------------------------
# attention.py

GOOD_ATT = {"rel_err": 1e-4, "cos": 0.9999}


def att_ok(m):
    return m["rel_err"] < GOOD_ATT["rel_err"] and m["cos"] > GOOD_ATT["cos"] and m["nan_count"] == 0


@pytest.fixture(scope="module")
def attention():
    """The attention module imported in-process, for the cheaper factor-semantics matrix."""
    spec = importlib.util.spec_from_file_location("cpu_attention", KERNELS / "attention.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return lambda *args: mod.run(mod.parse([str(a) for a in args]))


@pytest.mark.parametrize("args,passes", [
    ((), True),
    (("--kv-len", 1024, "--tile", 128, "--stages", 4, "--heads", 4, "--seed", 3), True),
    (("--o-rescale", "off", "--kv-len", 128, "--tile", 128), True),
    (("--o-rescale", "off", "--kv-len", 256, "--tile", 128), False),
    (("--kv-index", "stage", "--stages", 4, "--tile", 64, "--kv-len", 256), True),   # 4 tiles
    (("--kv-index", "stage", "--stages", 4, "--tile", 64, "--kv-len", 320), False),  # 5 tiles
    (("--scale-domain", "twice", "--kv-len", 64), True),          # one tile: no correction applied
    (("--scale-domain", "twice", "--kv-len", 256), False),
    (("--o-rescale", "off", "--kv-len", 64), True),
    (("--o-rescale", "off", "--kv-len", 96), False),             # a partial second tile suffices
    (("--kv-index", "stage", "--stages", 2, "--kv-len", 128), True),
    (("--kv-index", "stage", "--stages", 2, "--kv-len", 192), False),
    (("--kv-index", "stage", "--stages", 1, "--kv-len", 128), False),  # "always loaded tile 0"
    (("--rowsum-map", "quad", "--kv-len", 64), False),           # wrong even with one tile
    (("--warps", 10, "--mma-warp", "last", "--kv-len", 64), False),
    (("--warps", 12, "--mma-warp", "last"), False),               # MMA warp 10 -> slot 2: warp 2's
    (("--warps", 14, "--mma-warp", "last"), True),                # MMA warp 12 -> slot 4: unused
    (("--seq-q", 256, "--heads", 1, "--head-dim", 32, "--tile", 48, "--kv-len", 200), True),
    (("--logit-bias", 1000.0, "--init-max", "zero"), True),
])
def test_attention_factor_semantics(attention, args, passes):
    m = attention(*args)
    assert att_ok(m) is passes, m
    if not passes:  # wrong settings lose accuracy (10x past the oracle at least) but stay finite
        assert m["nan_count"] == 0 and m["rel_err"] > 1e-3 and m["cos"] < 0.9999, m


def test_attention_two_factor_interaction(attention):
    """warps=10 alone passes, mma_warp=last alone passes, both together fail (finite, wrong)."""
    assert att_ok(attention("--warps", 10, "--mma-warp", "packed"))
    assert att_ok(attention("--warps", 6, "--mma-warp", "last"))
    m = attention("--warps", 10, "--mma-warp", "last")
    assert m["nan_count"] == 0 and m["rel_err"] > 0.1 and m["cos"] < 0.99, m


def test_attention_nan_interaction(attention):
    assert att_ok(attention("--init-max", "zero"))
    assert att_ok(attention("--logit-bias", -1000.0))
    m = attention("--init-max", "zero", "--logit-bias", -1000.0)
    assert m["nan_count"] > 0 and math.isnan(m["rel_err"])
    assert m["ok"] is False and "NaN" in m["error"]


# ---------------------------------------------------------------------------------------------
# crash.py and build.py

def test_crash_in_bounds_is_correct(results):
    m = ok_result(results["crash:in"])
    assert m["rel_err"] < 1e-9 and m["blocks"] == 32


def test_crash_oob_segfaults(results):
    r = results["crash:oob"]
    assert r.rc == -signal.SIGSEGV and r.metrics is None


def test_crash_poisoned_context(results):
    r = results["crash:poison"]
    assert r.rc == 1 and r.metrics is None
    assert "CUDA error: an illegal memory access was encountered" in r.stderr
    assert r.stderr.rstrip().splitlines()[-1] == (
        "RuntimeError: CUDA error: an illegal memory access was encountered")


def test_crash_abort(results):
    r = results["crash:abort"]
    assert r.rc == -signal.SIGABRT and "Assertion" in r.stderr


def test_crash_skip_is_exit_125(results):
    assert results["crash:skip"].rc == 125


@pytest.mark.parametrize("key,rc", [("build:sm90a", 0), ("build:sm100a", 0), ("build:sm80", 1),
                                    ("build:mixed", 1), ("build:smem", 1)])
def test_build_step(results, key, rc):
    r = results[key]
    assert r.rc == rc, r.stderr
    if rc:
        assert "error" in r.stderr and not r.stdout


def test_no_core_files_left():
    assert not list(ROOT.glob("core*")), "a crash case left a core file in the repository root"


# ---------------------------------------------------------------------------------------------
# variants/cpu/*.toml

def test_every_variant_has_an_expectation():
    assert VARIANTS, "no variants found"
    assert {p.stem for p in VARIANTS} == set(EXPECT)
    for path in VARIANTS:
        spec = load(path)
        for f in VARIANTS_EXPECTED[path.stem][2]:
            assert f in spec["description"] and spec["good"][f] != spec["bad"][f]


@pytest.mark.parametrize("path", VARIANTS, ids=lambda p: p.stem)
def test_variant_file_is_wellformed(path):
    spec = load(path)
    assert spec["name"] == path.stem
    assert "culprit" in spec["description"] and "expect:" in spec["description"]
    sub = spec["subject"]
    assert isinstance(sub["command"], list) and all(isinstance(a, str) for a in sub["command"])
    assert sub["command"][0] == "python"
    assert Path(ROOT, sub["command"][1]).is_file()
    good, bad = spec["good"], spec["bad"]
    assert set(good) == set(bad), "good and bad must name the same factors"
    differing = [k for k in good if good[k] != bad[k]]
    assert len(differing) >= 3, differing
    used = set()
    for argv in (sub["command"], sub.get("build", [])):
        for a in argv:
            used |= set(PLACEHOLDER.findall(a))
    for v in sub.get("env", {}).values():
        used |= set(PLACEHOLDER.findall(v))
    assert used <= set(good), f"placeholders naming no factor: {used - set(good)}"
    assert set(good) <= used, f"factors never substituted: {set(good) - used}"
    for name, values in spec.get("factors", {}).items():
        assert name in good and good[name] in values and bad[name] in values
    assert all(isinstance(c, str) for c in spec.get("constraints", []))
    assert satisfies(spec, good) and satisfies(spec, bad)


def assert_fails_as(spec: dict, r: Result, want: str) -> None:
    if want == "HANG":
        assert_hung(r)
    elif want in ("WRONG", "NAN"):
        m = ok_result(r)  # it ran to completion; the metrics are what is wrong
        assert oracle_failures(spec, m), m
        if want == "NAN":
            assert m["nan_count"] > 0 and m["ok"] is False
        else:
            assert m.get("nan_count", 0) == 0
    elif want == "GARBAGE":  # stale values: NaN, inf or huge, a different form in different runs
        m = ok_result(r)
        assert oracle_failures(spec, m), m
    elif want == "SIGSEGV":
        assert r.rc == -signal.SIGSEGV, (r.rc, r.stderr[-1000:])
    elif want == "CUDA":
        assert r.rc == 1 and "an illegal memory access was encountered" in r.stderr
    else:
        pytest.fail(f"unknown expectation {want}")


def assert_passes(spec: dict, r: Result) -> dict:
    m = ok_result(r)
    assert oracle_failures(spec, m) == [], m
    return m


@pytest.mark.parametrize("path", VARIANTS, ids=lambda p: p.stem)
def test_variant_endpoints_and_culprits(results, path):
    spec = load(path)
    want = EXPECT[path.stem]
    if want == "SLOW":
        return check_slow_variant(path)
    for label in probes(path):
        key = f"{path.stem}:{label}"
        if key not in results:
            continue  # attention hybrids: in-process below
        r = results[key]
        if label in ("good", "benign") or label.startswith("pass-"):
            assert_passes(spec, r)
            if label == "good" and not spec["subject"]["command"][1].endswith("attention.py"):
                assert r.wall < 2.0, f"good endpoint took {r.wall:.2f} s"  # < 1 s when idle
        else:
            assert_fails_as(spec, r, want)


def check_slow_variant(path: Path) -> None:
    """Bad (and the culprit alone) correct but slower than slow_factor x good in slow_metric;
    benign differences alone not slower. One retry for a noisy shared machine."""
    spec = load(path)
    key, factor = spec["oracle"]["slow_metric"], spec["oracle"]["slow_factor"]
    configs = probes(path)
    for _attempt in range(2):
        m = {label: assert_passes(spec, run(substitute(spec["subject"]["command"], c)))[key]
             for label, c in configs.items()}
        slow = {label: v > factor * m["good"] for label, v in m.items()}
        if slow == {label: label not in ("good", "benign") for label in m}:
            return
    pytest.fail(f"{key} per configuration: {m} (slow_factor {factor})")


@pytest.mark.parametrize("path", [p for p in VARIANTS if p.stem.startswith("attention-")],
                         ids=lambda p: p.stem)
def test_attention_variant_hybrids(attention, path):
    """Every hybrid of good and bad (and every declared ordinal value) fails exactly when the
    planted culprit rule says so: culprits independent (any one fails) or together (all fail)."""
    spec = load(path)
    _, mode, culprits = VARIANTS_EXPECTED[path.stem]
    good, bad = spec["good"], spec["bad"]
    names = [k for k in good if good[k] != bad[k]]
    choices = [spec.get("factors", {}).get(k, [good[k], bad[k]]) for k in names]
    seen = 0
    for values in itertools.product(*choices):
        config = dict(good, **dict(zip(names, values)))
        if not satisfies(spec, config):
            continue
        flipped = []
        for f in culprits:
            if f in spec.get("factors", {}):
                flipped.append(THRESHOLD_FAILS[config[f]])
            else:
                flipped.append(config[f] == bad[f])
        expect_fail = any(flipped) if mode == "independent" else all(flipped)
        argv = substitute(spec["subject"]["command"], config)[2:]
        m = attention(*argv)
        assert bool(oracle_failures(spec, m)) is expect_fail, (config, m)
        seen += 1
    assert seen >= 2 ** (len(names) - 1)


def test_build_arch_hybrids_do_not_build():
    """build-arch: taking arch from one endpoint and mma from the other fails the build step."""
    spec = load(ROOT / "variants" / "cpu" / "build-arch.toml")
    build = spec["subject"]["build"]
    for arch_from, mma_from in (("good", "bad"), ("bad", "good")):
        config = dict(spec["good"], arch=spec[arch_from]["arch"], mma=spec[mma_from]["mma"])
        r = run(substitute(build, config))
        assert r.rc == 1 and "not supported on .target" in r.stderr
    assert run(substitute(build, dict(spec["good"], arch="sm_80"))).rc == 1
