"""The runtime context, captured: what to rule out before debugging a kernel.

Abstractions
------------
capture     -- a JSON-ready dict of the context a kernel runs in: GPUs (name, compute capability,
               driver, the driver's CUDA version), the CUDA toolkit (nvcc), torch's own view of
               CUDA (probed in a subprocess, only where a GPU is visible), Python, platform and
               host, versions of the packages that matter for GPU kernels (read from metadata,
               never imported), where key modules would be imported from (a stale checkout or a
               shadowing PYTHONPATH shows up here), the relevant environment variables, and the
               git commit of the working directory.
save / load -- a capture to and from a JSON file; load names the file and what is wrong with it.
diff        -- two captures -> [(dotted key, value in a, value in b)], e.g.
               ("env.CUDA_LAUNCH_BLOCKING", None, "1") or ("gpu.devices.0.name", ...).
as_factors  -- the environment-variable part of a diff as spec factors; factors_toml renders
               them as a snippet for a spec.
gpu_visibility -- the machine's GPU facts that decide whether a kernel can run at all
               (nvidia-smi, /dev/nvidia*, CUDA_VISIBLE_DEVICES, GPUs listed, the driver's CUDA
               version); `gpu_line` words them. The environment diagnosis of unusable endpoints
               (engine/environment.py) names its causes with these, and `capture` reports them
               under "checks" with the extras whose modules cannot be imported.

Environment differences as factors
----------------------------------
A spec runs its subject with `[subject] env`, whose values may be `{factor}` placeholders, so a
difference in environment variables is a set of ordinary factors that bisectk can ablate:

    [subject]
    env = {CUDA_LAUNCH_BLOCKING = "{cuda_launch_blocking}"}
    [good]
    cuda_launch_blocking = ""
    [bad]
    cuda_launch_blocking = "1"

A variable set on one side only is "" (set, empty) on the other: a spec cannot unset a variable.
Where that changes its meaning it is no factor, and the snippet says why in a comment: a variable
set empty on one side and unset on the other (as factors, both sides would be ""), and one whose
empty value is not its unset one (CUDA_VISIBLE_DEVICES="" hides every GPU; unset shows them all).
Redacted values (names holding TOKEN, SECRET, KEY, ...) are stored as a short hash, so they
still show up in a diff, but they cannot become factors.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import json
import os
import platform
import re
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any

from bisectk.errors import MODULE_EXTRAS, install_hint
from bisectk.run.process import run_tool
from bisectk.spaces.commits import SpaceError

SCHEMA = 1
ENV_PREFIXES = ("CUDA_", "CUTE_DSL_", "CUTLASS_", "TORCH_", "PYTORCH_", "NCCL_", "TRITON_",
                "NVIDIA_", "CUBLAS_", "CUDNN_", "NVCC_", "TVM_", "XLA_", "JAX_", "CUPY_")
ENV_NAMES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "OMP_NUM_THREADS")
PACKAGES = frozenset({"torch", "triton", "pytorch-triton", "numpy", "jax", "jaxlib", "cupy",
                      "nvidia-cutlass", "cutlass", "apache-tvm", "tvm", "mlc-ai", "tilelang",
                      "flash-attn", "flashinfer-python", "tensorrt", "bisectk"})
PACKAGE_PREFIXES = ("nvidia-", "cuda-", "cupy-cuda", "jax-cuda")   # CUDA wheels, bindings, plugins
MODULES = ("torch", "triton", "cutlass", "tvm", "jax", "cupy", "numpy", "cuda", "bisectk")
RUN_EXTRAS = ("kernels", "ray")   # the extras that change what bisectk can run (capture's checks)
_SECRET = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|(^|_)KEY($|_)", re.I)
_TORCH_PROBE = """
import json, torch
d = {"version": torch.__version__, "cuda": torch.version.cuda, "available": torch.cuda.is_available()}
try:
    d["cudnn"] = torch.backends.cudnn.version()
except Exception:
    pass
if d["available"]:
    d["devices"] = [{"name": torch.cuda.get_device_name(i),
                     "capability": ".".join(map(str, torch.cuda.get_device_capability(i)))}
                    for i in range(torch.cuda.device_count())]
print(json.dumps(d))
"""


class EnvError(SpaceError):
    """A capture file that cannot be read."""


def _run(argv: list[str], timeout: float) -> tuple[str | None, str | None]:
    """(stdout, None) or (None, why it failed), never raising. A probe is one of bisectk's own
    short tools (run_tool: its own process group, ended with its children if it outlives
    `timeout`), not a run: no supervisor, no spare taken from the runs beside it."""
    name = Path(argv[0]).name
    try:
        p = run_tool(argv, timeout=timeout)
    except (OSError, ValueError) as exc:
        return None, f"{name}: {getattr(exc, 'strerror', None) or exc}"
    if p.returncode == -9 and p.stderr.endswith(f"timed out after {timeout:g} s"):
        return None, f"{name}: no answer in {timeout:g} s"
    if p.returncode:
        tail = (p.stderr or p.stdout).strip().splitlines()
        return None, f"{name}: exit {p.returncode}" + (f": {tail[-1]}" if tail else "")
    return p.stdout, None


def _gpu(timeout: float) -> dict[str, Any]:
    smi = shutil.which("nvidia-smi")
    gpu: dict[str, Any] = {"count": 0, "devices": []}
    if smi is None:
        gpu["error"] = "nvidia-smi not found"
    else:
        out, err = _run([smi, "--query-gpu=name,compute_cap,driver_version",
                         "--format=csv,noheader"], timeout)
        if err:
            gpu["error"] = err
        for line in (out or "").strip().splitlines():
            name, cap, driver = ([*map(str.strip, line.rsplit(",", 2))] + ["", ""])[:3]
            gpu["devices"].append({"name": name, "compute_capability": cap, "driver": driver})
        gpu["count"] = len(gpu["devices"])
        if gpu["devices"]:
            gpu["driver"] = gpu["devices"][0]["driver"]
    gpu["cuda_driver"] = _driver_cuda()
    return gpu


def gpu_visibility(timeout: float = 5.0, gpu: dict[str, Any] | None = None) -> dict[str, Any]:
    """Whether a kernel can see a GPU here, as facts (see the module docstring)."""
    gpu = _gpu(timeout) if gpu is None else gpu
    return {"nvidia_smi": shutil.which("nvidia-smi"),
            "device_files": sorted(str(p) for p in Path("/dev").glob("nvidia*")),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "gpus": gpu.get("count", 0), "driver_cuda": gpu.get("cuda_driver")}


def gpu_line(facts: dict[str, Any]) -> str:
    smi = facts.get("nvidia_smi") or "not found"
    devices = ", ".join(facts.get("device_files") or ()) or "none"
    cvd = facts.get("cuda_visible_devices")
    return (f"nvidia-smi: {smi}; /dev/nvidia*: {devices}; CUDA_VISIBLE_DEVICES: "
            f"{'unset' if cvd is None else repr(cvd)}; GPUs listed: {facts.get('gpus', 0)}"
            + (f"; the driver supports CUDA {facts['driver_cuda']}" if facts.get("driver_cuda") else ""))


def _checks(gpu: dict[str, Any], modules: dict[str, str]) -> dict[str, Any]:
    """What the environment diagnosis would name, before anything runs."""
    facts = gpu_visibility(gpu=gpu)
    missing = {m: install_hint(m) for m, extra in MODULE_EXTRAS.items()
               if extra in RUN_EXTRAS and m not in modules and not _findable(m)}
    return {"gpu_visible": bool(facts["gpus"]) and facts["cuda_visible_devices"] not in ("", "-1"),
            "gpu": gpu_line(facts), "missing_modules": missing}


def _driver_cuda() -> str | None:
    """The CUDA version the driver supports, from libcuda without initialising a context."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        v = ctypes.c_int()
        if lib.cuDriverGetVersion(ctypes.byref(v)) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return f"{v.value // 1000}.{v.value % 1000 // 10}"


def _toolkit(timeout: float) -> dict[str, Any] | None:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    nvcc = shutil.which("nvcc")
    if nvcc is None and home and Path(home, "bin", "nvcc").exists():
        nvcc = str(Path(home, "bin", "nvcc"))
    if nvcc is None:
        return None
    out, err = _run([nvcc, "--version"], timeout)
    m = re.search(r"release [\d.]+, V([\d.]+)", out or "")
    return {"nvcc": nvcc, "version": m.group(1) if m else None, **({"error": err} if err else {})}


def torch_probe(python: str = sys.executable, timeout: float = 30.0) -> dict[str, Any]:
    """torch's view of CUDA, from a fresh interpreter: importing torch takes seconds, and a
    broken CUDA setup must not take this process down with it."""
    out, err = _run([python, "-c", _TORCH_PROBE], timeout)
    if err:
        return {"error": err}
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"unexpected output: {out.strip()[-200:]!r}"}


def _packages() -> dict[str, str]:
    """The versions of the installed packages that matter for kernels. Only the header of their
    metadata is read: parsing every distribution's whole METADATA (long descriptions included)
    cost ~0.3 s of CPU per command in an environment of 160 packages, on the critical path of a
    2-core machine. The distributions are found as importlib.metadata finds them (the
    `NAME-VERSION.dist-info` and `.egg-info` folders of sys.path, in its order; a later one of a
    name wins, as there), without importing it: it and the email package it loads cost ~20 ms."""
    found = {}
    for folder in _distributions():
        if not _wanted(folder.name.split("-", 1)[0].split(".", 1)[0]):
            continue            # skipped unread by its folder's name
        head = _metadata_head(folder)
        name = head.get("name", "").lower().replace("_", "-")
        if name and _wanted(name):
            found[name] = head.get("version", "?")
    return dict(sorted(found.items()))


def _distributions():
    """The metadata folders of the installed distributions, in sys.path's order (an `.egg-info`
    file, not a folder, reads as no metadata in `_metadata_head`, as it did through importlib.metadata)."""
    for entry in sys.path:
        where = Path(entry or ".")
        try:
            names = os.listdir(where)
        except OSError:        # gone, a file (a zip on the path), unreadable
            continue
        for name in names:
            if name.lower().endswith((".dist-info", ".egg-info")):
                yield where / name


def _wanted(name: str) -> bool:
    """A package that matters, by its name as metadata or its dist-info folder writes it."""
    name = name.lower().replace("_", "-")
    return name in PACKAGES or name.startswith(PACKAGE_PREFIXES)


def _metadata_head(folder: Path) -> dict[str, str]:
    """Name and Version from the header of a distribution's metadata (what precedes the body)."""
    text = _read(folder / "METADATA") or _read(folder / "PKG-INFO")
    head = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(":")
        if sep and key.lower() in ("name", "version") and key.lower() not in head:
            head[key.lower()] = value.strip()
    return head


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _modules() -> dict[str, str]:
    """Where `import NAME` would load from, found without importing anything."""
    found = {}
    for name in MODULES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None:
            found[name] = spec.origin or next(iter(spec.submodule_search_locations or []), "?")
    return found


def _findable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _redact(name: str, value: str) -> str:
    if _SECRET.search(name):
        return "<redacted " + hashlib.sha256(value.encode()).hexdigest()[:8] + ">"
    return value


def _environment(environ: dict[str, str]) -> dict[str, str]:
    return {k: _redact(k, v) for k, v in sorted(environ.items())
            if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}


def _git(cwd: Path, timeout: float) -> dict[str, Any] | None:
    if shutil.which("git") is None:
        return None
    sha, err = _run(["git", "-C", str(cwd), "rev-parse", "HEAD"], timeout)
    if err:
        return None
    # --no-optional-locks: status must not refresh (write) the user's index
    status, _ = _run(["git", "--no-optional-locks", "-C", str(cwd), "status", "--porcelain",
                      "--untracked-files=no"], timeout)
    return {"sha": sha.strip(), "dirty": bool(status.strip()) if status is not None else None}


def _snapshot_tools() -> dict[str, str]:
    """The readers a hang snapshot uses here (py-spy, gdb, cuda-gdb), or why one is missing."""
    from bisectk.run.snapshot import tools
    return tools()


def capture(*, torch: bool | None = None, cwd: str | Path | None = None,
            timeout: float = 5.0) -> dict[str, Any]:
    """The runtime context now. `torch`: probe torch's CUDA view in a subprocess (True), never
    (False), or when torch is installed and a GPU is visible (None: a GPU-less machine then
    pays nothing for it). Each external command gets `timeout` seconds."""
    gpu = _gpu(timeout)
    packages = _packages()
    data: dict[str, Any] = {
        "bisectk_env": SCHEMA,
        "captured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": {"hostname": socket.gethostname(), "platform": platform.platform(),
                 "machine": platform.machine(), "cpus": os.cpu_count()},
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation(),
                   "executable": sys.executable, "prefix": sys.prefix},
        "gpu": gpu,
        "cuda_toolkit": _toolkit(timeout),
        "packages": packages,
        "modules": (modules := _modules()),
        "checks": _checks(gpu, modules),
        "snapshot_tools": _snapshot_tools(),
        "env": _environment(dict(os.environ)),
        "git": _git(Path(cwd or Path.cwd()), timeout),
    }
    visible = gpu["count"] > 0 or Path("/dev/nvidia0").exists()
    if torch or (torch is None and "torch" in packages and visible):
        data["torch"] = torch_probe(timeout=max(timeout, 30.0))
    return data


def save(path: str | Path, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write `data` (default: a fresh capture) as JSON; returns what was written. EnvError, in
    one line, when the file cannot be written (a directory, a file where a folder should be)."""
    data = capture() if data is None else data
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    except OSError as exc:
        raise EnvError(f"{path}: cannot be written ({exc.strerror or exc})") from None
    return data


def load(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise EnvError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EnvError(f"{path}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise EnvError(f"{path}: not JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise EnvError(f"{path}: not an environment capture (JSON nested too deeply to read)") from None
    except ValueError as exc:   # e.g. an integer of more digits than Python converts
        raise EnvError(f"{path}: not JSON ({exc})"[:300]) from None
    if not isinstance(data, dict) or "bisectk_env" not in data:
        raise EnvError(f"{path}: not an environment capture (no 'bisectk_env' key; "
                       "make one with `bisectk env --save FILE`)")
    env = data.get("env", {})
    if not isinstance(env, dict):
        raise EnvError(f"{path}: 'env' is a JSON {_kind(env)}, not an object of variables (NAME: \"value\")")
    for name, value in env.items():
        if value is not None and not isinstance(value, str):   # a variable's value is text, or unset
            raise EnvError(f"{path}: variable {name!r} in 'env' is a JSON {_kind(value)}, not a string: "
                           "a variable's value is text")
    return data


def _kind(value: Any) -> str:
    return {dict: "object", list: "array", bool: "boolean", int: "number", float: "number"}.get(type(value), "value")


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> dict[str, Any]:
    """Leaves as dotted keys; a loop over a stack, not recursion, so any JSON that loads flattens
    (a hand-edited capture may nest deeper than Python's recursion limit)."""
    stack = [(prefix, value)]
    while stack:
        key, node = stack.pop()
        if isinstance(node, dict) and node:
            stack.extend(reversed([(f"{key}.{k}" if key else str(k), v) for k, v in node.items()]))
        elif isinstance(node, list) and node:
            stack.extend(reversed([(f"{key}.{i}", v) for i, v in enumerate(node)]))
        else:
            out[key] = node
    return out


def diff(a: dict[str, Any], b: dict[str, Any],
         ignore: tuple[str, ...] = ("captured_at",)) -> list[tuple[str, Any, Any]]:
    """(dotted key, a's value, b's value) for every leaf that differs; None where one side lacks
    it. Keys under an `ignore` prefix are skipped (the capture time always differs)."""
    fa, fb = _flatten(a, "", {}), _flatten(b, "", {})

    def shadowed(k: str, other: dict) -> bool:
        # an empty table on one side is not a difference of its own when the other side has
        # entries under it: those entries are listed one by one
        return any(o.startswith(k + ".") for o in other)
    return [(k, fa.get(k), fb.get(k)) for k in sorted(fa.keys() | fb.keys())
            if fa.get(k) != fb.get(k) and not any(k == p or k.startswith(p + ".") for p in ignore)
            and not (k in fa and fa[k] in ({}, []) and shadowed(k, fb))
            and not (k in fb and fb[k] in ({}, []) and shadowed(k, fa))]


def cells(key: str, a: Any, b: Any) -> tuple[str, str]:
    """A difference's two values as table text: a value one side lacks is `(unset)` (a variable)
    or `(absent)`, a value set empty is `""`; where that text would show two different values
    alike (the text "None" and no value, 2 and "2"), both are written as JSON."""
    lacking = "(unset)" if key.startswith("env.") else "(absent)"

    def text(v: Any) -> str:
        return lacking if v is None else '""' if v == "" else str(v)

    def exact(v: Any) -> str:
        return lacking if v is None else json.dumps(v, ensure_ascii=False)
    ta, tb = text(a), text(b)
    return (exact(a), exact(b)) if ta == tb else (ta, tb)


def factor_name(var: str) -> str:
    """An environment variable's name as a factor name: lower case, [a-z0-9_] only."""
    name = re.sub(r"[^a-z0-9_]", "_", var.lower())
    return name if name and not name[0].isdigit() else "_" + name


# variables whose empty value means something else than unset: "" as a stand-in would change the run
EMPTY_IS_NOT_UNSET = {
    "CUDA_VISIBLE_DEVICES": 'hides every GPU, where unset shows them all: to make it a factor, give that '
                            'side the devices it saw ("0,1" for two GPUs)',
    "NVIDIA_VISIBLE_DEVICES": 'exposes no GPU to a container, where unset leaves the runtime\'s default: to '
                              'make it a factor, give that side the value the runtime used ("all")'}


def _not_factor(var: str, a: Any, b: Any) -> str | None:
    """Why a differing variable cannot be a factor (a spec cannot unset a variable, nor set a
    value the capture does not hold), or None."""
    if any(isinstance(v, str) and v.startswith("<redacted ") for v in (a, b)):
        return f"{var} is redacted in the captures (its name reads as a secret's): set its values by hand"
    if (a is None) == (b is None):
        return None
    if (a if b is None else b) == "":
        return f"{var} is set empty on one side and unset on the other: as factors both would be \"\""
    if var in EMPTY_IS_NOT_UNSET:
        return f"{var} is unset on one side, and \"\" {EMPTY_IS_NOT_UNSET[var]}"
    return None


def _env_factors(differences: list[tuple[str, Any, Any]]) -> list[tuple[str, str, str, str]]:
    """(factor, variable, good value, bad value) per differing variable, names made unique."""
    out, taken = [], set()
    for key, a, b in differences:
        var = key[len("env."):] if key.startswith("env.") else None
        if not var or _not_factor(var, a, b):
            continue
        name, k = factor_name(var), 2
        while name in taken:
            name, k = f"{factor_name(var)}_{k}", k + 1
        taken.add(name)
        out.append((name, var, "" if a is None else str(a), "" if b is None else str(b)))
    return out


def as_factors(differences: list[tuple[str, Any, Any]]) -> dict[str, tuple[str, str]]:
    """Factor name -> (good value, bad value) for each differing environment variable in a
    `diff(good_capture, bad_capture)`; other differences (GPU, packages) are not factors."""
    return {name: (good, bad) for name, _, good, bad in _env_factors(differences)}


def _toml_str(s: str) -> str:
    def esc(ch: str) -> str:
        if ch in '"\\':
            return "\\" + ch
        if ch in "\n\t\r":
            return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch]
        return f"\\u{ord(ch):04X}" if ord(ch) < 0x20 or ord(ch) == 0x7F else ch
    return '"' + "".join(map(esc, s)) + '"'


def _toml_key(s: str) -> str:
    return s if re.fullmatch(r"[A-Za-z0-9_-]+", s) else _toml_str(s)


def factors_toml(differences: list[tuple[str, Any, Any]]) -> str:
    """A spec snippet taking the environment differences as factors (merge its tables into
    the spec's own [subject], [good] and [bad])."""
    rows = _env_factors(differences)
    why = [w for k, a, b in differences if k.startswith("env.") and (w := _not_factor(k[len("env."):], a, b))]
    notes = "".join(f"# not a factor: {w}\n" for w in why)
    if not rows:
        return notes or "# no environment-variable differences\n"
    env = ", ".join(f'{_toml_key(var)} = "{{{name}}}"' for name, var, _, _ in rows)
    good = "".join(f"{name} = {_toml_str(g)}\n" for name, _, g, _ in rows)
    bad = "".join(f"{name} = {_toml_str(b)}\n" for name, _, _, b in rows)
    return f"{notes}[subject]\nenv = {{{env}}}\n\n[good]\n{good}\n[bad]\n{bad}"
