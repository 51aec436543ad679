"""torch's process-global state, read and put back for a warm worker's probes (run/isolation.py):
the torch side of `isolation.PROBES`, the readers and writers that need more than one call.

Abstractions
------------
denormals / set_denormals -- subnormal floats read as zero and flushed to zero (the CPU's
                               control register, which torch.set_flush_denormal sets).
sdp / set_sdp             -- the attention backends scaled_dot_product_attention may choose from.
fp32_precision / set_fp32_precision -- the precision float32 math may use (`fp32_precision`, torch
                               2.9's API: the root, each backend's, each operation's, which
                               inherit the level above where 'none').
cublas / set_cublas        -- cuBLAS's matmul flags (torch.backends.cuda.matmul: TF32, the fp16 and
                               bf16 reduced-precision reductions with their split-K switch, fp16
                               accumulation), on an object that is no module: a probe gated on a
                               module of its name never read them.
cuda_stream / set_cuda_stream -- the current CUDA device and stream, read only where torch has
                               a CUDA context already (cuda_ready: never initialised here).
torch_rng_same              -- two random states equal.
autocast / set_autocast     -- torch.autocast's state: on or off and the dtype per device type, its
                               cache switch and how deep autocast regions are nested (a run that
                               entered one and never left it: every later run's matmul in bfloat16).
saved_hooks / set_saved_hooks -- the saved-tensor hooks autograd uses, and whether they are allowed.
dual_level / set_dual_level -- the forward-mode AD level entered and not left.
reset_compiled              -- torch.compile's in-memory state (dynamo's caches of compiled frames,
                               its recompile counts and automatic-dynamic shapes, its counters)
                               cleared after a run, as a fresh process starts without them.
"""

from __future__ import annotations

import sys


def _m(name: str):
    return sys.modules[name]


def torch_rng_same(a, b) -> bool:
    return _m("torch").equal(a, b)


# a subnormal double, and the smallest normal one: read from globals, so no constant is folded
_SUBNORMAL, _NORMAL_MIN = 5e-324, 2.2250738585072014e-308


def denormals() -> tuple[bool, bool]:
    """Whether the CPU reads subnormal inputs as zero (DAZ) and flushes subnormal results to zero
    (FTZ): the floating-point control register of this thread (MXCSR on x86), which
    torch.set_flush_denormal(True) sets and no library reads back."""
    return _SUBNORMAL * 1.0 == 0.0, _NORMAL_MIN / 4 == 0.0


def set_denormals(v: tuple[bool, bool]) -> None:
    torch = sys.modules.get("torch")
    if torch is None:       # set by other means (ctypes, a native library): not put back here
        raise RuntimeError("set without torch, which alone can put it back here")
    torch.set_flush_denormal(any(v))


# the attention backends torch.nn.functional.scaled_dot_product_attention may choose from, each a
# (getter, setter) of torch.backends.cuda (CPU runs too: math and flash off leave no backend at all)
_SDP = ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled", "cudnn_sdp_enabled",
        "fp16_bf16_reduction_math_sdp_allowed")
_SDP_SET = ("enable_flash_sdp", "enable_mem_efficient_sdp", "enable_math_sdp", "enable_cudnn_sdp",
            "allow_fp16_bf16_reduction_math_sdp")


def sdp() -> tuple:
    cuda = _m("torch").backends.cuda
    sdp = tuple(getattr(cuda, g)() if hasattr(cuda, g) else None for g in _SDP)
    return (*sdp, _m("torch").backends.mha.get_fastpath_enabled())


def set_sdp(v: tuple) -> None:
    cuda = _m("torch").backends.cuda
    for name, on in zip(_SDP_SET, v):
        if on is not None and hasattr(cuda, name):
            getattr(cuda, name)(on)
    _m("torch").backends.mha.set_fastpath_enabled(v[-1])


# the device types torch.autocast keeps a switch and a dtype for (those this torch knows are read)
_AUTOCAST = ("cpu", "cuda", "xpu", "mps", "hpu", "xla", "mtia")


def autocast() -> tuple:
    t = _m("torch")
    devices = []
    for d in _AUTOCAST:
        try:
            devices.append((d, t.is_autocast_enabled(d), t.get_autocast_dtype(d)))
        except Exception:   # a device type this build does not know
            pass
    t.autocast_decrement_nesting()      # the only reading of the nesting depth: put back at once
    return tuple(devices), t.is_autocast_cache_enabled(), t.autocast_increment_nesting()


def set_autocast(v: tuple) -> None:
    t = _m("torch")
    devices, cache, nesting = v
    for d, on, dtype in devices:
        t.set_autocast_enabled(d, on)
        t.set_autocast_dtype(d, dtype)
    t.set_autocast_cache_enabled(cache)
    t.autocast_decrement_nesting()
    depth = t.autocast_increment_nesting()
    while depth > nesting:
        depth = t.autocast_decrement_nesting()
    while depth < nesting:
        depth = t.autocast_increment_nesting()
    t.clear_autocast_cache()    # the casts a region left entered kept


# where torch keeps an fp32_precision, each level before those that inherit from it
_FP32 = ("backends", "backends.mkldnn", "backends.cudnn", "backends.mkldnn.matmul", "backends.mkldnn.conv",
         "backends.mkldnn.rnn", "backends.cuda.matmul", "backends.cudnn.conv", "backends.cudnn.rnn")


def _fp32_holder(path: str):
    obj = _m("torch")
    for attr in path.split("."):
        obj = getattr(obj, attr)
    return obj


def fp32_precision() -> tuple:
    """(path, fp32_precision) for each level this torch has (none before torch 2.9)."""
    out = []
    for path in _FP32:
        try:
            out.append((path, _fp32_holder(path).fp32_precision))
        except AttributeError:
            pass
    return tuple(out)


def set_fp32_precision(v: tuple) -> None:
    for path, value in v:
        _fp32_holder(path).fp32_precision = value


# the flags of torch.backends.cuda.matmul this torch has; a reduced-precision reduction's split-K
# switch is set with it, as one (allow, split_k) pair
_CUBLAS = ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction",
           "allow_fp16_accumulation")
_SPLIT_K = "_split_k"


def cublas() -> tuple:
    """(flag, value) for each flag of torch.backends.cuda.matmul this torch reads (a reduction's value
    is its (allow, split_k) pair where this torch has the split-K switch)."""
    matmul = _m("torch").backends.cuda.matmul
    out = []
    for name in _CUBLAS:
        try:
            value = getattr(matmul, name)
        except AttributeError:
            continue
        try:
            value = (value, getattr(matmul, name + _SPLIT_K))
        except AttributeError:
            pass
        out.append((name, value))
    return tuple(out)


def set_cublas(v: tuple) -> None:
    """Write back the flags that differ only: setting allow_tf32 sets fp32_precision too (torch 2.9),
    from 'none' to a level, where the run had changed neither."""
    matmul = _m("torch").backends.cuda.matmul
    now = dict(cublas())
    for name, value in v:
        if now.get(name) != value:
            setattr(matmul, name, value)


def cuda_ready() -> bool:
    """Whether torch has a CUDA context to read state from. is_initialized() first: it asks torch
    alone, where is_available() asks the CUDA driver, which initialises it in this process, and a
    process whose driver is initialised cannot fork workers that use CUDA (run/template.py: the
    template's baseline read this, and on an H200 no forked worker ever came up)."""
    t = sys.modules.get("torch")
    return bool(t is not None and t.cuda.is_initialized() and t.cuda.is_available())


def cuda_stream():
    t = _m("torch")
    if not cuda_ready():
        return None
    return (t.cuda.current_device(), t.cuda.current_stream().cuda_stream)


def set_cuda_stream(v) -> None:
    if v is None:
        return
    t = _m("torch")
    t.cuda.set_device(v[0])
    t.cuda.set_stream(t.cuda.default_stream(v[0]))
    if t.cuda.current_stream().cuda_stream != v[1]:
        raise RuntimeError("the current stream is not the default stream")


def saved_hooks() -> tuple:
    """The saved-tensor hooks autograd packs and unpacks with (the top of torch's stack, pushed by
    torch.autograd.graph.saved_tensors_hooks and save_on_cpu), and whether hooks are allowed
    (disable_saved_tensors_hooks) with the message a disabled one raises. A region left entered by
    a run: every later run's backward packed its saved tensors through the run's functions."""
    ag = _m("torch")._C._autograd
    return (ag._top_saved_tensors_default_hooks(False), ag._saved_tensors_hooks_is_enabled(),
            ag._saved_tensors_hooks_get_disabled_error_message())


def set_saved_hooks(v: tuple) -> None:
    top, enabled, message = v
    ag = _m("torch")._C._autograd
    for _ in range(10_000):     # pop what the run pushed, down to what the baseline had on top
        now = ag._top_saved_tensors_default_hooks(False)
        if now == top:
            break
        if now is None:
            raise RuntimeError("the baseline's saved-tensor hooks are gone")
        ag._pop_saved_tensors_default_hooks()
    if enabled:
        ag._saved_tensors_hooks_enable()
    else:
        ag._saved_tensors_hooks_disable(message)


def dual_level() -> int:
    """The forward-mode AD level a run entered (torch.autograd.forward_ad.dual_level) and never
    left: -1 when none. Left entered, a later run's make_dual is of the run's level."""
    return _m("torch").autograd.forward_ad._current_level


def set_dual_level(v: int) -> None:
    fa = _m("torch").autograd.forward_ad
    while fa._current_level > v:
        fa.exit_dual_level(level=fa._current_level)
    if fa._current_level != v:
        raise RuntimeError("the baseline's forward AD level is gone")


def reset_compiled() -> str:
    """Clear what torch.compile keeps in memory (torch._dynamo.reset(), its stats counters) where
    a run loaded dynamo: a later run compiling a function of a kept module would otherwise meet
    this run's graphs (a recompile, dynamic shapes where a fresh process compiles static ones).
    '' when done or nothing to do, else why it failed (the worker cannot serve again)."""
    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is None or not hasattr(dynamo, "reset"):
        return ""
    frames = getattr(sys.modules.get("torch._dynamo.convert_frame"), "FRAME_COUNTER", 0)
    if not frames and not getattr(sys.modules.get("torch._dynamo.utils"), "counters", None):
        return ""    # nothing compiled (dynamo merely loaded: torch.manual_seed loads it)
    try:
        dynamo.reset()
        dynamo.utils.counters.clear()
    except Exception as exc:
        return f"torch.compile's caches (torch._dynamo.reset: {type(exc).__name__}: {exc})"[:300]
    return ""
