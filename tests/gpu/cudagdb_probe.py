"""Issue 25 on the GPU: start each hang pair's bad configuration, wait until it hangs after launch,
attach cuda-gdb in batch mode with a few command sets, save the raw output (for the parser's tests)
and the time each attach took.   python3 tests/gpu/cudagdb_probe.py OUTDIR [SPEC ...]"""
import os, signal, subprocess, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bisectk.spec import load_spec  # noqa: E402

SPECS = ["gpu-ws-hang-phase", "gpu-ws-hang-arrive", "gpu-ws-hang-nbar", "gpu-ws-hang-txbytes",
         "gpu-fmha-hang-regs", "gpu-fmha-hang-orderarrive"]
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
names = sys.argv[2:] or SPECS
SCRIPT = Path(__file__).resolve().parents[2] / "bisectk" / "run" / "cudagdb_script.py"
SETS = {"walk": [f"source {SCRIPT}"]}
for name in names:
    spec = load_spec(Path("variants/gpu") / f"{name}.toml")
    cfg = spec.endpoint("bad")
    argv = [sys.executable if a == "python" else a for a in spec.argv(cfg)]
    env = {**os.environ, **spec.environment(cfg), "CUTE_DSL_LINEINFO": "1", "PYTHONUNBUFFERED": "1"}
    log = open(out / f"{name}.subject.log", "w")
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    launched = None
    while time.monotonic() - t0 < 90 and p.poll() is None:
        text = (out / f"{name}.subject.log").read_text(errors="replace")
        if "BISECTK_PHASE launch" in text and launched is None:
            launched = time.monotonic()
        if launched and time.monotonic() - launched > 3:
            break
        time.sleep(0.2)
    print(name, "pid", p.pid, "poll", p.poll(), "launched after", None if launched is None else round(launched - t0, 1), flush=True)
    if p.poll() is None:
        for label, cmds in SETS.items():
            args = ["cuda-gdb", "-p", str(p.pid), "--batch", "-nx"]
            for c in ["set pagination off", "set width 0", *cmds]:
                args += ["-ex", c]
            s = time.monotonic()
            try:
                r = subprocess.run(args, capture_output=True, text=True, timeout=120)
                text = r.stdout + "\n--- stderr ---\n" + r.stderr
            except subprocess.TimeoutExpired as e:
                text = f"TIMEOUT {e}"
            took = time.monotonic() - s
            (out / f"{name}.{label}.txt").write_text(text)
            print(f"  {label}: {took:.1f} s, {len(text)} chars, still alive: {p.poll() is None}", flush=True)
    # the host side too
    s = time.monotonic()
    r = subprocess.run(["py-spy", "dump", "--pid", str(p.pid), "--native"], capture_output=True, text=True, timeout=60) if p.poll() is None and subprocess.run(["which", "py-spy"], capture_output=True).returncode == 0 else None
    if r is not None:
        (out / f"{name}.pyspy.txt").write_text(r.stdout + r.stderr)
        print(f"  py-spy: {time.monotonic()-s:.1f} s", flush=True)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
subprocess.run(["tar", "czf", str(out.parent / (out.name + ".tgz")), "-C", str(out.parent), out.name])
