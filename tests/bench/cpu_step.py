#!/usr/bin/env python3
"""CPU training-step benchmark: Shardlab vs PyTorch vs JAX/Flax on deep-mlp-small.

deep-mlp-small (projects/deep-mlp-small.shardlab.json, seed 003's MLP made small):
    x = ones (512, 1024) float32, 8 x (Dense(2048) -> relu), Dense(10),
    loss = mean((pred - 1)^2) against ones (512, 10), Adam(lr=1e-4).

Each peer runs in its own fresh child process, pinned to the same T cores and told to use T threads;
its peak RSS is that child's ru_maxrss from os.wait4. Step time is the median over the timed steps
after the warm-up steps; the peers run in turns for --rounds rounds (3), and each one's step is the
median of its rounds', so that a slow spell of the machine does not decide the comparison. The Eigen GEMM-peak binary gives the time one step's matmul FLOPs would
take at Eigen's best row-major float GEMM rate on the model's largest layer.

--dtype bf16 (or bfloat16) runs every peer in mixed precision: parameters and Adam state stay float32,
activations and matmul inputs are bfloat16, the loss is float32 (Shardlab: `train --dtype bfloat16`;
Flax: Dense(dtype=bfloat16, param_dtype=float32); PyTorch: torch.autocast("cpu", dtype=bfloat16)).

This is not a test; run it by hand after building (see tests/bench/README.md):
    cmake -S . -B build && cmake --build build -j
    python3 tests/bench/cpu_step.py [--build build] [--threads T] [--steps 5] [--warmup 2] [--rounds 3] [--json out.json]
    python3 tests/bench/cpu_step.py --threads T --dtype bf16
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_PROJECT = "projects/deep-mlp-small.shardlab.json"

# The model; the peers below build exactly this. Keep in step with the project file.
BATCH, IN_FEATURES, HIDDEN, DEPTH, OUT_FEATURES = 512, 1024, 2048, 8, 10
LR = 1e-4

# --dtype: the compute dtype (activations, matmul inputs). Parameters and optimizer state are float32
# in both; the loss is computed in float32.
DTYPE_CHOICES = {"float32": "float32", "bf16": "bfloat16", "bfloat16": "bfloat16"}


def precision_label(dtype):
    """What ran, as Shardlab's train log words it for mixed precision: "bfloat16 compute, float32 parameters"."""
    return f"{dtype} compute, float32 parameters"


def layer_sizes():
    dims = [IN_FEATURES] + [HIDDEN] * DEPTH + [OUT_FEATURES]
    return list(zip(dims[:-1], dims[1:]))


def step_matmul_flops():
    """Matmul FLOPs of one training step: forward 2*B*in*out per Dense, forward+backward = 3x forward."""
    forward = sum(2 * BATCH * i * o for i, o in layer_sizes())
    return 3 * forward


def param_count():
    return sum(i * o + o for i, o in layer_sizes())


MIB = 1024 * 1024


# ==============================================================================================
# Workers: run as `cpu_step.py --worker torch|jax ...` in a fresh process. The parent pins the
# process to T cores (sched_setaffinity) before exec, so thread pools sized from the affinity mask
# (XLA's) see T cores. Each prints one JSON line prefixed with RESULT: on stdout.
# ==============================================================================================
def _vm_rss_mib():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _timed_loop(step, total, warmup):
    times, losses = [], []
    cpu0 = wall0 = None
    for i in range(total):
        if i == warmup:
            t = os.times()
            cpu0, wall0 = t.user + t.system, time.perf_counter()
        t0 = time.perf_counter()
        loss = step()
        times.append(time.perf_counter() - t0)
        losses.append(loss)
    t = os.times()
    busy = (t.user + t.system - cpu0) / (time.perf_counter() - wall0) if cpu0 is not None else None
    return times, losses, busy


def worker_torch(threads, steps, warmup, dtype="float32"):
    import torch

    torch.set_num_threads(threads)
    rss_import = _vm_rss_mib()
    layers = []
    for i, o in layer_sizes()[:-1]:
        layers += [torch.nn.Linear(i, o), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(*layer_sizes()[-1]))
    model = torch.nn.Sequential(*layers)  # torch default init; irrelevant for timing
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    x = torch.ones(BATCH, IN_FEATURES)
    y = torch.ones(BATCH, OUT_FEATURES)
    bf16 = dtype == "bfloat16"
    seen = {}

    def step():
        opt.zero_grad()
        # Mixed precision as the PyTorch AMP docs do it: forward and loss under autocast (the loss on
        # float32 predictions), backward and the optimizer step outside it. Disabled for float32.
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            pred = model(x)
            loss = torch.mean((pred.float() - y) ** 2)
        loss.backward()
        opt.step()
        seen.setdefault("pred", str(pred.dtype).replace("torch.", ""))
        seen.setdefault("loss", str(loss.dtype).replace("torch.", ""))
        return float(loss.detach())

    times, losses, busy = _timed_loop(step, steps + warmup, warmup)
    params = sorted({str(p.dtype).replace("torch.", "") for p in model.parameters()})
    return {
        "version": torch.__version__,
        "dtype": dtype,
        "precision": (f"torch.autocast('cpu', dtype=bfloat16)" if bf16 else "float32, no autocast")
                     + f": last Linear's output {seen.get('pred')}, loss {seen.get('loss')}, parameters {', '.join(params)}",
        "threads_requested": threads,
        "threads_used": torch.get_num_threads(),
        "threading": f"torch.set_num_threads({threads}); process pinned to {len(os.sched_getaffinity(0))} cores",
        "step_times_s": times,
        "losses": losses,
        "busy_cores": busy,
        "rss_after_import_mib": rss_import,
    }


def flax_deep_mlp(dtype=None):
    """The model as a Flax module (spmd_overhead.py uses it too). dtype: every Dense's compute dtype
    (None: Flax's default, float32 here; jnp.bfloat16 for mixed precision); parameters are float32."""
    import flax.linen as nn
    import jax.numpy as jnp

    class DeepMLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(DEPTH):
                x = nn.relu(nn.Dense(HIDDEN, dtype=dtype, param_dtype=jnp.float32)(x))
            return nn.Dense(OUT_FEATURES, dtype=dtype, param_dtype=jnp.float32)(x)

    return DeepMLP()


def jax_train_step(model):
    """value_and_grad of the MSE loss and an Adam update, as a function of (state, x, y) to jit."""
    import jax
    import jax.numpy as jnp

    def train_step(state, x, y):
        def loss_fn(p):
            pred = model.apply({"params": p}, x).astype(jnp.float32)  # bf16 compute: the loss is float32
            return jnp.mean((pred - y) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss

    return train_step


def jax_stepper(step_fn, state, x, y):
    """One timed step per call: runs the jitted step to completion and keeps the new state."""
    import jax

    box = {"state": state}

    def step():
        new_state, loss = step_fn(box["state"], x, y)
        jax.block_until_ready((new_state, loss))
        box["state"] = new_state
        return float(loss)

    return step


def worker_jax(threads, steps, warmup, dtype="float32"):
    import jax
    import jax.numpy as jnp
    import flax
    import flax.linen as nn
    import optax
    from flax.training import train_state

    rss_import = _vm_rss_mib()
    model = flax_deep_mlp(jnp.bfloat16 if dtype == "bfloat16" else None)
    x = jnp.ones((BATCH, IN_FEATURES), jnp.float32)  # float32; a bfloat16 Dense casts it itself
    y = jnp.ones((BATCH, OUT_FEATURES), jnp.float32)
    params = model.init(jax.random.PRNGKey(0), x)["params"]
    out = jax.eval_shape(lambda p: model.apply({"params": p}, x), params)  # no compute: just the dtype
    param_dtypes = sorted({str(l.dtype) for l in jax.tree_util.tree_leaves(params)})
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(LR))

    step = jax_stepper(jax.jit(jax_train_step(model), donate_argnums=0), state, x, y)  # donated: updated in place
    times, losses, busy = _timed_loop(step, steps + warmup, warmup)
    return {
        "version": f"jax {jax.__version__}, flax {flax.__version__}, optax {optax.__version__}",
        "dtype": dtype,
        "precision": (f"nn.Dense(dtype=bfloat16, param_dtype=float32)" if dtype == "bfloat16" else "nn.Dense float32")
                     + f": model output {out.dtype}" + (" (cast to float32 for the loss)" if out.dtype != jnp.float32 else "")
                     + f", parameters {', '.join(param_dtypes)}",
        "threads_requested": threads,
        "threads_used": len(os.sched_getaffinity(0)),
        "threading": (f"process pinned to {len(os.sched_getaffinity(0))} cores with sched_setaffinity (= taskset); "
                      f"XLA sizes its intra-op pool from the affinity mask. "
                      f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}"),
        "backend": jax.default_backend(),
        "step_times_s": times,
        "losses": losses,
        "busy_cores": busy,
        "rss_after_import_mib": rss_import,
    }


def run_worker(args):
    fn = {"torch": worker_torch, "jax": worker_jax}[args.worker]
    result = fn(args.threads, args.steps, args.warmup, args.dtype)
    print("RESULT:" + json.dumps(result), flush=True)
    return 0


# ==============================================================================================
# Parent side.
# ==============================================================================================
def pinned_cores(threads):
    """The first `threads` cores this process may run on, or None if there are fewer than that."""
    avail = sorted(os.sched_getaffinity(0))
    if threads > len(avail):
        return None
    return set(avail[:threads])


def run_child(cmd, env, cores, timeout_s, stdout_path, stderr_path):
    """Run cmd in a fresh child; return (exit code or None on timeout, peak RSS MiB, wall s, cpu s)."""
    def preexec():
        if cores:
            os.sched_setaffinity(0, cores)

    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, preexec_fn=preexec, cwd=REPO)
        deadline = t0 + timeout_s
        timed_out = False
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            if time.perf_counter() > deadline and not timed_out:
                timed_out = True
                proc.send_signal(signal.SIGKILL)
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code  # we reaped it ourselves; keep Popen from waiting again
    # Linux reports ru_maxrss in KiB.
    return (None if timed_out else code), ru.ru_maxrss / 1024, wall, ru.ru_utime + ru.ru_stime


def _tail(path, n=15):
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join("    " + l for l in lines[-n:])


def machine_busy_fraction(seconds=1.0):
    """Fraction of all CPUs busy over `seconds` (from /proc/stat), or None where unavailable."""
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return v[3] + v[4], sum(v)  # idle + iowait, total
    try:
        i0, t0 = snap()
        time.sleep(seconds)
        i1, t1 = snap()
    except (OSError, ValueError, IndexError):
        return None
    return 1 - (i1 - i0) / (t1 - t0) if t1 > t0 else None


def warn_if_busy(name):
    busy = machine_busy_fraction()
    if busy is not None and busy > 0.10:
        print(f"[{name}] warning: the machine is {busy:.0%} busy before this peer starts; other processes "
              f"will slow it down", flush=True)
    return busy


def child_env(threads):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(threads)
    env["MKL_NUM_THREADS"] = str(threads)
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    return env


def median_after_warmup(times, warmup):
    timed = times[warmup:]
    return statistics.median(timed) if timed else None


def bench_python_peer(name, args, cores, tmp):
    modules = {"torch": ["torch"], "jax": ["jax", "flax", "optax"]}[name]
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        return {"peer": name, "skipped": f"not installed: {', '.join(missing)} (pip install -r tests/bench/requirements.txt)"}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--threads", str(args.threads),
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--dtype", args.dtype]
    return run_peer_process(name, cmd, peer_env(name, args.threads), cores, args, tmp)


def peer_env(name, threads):
    """A Python peer's child environment: T threads; JAX on the CPU with threaded Eigen kernels."""
    env = child_env(threads)
    if name == "jax":
        env["JAX_PLATFORMS"] = "cpu"
        # xla_cpu_multi_thread_eigen is XLA's switch for threaded Eigen kernels; XLA has no flag for the
        # pool size (an "intra_op_parallelism_threads=T" entry is silently ignored, a "--intra_op..." one
        # is fatal), so the thread count comes from the affinity mask set in run_child.
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=true").strip()
    return env


def run_peer_process(name, cmd, env, cores, args, tmp):
    """Runs a peer's worker process pinned to `cores` and reads its RESULT line, adding its peak RSS,
    wall and CPU time and the median step after the warm-up."""
    out, err = tmp / f"{name}.out", tmp / f"{name}.err"
    busy_before = warn_if_busy(name)
    print(f"[{name}] running in a fresh process ...", flush=True)
    code, rss, wall, cpu = run_child(cmd, env, cores, args.timeout, out, err)
    if code != 0:
        why = "timed out" if code is None else f"exit code {code}"
        return {"peer": name, "error": f"{why}\n{_tail(err)}"}
    result = None
    for line in out.read_text(errors="replace").splitlines():
        if line.startswith("RESULT:"):
            result = json.loads(line[len("RESULT:"):])
    if result is None:
        return {"peer": name, "error": f"no RESULT line\n{_tail(err)}"}
    result.update(peer=name, peak_rss_mib=rss, process_wall_s=wall, process_cpu_s=cpu, machine_busy_before=busy_before,
                  median_step_s=median_after_warmup(result["step_times_s"], args.warmup))
    return result


def _parse_json_loose(text):
    """Parse the whole text as JSON, else the last line that parses as a JSON object."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def precision_args(dtype):
    """The CLI flags that select `dtype` compute with float32 parameters (for `check` and `train`)."""
    return ["--dtype", dtype, "--param-dtype", "float32"]


def shardlab_check(cli, project, dtype="float32", info=None):
    """Run `shardlab-cli check PROJECT --json --dtype DTYPE --param-dtype float32`; return (predicted total
    bytes or None, notes). If `info` is a dict, the JSON's "precision" object is stored in info["precision"]
    and notes say where it differs from `dtype` compute, float32 parameters, highest matmul precision."""
    notes = []
    try:
        cp = subprocess.run([str(cli), "check", str(project), "--json", *precision_args(dtype)], capture_output=True,
                            text=True, timeout=300, cwd=REPO)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, [f"`check --json` failed to run: {e}"]
    if cp.returncode != 0:
        notes.append(f"`check --json` exited {cp.returncode}: {cp.stderr.strip()[-300:]}")
    doc = _parse_json_loose(cp.stdout)
    if not isinstance(doc, dict):
        notes.append("`check --json` printed no JSON object")
        return None, notes
    prec = doc.get("precision")
    if info is not None:
        info["precision"] = prec
    if not isinstance(prec, dict):
        notes.append(f"`check --json` has no \"precision\" object (top-level keys: {sorted(doc)})")
    else:
        want = {"dtype": dtype, "param_dtype": "float32", "matmul_precision": "highest"}
        off = [f"{k} {prec.get(k)!r} (expected {v!r})" for k, v in want.items() if prec.get(k) != v]
        if off:
            notes.append("`check --json` precision differs: " + ", ".join(off))
    mem = doc.get("memory")
    if not isinstance(mem, dict):
        notes.append(f"`check --json` has no \"memory\" object (top-level keys: {sorted(doc)})")
        return None, notes
    total = mem.get("total_bytes")
    if not isinstance(total, (int, float)):
        notes.append(f"`check --json` memory has no numeric \"total_bytes\" (memory keys: {sorted(mem)})")
        return None, notes
    return int(total), notes


def parse_shardlab_log(path, warmup):
    """Read the --log JSONL; return (dict of findings, notes). Tolerant of junk and missing fields."""
    notes, steps, bad, start = [], [], 0, None
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as e:
        return {}, [f"log {path} not readable: {e}"]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(obj, dict) and obj.get("event") == "step":
            steps.append(obj)
        elif isinstance(obj, dict) and obj.get("event") == "start" and start is None:
            start = obj
    if bad:
        notes.append(f"{bad} log line(s) were not JSON")
    extra = {"precision": start["precision"]} if start and "precision" in start else {}
    if not steps:
        notes.append('log has no {"event":"step"} lines')
        return extra, notes
    if all(isinstance(s.get("step"), (int, float)) for s in steps):
        steps.sort(key=lambda s: s["step"])
    else:
        notes.append('some step lines lack "step"; using file order')
    times = [s.get("step_time_s") for s in steps]
    if any(not isinstance(t, (int, float)) for t in times):
        notes.append(f'{sum(not isinstance(t, (int, float)) for t in times)} step line(s) lack a numeric "step_time_s"')
    times = [float(t) if isinstance(t, (int, float)) else None for t in times]
    timed = [t for t in times[warmup:] if t is not None]
    losses = [s.get("loss") for s in steps]
    eps = [s.get("examples_per_s") for s in steps[warmup:] if isinstance(s.get("examples_per_s"), (int, float))]
    # Busy cores over the timed steps: the process's CPU time per step (every thread) over wall time.
    cpu = [s.get("cpu_time_s") for s in steps[warmup:]]
    wall = [s.get("step_time_s") for s in steps[warmup:]]
    busy = None
    if cpu and all(isinstance(c, (int, float)) for c in cpu) and all(isinstance(w, (int, float)) for w in wall) and sum(wall) > 0:
        busy = sum(cpu) / sum(wall)
    return {
        "busy_cores": busy,
        "step_times_s": times,
        "losses": losses,
        "median_step_s": statistics.median(timed) if timed else None,
        "median_examples_per_s": statistics.median(eps) if eps else None,
        "steps_logged": len(steps),
        **extra,
    }, notes


def bench_shardlab(args, cores, tmp):
    cli = Path(args.build) / "app" / "shardlab-cli"
    if not cli.is_absolute():
        cli = REPO / cli
    project = Path(args.project)
    res = {"peer": "shardlab", "notes": []}
    if not (cli.is_file() and os.access(cli, os.X_OK)):
        res["skipped"] = f"CLI not found at {cli} (build with cmake into {args.build}/ first)"
        return res
    if not (REPO / project).is_file() and not project.is_file():
        res["notes"].append(f"project file {project} not found; the CLI will say why")

    info = {}
    predicted, notes = shardlab_check(cli, project, args.dtype, info)
    res["predicted_bytes"] = predicted
    res["check_precision"] = info.get("precision")
    res["notes"] += notes

    log = tmp / "shardlab.jsonl"
    total = args.steps + args.warmup
    cmd = [str(cli), "train", str(project), "--steps", str(total), "--threads", str(args.threads), "--log", str(log),
           *precision_args(args.dtype)]
    res["command"] = " ".join(cmd)
    res["machine_busy_before"] = warn_if_busy("shardlab")
    print(f"[shardlab] {res['command']}", flush=True)
    code, rss, wall, cpu = run_child(cmd, child_env(args.threads), cores, args.timeout,
                                     tmp / "shardlab.out", tmp / "shardlab.err")
    res.update(peak_rss_mib=rss, process_wall_s=wall, process_cpu_s=cpu,
               busy_cores_whole_run=cpu / wall if wall > 0 else None,
               threading=f"--threads {args.threads}, OMP_NUM_THREADS={args.threads}"
                         + (f", pinned to {len(cores)} cores" if cores else ""))
    if code != 0:
        why = "timed out" if code is None else f"exit code {code}"
        res["notes"].append(f"`train` {why}\n{_tail(tmp / 'shardlab.err')}")
    found, notes = parse_shardlab_log(log, args.warmup)
    res.update(found)
    res["notes"] += notes
    # The start record's "precision" is PrecisionSpec::str(): "float32" for all-float32, else
    # "<dtype> compute, <param dtype> parameters[, ...]".
    want = "float32" if args.dtype == "float32" else precision_label(args.dtype)
    if "precision" not in found:
        res["notes"].append('the log\'s start record has no "precision" field')
    elif found["precision"] != want:
        res["notes"].append(f"the log says precision {found['precision']!r}, expected {want!r}")
    res["train_ok"] = code == 0 and res.get("median_step_s") is not None
    if res.get("median_step_s") is None:
        res["error"] = "no step time measured: " + "; ".join(n.splitlines()[0] for n in res["notes"])
    return res


def bench_gemm(args, flops):
    gemm = Path(args.gemm_bin) if args.gemm_bin else Path(args.build) / "tests" / "bench" / "gemm_peak"
    if not gemm.is_absolute():
        gemm = REPO / gemm
    if not (gemm.is_file() and os.access(gemm, os.X_OK)):
        return {"peer": "gemm_peak", "skipped": f"binary not found at {gemm} (cmake --build {args.build} --target gemm_peak)"}
    cores = None if args.no_pin else pinned_cores(args.threads)
    cmd = [str(gemm), "--threads", str(args.threads), "--flops", str(flops), "--m", str(BATCH), "--n", str(HIDDEN),
           "--k", str(HIDDEN)]
    warn_if_busy("gemm_peak")
    print(f"[gemm_peak] {' '.join(cmd)}", flush=True)
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=child_env(args.threads),
                            preexec_fn=(lambda: os.sched_setaffinity(0, cores)) if cores else None)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"peer": "gemm_peak", "error": str(e)}
    doc = _parse_json_loose(cp.stdout)
    if cp.returncode != 0 or not isinstance(doc, dict) or "seconds_for_flops" not in doc:
        return {"peer": "gemm_peak", "error": f"exit {cp.returncode}: {cp.stdout[-300:]} {cp.stderr[-300:]}"}
    doc["peer"] = "gemm_peak"
    doc["command"] = " ".join(cmd)
    return doc


# ----------------------------------------------------------------------------------------------
def fmt(v, spec="{:.1f}", none="-"):
    return none if v is None else spec.format(v)


def verdict(ok):
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def report(results, gemm, args, flops):
    sl = results.get("shardlab", {})
    sl_t = sl.get("median_step_s")
    rows = []
    for name in ("shardlab", "torch", "jax"):
        r = results.get(name)
        if r is None:
            continue
        t = r.get("median_step_s")
        pred = r.get("predicted_bytes") if name == "shardlab" else None
        rss = r.get("peak_rss_mib")
        rows.append([
            name,
            fmt(t * 1e3 if t else None),
            fmt(t / sl_t if t and sl_t else None, "{:.2f}x"),
            fmt(rss if "skipped" not in r else None),
            fmt(pred / MIB if pred else None),
            fmt(rss * MIB / pred if pred and rss and "skipped" not in r else None, "{:.2f}"),
            fmt(gemm.get("seconds_for_flops") / t if t and gemm.get("seconds_for_flops") else None, "{:.0%}"),
            fmt(r["busy_cores"] if r.get("busy_cores") is not None else r.get("busy_cores_whole_run"), "{:.2f}"),
        ])
    bf16 = args.dtype != "float32"
    # The GEMM peak is Eigen's float32 rate; in bf16 mode the column says so in its name.
    head = ["peer", "median step ms", "vs shardlab", "peak RSS MiB", "predicted MiB", "RSS/pred",
            "f32-GEMM-peak frac" if bf16 else "GEMM-peak frac", "busy cores"]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    print()
    print(f"deep-mlp-small: batch {BATCH}, {IN_FEATURES} -> {DEPTH} x {HIDDEN} -> {OUT_FEATURES}, "
          f"{param_count() / 1e6:.2f} M params, Adam {LR}; threads T={args.threads}; "
          f"median of {args.steps} steps after {args.warmup} warm-up"
          + (f", median of {args.rounds} rounds run in turns" if args.rounds > 1 else ""))
    print(f"dtype: {precision_label(args.dtype)}"
          + (" (mixed precision; the loss in float32)" if bf16 else ""))
    print("  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(head, widths))))
    for r in rows:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    print("  (ratio = peer / shardlab step time, >1 means shardlab is faster; GEMM-peak frac = peak time / step time;"
          " busy cores = CPU time / wall during timed steps; shardlab's from the cpu_time_s of its log)")
    if bf16:
        print("  (f32-GEMM-peak frac: against Eigen's float32 GEMM peak, not a bfloat16 one; predicted = the bf16 plan,"
              " `check --dtype bfloat16`)")

    for name in ("shardlab", "torch", "jax", "gemm_peak"):
        r = gemm if name == "gemm_peak" else results.get(name)
        if not r:
            continue
        print_status(name, r)
        if r.get("precision"):
            print(f"  {name}: precision - {r['precision']}"
                  + (" (train log)" if name == "shardlab" else ""))
        bc = r.get("busy_cores")
        if isinstance(bc, (int, float)) and bc < 0.75 * args.threads:
            print(f"  {name}: warning - used only {bc:.2f} of {args.threads} cores during the timed steps "
                  f"(other load on the machine, or the peer ignores the thread setting)")
        if r.get("rss_after_import_mib"):
            print(f"  {name}: RSS after imports, before the model: {r['rss_after_import_mib']:.0f} MiB "
                  f"(interpreter + libraries; included in peak RSS)")
        if r.get("losses"):
            ls = [l for l in r["losses"] if isinstance(l, (int, float))]
            if ls:
                print(f"  {name}: loss first {ls[0]:.6g}, last {ls[-1]:.6g}")

    print()
    print_rounds(results)
    print(f"one step = {flops / 1e9:.2f} GFLOP of matmul (3 x forward over layers {layer_sizes()})")
    if "seconds_for_flops" in gemm:
        print(f"Eigen GEMM peak ({gemm.get('m')}x{gemm.get('k')} @ {gemm.get('k')}x{gemm.get('n')}, row-major f32, "
              f"T={gemm.get('threads')}): {gemm['gflops']:.1f} GFLOP/s -> {gemm['seconds_for_flops'] * 1e3:.1f} ms per step"
              + (f"; shardlab reaches {gemm['seconds_for_flops'] / sl_t:.0%} of it" if sl_t else "")
              + (" (a float32 rate: the bf16 steps are measured against it)" if bf16 else ""))
    else:
        print(f"Eigen GEMM peak: {gemm.get('skipped') or gemm.get('error')}")

    print()
    print("targets:" if not bf16 else f"targets ({args.dtype} compute):")
    peers = [results[n] for n in ("torch", "jax") if results.get(n, {}).get("median_step_s")]
    fastest = min(peers, key=lambda r: r["median_step_s"]) if peers else None
    ok_speed = (sl_t <= 0.9 * fastest["median_step_s"]) if sl_t and fastest else None
    bc = sl.get("busy_cores")
    ok_busy = (bc >= 0.95 * args.threads) if isinstance(bc, (int, float)) else None
    # RSS verdicts only count when `train` ran to the end and logged its steps.
    rss = sl.get("peak_rss_mib") if sl.get("train_ok") else None
    pred = sl.get("predicted_bytes")
    ratio = rss * MIB / pred if rss and pred else None
    ok_pred = (1 / 1.25 <= ratio <= 1.25) if ratio else None
    peer_rss = [results[n] for n in ("torch", "jax") if results.get(n, {}).get("peak_rss_mib") and "error" not in results[n]]
    ok_rss = all(rss < p["peak_rss_mib"] for p in peer_rss) if rss and peer_rss else None
    disturbed = [n for n in ("torch", "jax") if isinstance(results.get(n, {}).get("busy_cores"), (int, float))
                 and results[n]["busy_cores"] < 0.75 * args.threads]
    if bf16:
        # The bf16 plan is measured against peak RSS (within 1.25x). The speed and core targets below are
        # float32 targets; they are not verdicts on a bf16 run.
        print(f"  shardlab peak RSS within 1.25x of the {args.dtype} plan's prediction"
              + (f" (ratio {ratio:.2f})" if ratio else "") + f": {verdict(ok_pred)}")
        print("  float32-only, not checked in bf16 mode: step <= 0.9x the faster peer; "
              f">= {0.95 * args.threads:.1f} of {args.threads} cores busy; peak RSS below every peer's "
              "(run --dtype float32)")
        if disturbed:
            print(f"  caution: {', '.join(disturbed)} used too few cores (see the warnings above); "
                  f"the comparison is not reliable - rerun on an idle machine")
        return {"dtype": args.dtype, "rss_vs_predicted": ok_pred, "speed": None, "busy_cores": None,
                "rss_vs_peers": None, "float32_only_not_checked": ["speed", "busy_cores", "rss_vs_peers"],
                "disturbed": disturbed}
    print(f"  shardlab step <= 0.9x the faster peer (0.8x is the goal beyond it)"
          + (f" ({fastest['peer']} {fastest['median_step_s'] * 1e3:.1f} ms vs {sl_t * 1e3:.1f} ms)" if sl_t and fastest else "")
          + f": {verdict(ok_speed)}")
    print(f"  shardlab keeps >= {0.95 * args.threads:.1f} of {args.threads} cores busy during its steps"
          + (f" ({bc:.2f})" if isinstance(bc, (int, float)) else "") + f": {verdict(ok_busy)}")
    print(f"  shardlab peak RSS within 1.25x of the plan's prediction"
          + (f" (ratio {ratio:.2f})" if ratio else "") + f": {verdict(ok_pred)}")
    print(f"  shardlab peak RSS below every peer's"
          + (f" ({rss:.0f} MiB vs " + ", ".join(f"{p['peer']} {p['peak_rss_mib']:.0f}" for p in peer_rss) + ")"
             if ok_rss is not None else "") + f": {verdict(ok_rss)}")
    if disturbed:
        print(f"  caution: {', '.join(disturbed)} used too few cores (see the warnings above); "
              f"the comparison is not reliable - rerun on an idle machine")
    return {"dtype": args.dtype, "speed": ok_speed, "busy_cores": ok_busy, "rss_vs_predicted": ok_pred,
            "rss_vs_peers": ok_rss, "disturbed": disturbed}


def combine_rounds(rounds):
    """One result per peer from rounds in which the peers ran in turns: the last round's, with the
    median step the median of the rounds' medians. A slow spell of the machine that lasts one peer's
    run then weighs on one round, not on the verdict."""
    results = {}
    for name in rounds[-1]:
        r = dict(rounds[-1][name])
        steps = [g[name]["median_step_s"] for g in rounds if g.get(name, {}).get("median_step_s")]
        if len(rounds) > 1:
            r["round_steps_s"] = [g.get(name, {}).get("median_step_s") for g in rounds]
            r["median_step_s"] = statistics.median(steps) if steps else None
        results[name] = r
    return results


def print_rounds(results):
    """Each round's median step per peer, and Shardlab's ratio to the faster peer in that round."""
    sl = results.get("shardlab", {}).get("round_steps_s")
    if not sl:
        return
    print(f"rounds (peers ran in turns, {len(sl)} rounds; the table's step is the median of the rounds'):")
    for k, t in enumerate(sl):
        peers = {n: results[n]["round_steps_s"][k] for n in ("torch", "jax") if results.get(n, {}).get("round_steps_s")}
        peers = {n: v for n, v in peers.items() if v}
        cells = [f"shardlab {t * 1e3:.1f} ms" if t else "shardlab -"] + [f"{n} {v * 1e3:.1f} ms" for n, v in peers.items()]
        ratio = f"; ratio to the faster peer {t / min(peers.values()):.2f}" if t and peers else ""
        print(f"  round {k + 1}: " + ", ".join(cells) + ratio)


def print_status(name, r):
    """The lines every benchmark prints under its table for one framework's result: skipped, failed,
    notes, how its threads were set."""
    if "skipped" in r:
        print(f"  {name}: SKIPPED - {r['skipped']}")
    if "error" in r:
        print(f"  {name}: ERROR - {r['error']}")
    for n in r.get("notes", []):
        print(f"  {name}: note - {n}")
    if r.get("threading"):
        print(f"  {name}: threads - {r['threading']}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="CMake build directory (default: build)")
    ap.add_argument("--project", default=DEFAULT_PROJECT, help=f"Shardlab project (default: {DEFAULT_PROJECT})")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for every peer (default: os.cpu_count())")
    ap.add_argument("--steps", type=int, default=5, help="timed steps per peer (>= 5; default 5)")
    ap.add_argument("--warmup", type=int, default=2, help="warm-up steps per peer, not timed (>= 2; default 2)")
    ap.add_argument("--peers", default="shardlab,torch,jax,gemm",
                    help="comma-separated subset of shardlab,torch,jax,gemm (default: all)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="run the peers in turns this many times and take each one's median (default 3; "
                         "a shared virtual machine's speed can drift by 20%% over minutes)")
    ap.add_argument("--gemm-bin", help="gemm_peak binary (default: <build>/tests/bench/gemm_peak)")
    ap.add_argument("--no-pin", action="store_true", help="don't pin children to the first T cores")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per peer process (default 900)")
    ap.add_argument("--json", metavar="OUT", help="also write all results to this JSON file")
    ap.add_argument("--dtype", default="float32", metavar="{float32,bf16}",
                    type=lambda v: DTYPE_CHOICES.get(v.lower(), v), choices=sorted(set(DTYPE_CHOICES.values())),
                    help="compute dtype of every peer: float32 (default) or bf16 (= bfloat16): bfloat16 activations "
                         "and matmul inputs, float32 parameters, optimizer state and loss")
    ap.add_argument("--worker", choices=["torch", "jax"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        return run_worker(args)
    if args.steps < 5 or args.warmup < 2:
        ap.error("--steps must be >= 5 and --warmup >= 2")
    if args.threads < 1:
        ap.error("--threads must be >= 1")
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = set(peers) - {"shardlab", "torch", "jax", "gemm"}
    if unknown:
        ap.error(f"unknown peers {sorted(unknown)}")

    cores = None if args.no_pin else pinned_cores(args.threads)
    if not args.no_pin and cores is None:
        print(f"note: T={args.threads} > {len(os.sched_getaffinity(0))} available cores; not pinning "
              f"(JAX will then use every core)")
    print(f"threads T={args.threads}; children " + (f"pinned to cores {sorted(cores)}" if cores else "not pinned")
          + f"; dtype: {precision_label(args.dtype)}")

    flops = step_matmul_flops()
    rounds = []  # per round, each peer's result
    with tempfile.TemporaryDirectory(prefix="shardlab-bench-") as tmpdir:
        tmp = Path(tmpdir)
        for k in range(args.rounds):
            if args.rounds > 1:
                print(f"-- round {k + 1} of {args.rounds}", flush=True)
            got = {}
            for name in peers:
                if name == "shardlab":
                    got[name] = bench_shardlab(args, cores, tmp)
                elif name in ("torch", "jax"):
                    got[name] = bench_python_peer(name, args, cores, tmp)
            rounds.append(got)
        gemm = bench_gemm(args, flops) if "gemm" in peers else {"peer": "gemm_peak", "skipped": "not requested"}
    results = combine_rounds(rounds)

    targets = report(results, gemm, args, flops)
    if args.json:
        doc = {
            "model": {"batch": BATCH, "in": IN_FEATURES, "hidden": HIDDEN, "depth": DEPTH, "out": OUT_FEATURES,
                      "params": param_count(), "lr": LR, "step_matmul_flops": flops},
            "dtype": args.dtype, "precision": precision_label(args.dtype),
            "threads": args.threads, "steps": args.steps, "warmup": args.warmup, "rounds": args.rounds,
            "pinned_cores": sorted(cores) if cores else None,
            "cpu_count": os.cpu_count(), "python": sys.version.split()[0],
            "results": results, "gemm_peak": gemm, "targets": targets,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
