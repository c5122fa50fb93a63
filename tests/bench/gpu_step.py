#!/usr/bin/env python3
"""One training step on one GPU: Shardlab's CUDA backend against JAX and PyTorch (eager and
torch.compile), in the same run, at each matmul precision.

Models (each peer builds the same one): seed 003's MLP, projects/deep-mlp.shardlab.json (input 1024,
90 x Dense(2056) + ReLU, Dense(10), batch 256*27 = 6912, Adam 1e-4, MSE against ones), and
deep-mlp-small (input 1024, 8 x Dense(2048) + ReLU, Dense(10), batch 512).

Precisions, set the same way for every peer:
  f32   full float32 matmuls: torch.set_float32_matmul_precision("highest"),
        jax.default_matmul_precision("highest"); Shardlab's CUDA backend's default
  tf32  float32 storage, TF32 tensor-core matmuls: torch "high", JAX "tensorfloat32"
  bf16  bfloat16 compute with float32 master weights: torch.autocast(bfloat16), Flax Dense(dtype=bfloat16),
        Shardlab --dtype bfloat16 (16-bit activations, float32 parameters and optimizer state)
Shardlab's f32 and tf32 are --matmul-precision highest/tf32.

Each peer runs in a fresh process; the step time is the median of the timed steps after warm-up
(JAX's and torch.compile's compilation fall in the warm-up). TFLOP/s counts the matmuls only
(3 x the forward's 2*B*in*out per Dense); MFU is against cuBLAS's rate at that precision, measured
in the same run by PyTorch on an 8192^3 product. Where there is no CUDA GPU every row says why and
the script exits 0.

    python3 tests/bench/gpu_step.py [--build build] [--models seed003,small] [--precisions f32,tf32,bf16]
                                    [--peers shardlab,jax,torch,torch-compile] [--steps 10] [--warmup 3] [--json OUT]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_step  # noqa: E402  (the child runner, the timed loop, the JSONL log reader)

REPO = cpu_step.REPO
MODELS = {
    # name: (project, input, hidden, hidden layers, output, batch)
    "seed003": ("projects/deep-mlp.shardlab.json", 1024, 2056, 90, 10, 256 * 27),
    "small": ("projects/deep-mlp-small.shardlab.json", 1024, 2048, 8, 10, 512),
}
PRECISIONS = ("f32", "tf32", "bf16")
PEERS = ("shardlab", "jax", "torch", "torch-compile")
# How shardlab-cli train is told each precision.
SHARDLAB_PRECISION = {"f32": ["--matmul-precision", "highest"], "tf32": ["--matmul-precision", "tf32"],
                      "bf16": ["--dtype", "bfloat16"]}
LR = 1e-4


def layer_sizes(model):
    _, inp, hidden, depth, out, _ = MODELS[model]
    dims = [inp] + [hidden] * depth + [out]
    return list(zip(dims[:-1], dims[1:]))


def step_matmul_flops(model):
    batch = MODELS[model][5]
    return 3 * sum(2 * batch * i * o for i, o in layer_sizes(model))


# ==============================================================================================
# Workers: `gpu_step.py --worker PEER --model M --precision P`, each in a fresh process; one
# RESULT: line of JSON on stdout.
# ==============================================================================================
def worker_torch(model, precision, steps, warmup, compiled):
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("PyTorch sees no CUDA GPU")
    torch.set_float32_matmul_precision("highest" if precision != "tf32" else "high")
    dev = torch.device("cuda")
    layers = []
    sizes = layer_sizes(model)
    for i, o in sizes[:-1]:
        layers += [torch.nn.Linear(i, o), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(*sizes[-1]))
    net = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=LR)
    batch = MODELS[model][5]
    x = torch.ones(batch, sizes[0][0], device=dev)
    y = torch.ones(batch, sizes[-1][1], device=dev)

    def loss_of(x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
            pred = net(x)
        return torch.mean((pred.float() - y) ** 2)

    forward = torch.compile(loss_of) if compiled else loss_of

    def step():
        opt.zero_grad(set_to_none=True)
        loss = forward(x, y)
        loss.backward()
        opt.step()
        return float(loss.detach())  # waits for the step, as block_until_ready does

    times, losses, _ = cpu_step._timed_loop(step, steps + warmup, warmup)
    return {"version": f"torch {torch.__version__}", "device": torch.cuda.get_device_name(0),
            "step_times_s": times, "losses": losses}


def flax_mlp(model, precision):
    import flax.linen as nn
    import jax.numpy as jnp

    sizes = layer_sizes(model)
    dtype = jnp.bfloat16 if precision == "bf16" else jnp.float32

    class DeepMLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _, o in sizes[:-1]:
                x = nn.relu(nn.Dense(o, dtype=dtype, param_dtype=jnp.float32)(x))
            return nn.Dense(sizes[-1][1], dtype=dtype, param_dtype=jnp.float32)(x).astype(jnp.float32)

    return DeepMLP()


def worker_jax(model, precision, steps, warmup):
    import jax
    import jax.numpy as jnp
    import optax
    from flax.training import train_state

    if jax.default_backend() != "gpu":
        raise SystemExit(f"JAX runs on {jax.default_backend()}, not a GPU")
    jax.config.update("jax_default_matmul_precision", "tensorfloat32" if precision == "tf32" else
                      "highest" if precision == "f32" else "default")
    net = flax_mlp(model, precision)
    sizes, batch = layer_sizes(model), MODELS[model][5]
    x = jnp.ones((batch, sizes[0][0]), jnp.float32)
    y = jnp.ones((batch, sizes[-1][1]), jnp.float32)
    params = net.init(jax.random.PRNGKey(0), x[:1])["params"]
    state = train_state.TrainState.create(apply_fn=net.apply, params=params, tx=optax.adam(LR))
    step_fn = jax.jit(cpu_step.jax_train_step(net), donate_argnums=0)
    step = cpu_step.jax_stepper(step_fn, state, x, y)
    times, losses, _ = cpu_step._timed_loop(step, steps + warmup, warmup)
    return {"version": f"jax {jax.__version__}", "device": str(jax.devices()[0]), "step_times_s": times, "losses": losses}


def worker_peak(precision):
    """cuBLAS's rate at this precision: PyTorch's 8192^3 product, median of 10 after 3 warm-ups."""
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("PyTorch sees no CUDA GPU")
    torch.set_float32_matmul_precision("highest" if precision == "f32" else "high")
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    times = []
    for i in range(13):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.matmul(a, b)
        end.record()
        end.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end) / 1e3)
    return {"tflops": 2 * n**3 / statistics.median(times) / 1e12, "device": torch.cuda.get_device_name(0)}


def run_worker(args):
    if args.worker == "peak":
        result = worker_peak(args.precision)
    elif args.worker == "jax":
        result = worker_jax(args.model, args.precision, args.steps, args.warmup)
    else:
        result = worker_torch(args.model, args.precision, args.steps, args.warmup, args.worker == "torch-compile")
    print("RESULT:" + json.dumps(result), flush=True)
    return 0


# ==============================================================================================
# Parent side.
# ==============================================================================================
def gpu_present():
    """(True, name) where nvidia-smi lists a GPU; else (False, why not)."""
    try:
        cp = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"nvidia-smi could not run ({e})"
    gpus = [l for l in cp.stdout.splitlines() if l.startswith("GPU ")]
    if cp.returncode != 0 or not gpus:
        return False, (cp.stderr.strip() or cp.stdout.strip() or "nvidia-smi lists no GPU").splitlines()[0]
    return True, gpus[0]


def run_python(worker, model, precision, args, tmp):
    needs = {"jax": ["jax", "flax", "optax"]}.get(worker, ["torch"])
    missing = [m for m in needs if importlib.util.find_spec(m) is None]
    if missing:
        return {"skipped": f"not installed: {', '.join(missing)}"}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", worker, "--model", model or "small",
           "--precision", precision, "--steps", str(args.steps), "--warmup", str(args.warmup)]
    out, err = tmp / f"{worker}-{model}-{precision}.out", tmp / f"{worker}-{model}-{precision}.err"
    env = dict(os.environ)
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # peers take turns on the GPU, never share it
    code, _, _, _ = cpu_step.run_child(cmd, env, None, args.timeout, out, err)
    if code != 0:
        return {"error": ("timed out" if code is None else f"exit code {code}") + "\n" + cpu_step._tail(err)}
    for line in out.read_text(errors="replace").splitlines():
        if line.startswith("RESULT:"):
            result = json.loads(line[len("RESULT:"):])
            if "step_times_s" in result:
                result["median_step_s"] = cpu_step.median_after_warmup(result["step_times_s"], args.warmup)
            return result
    return {"error": "no RESULT line\n" + cpu_step._tail(err)}


def run_shardlab(model, precision, args, tmp):
    cli = Path(args.build) / "app" / "shardlab-cli"
    cli = cli if cli.is_absolute() else REPO / cli
    if not os.access(cli, os.X_OK):
        return {"skipped": f"no shardlab-cli at {cli} (build first)"}
    log = tmp / f"shardlab-{model}-{precision}.jsonl"
    cmd = [str(cli), "train", str(REPO / MODELS[model][0]), "--backend", "cuda", "--steps", str(args.steps + args.warmup),
           "--log", str(log), "--quiet", *SHARDLAB_PRECISION[precision]]
    out, err = tmp / f"shardlab-{model}-{precision}.out", tmp / f"shardlab-{model}-{precision}.err"
    code, _, _, _ = cpu_step.run_child(cmd, dict(os.environ), None, args.timeout, out, err)
    if code != 0:
        return {"error": ("timed out" if code is None else f"exit code {code}") + "\n" + cpu_step._tail(err)}
    found, notes = cpu_step.parse_shardlab_log(log, args.warmup)
    if found.get("median_step_s") is None:
        return {"error": "; ".join(notes) or "no step times in the log"}
    return {"version": "shardlab-cli --backend cuda", "median_step_s": found["median_step_s"],
            "losses": found.get("losses"), "notes": notes}


def report(rows, peaks, args):
    print(f"\n{'model':9} {'prec':5} {'peer':14} {'step ms':>9} {'TFLOP/s':>8} {'MFU':>6} {'vs JAX':>7}  note")
    targets = []
    for model in args.models:
        flops = step_matmul_flops(model)
        for precision in args.precisions:
            cells = {peer: rows.get((model, precision, peer), {}) for peer in args.peers}
            jax_s = cells.get("jax", {}).get("median_step_s")
            for peer, r in cells.items():
                s = r.get("median_step_s")
                peak = peaks.get(precision, {}).get("tflops")
                if s:
                    tf = flops / s / 1e12
                    mfu = f"{tf / peak:.0%}" if peak else "-"
                    vs = f"{s / jax_s:.2f}x" if jax_s else "-"
                    note = (r.get("notes") or [""])[0]
                    print(f"{model:9} {precision:5} {peer:14} {s * 1e3:9.2f} {tf:8.1f} {mfu:>6} {vs:>7}  {note}")
                else:
                    why = (r.get("skipped") or r.get("error") or "not run").splitlines()[0]
                    print(f"{model:9} {precision:5} {peer:14} {'-':>9} {'-':>8} {'-':>6} {'-':>7}  {why}")
            ours = cells.get("shardlab", {}).get("median_step_s")
            if "shardlab" in args.peers and "jax" in args.peers:
                ok = None if not (ours and jax_s) else ours <= jax_s
                targets.append((f"{model} {precision}: Shardlab <= 1.0x JAX's step", ok))
            if model == "seed003" and precision == "bf16" and "shardlab" in args.peers:
                peak = peaks.get("bf16", {}).get("tflops")
                ok = None if not (ours and peak) else flops / ours / 1e12 / peak >= 0.60
                targets.append(("seed003 bf16: Shardlab MFU >= 60% of cuBLAS", ok))
    print("\ncuBLAS peak (PyTorch, 8192^3): " +
          ", ".join(f"{p} {v['tflops']:.0f} TFLOP/s" if "tflops" in v else f"{p} n/a" for p, v in peaks.items()))
    print("targets:")
    for what, ok in targets:
        print(f"  {what}: {'n/a' if ok is None else 'PASS' if ok else 'FAIL'}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--models", default="seed003,small")
    ap.add_argument("--precisions", default=",".join(PRECISIONS))
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--worker", choices=["peak", "jax", "torch", "torch-compile"], help=argparse.SUPPRESS)
    ap.add_argument("--model", choices=sorted(MODELS), help=argparse.SUPPRESS)
    ap.add_argument("--precision", choices=PRECISIONS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return run_worker(args)
    args.models = [m for m in args.models.split(",") if m]
    args.precisions = [p for p in args.precisions.split(",") if p]
    args.peers = [p for p in args.peers.split(",") if p]
    for name, known, given in (("model", MODELS, args.models), ("precision", PRECISIONS, args.precisions),
                               ("peer", PEERS, args.peers)):
        bad = [g for g in given if g not in known]
        if bad:
            ap.error(f"unknown {name} {', '.join(bad)} (known: {', '.join(known)})")

    present, what = gpu_present()
    rows, peaks = {}, {}
    if not present:
        print(f"no CUDA GPU: {what}; every peer is skipped")
        for m in args.models:
            for p in args.precisions:
                for peer in args.peers:
                    rows[(m, p, peer)] = {"skipped": f"no CUDA GPU ({what})"}
    else:
        print(f"GPU: {what}")
        with tempfile.TemporaryDirectory(prefix="shardlab-gpu-bench-") as d:
            tmp = Path(d)
            for p in args.precisions:
                peaks[p] = run_python("peak", None, p, args, tmp)
                print(f"cuBLAS peak {p}: " + (f"{peaks[p]['tflops']:.0f} TFLOP/s" if "tflops" in peaks[p] else
                                              str(peaks[p].get("error") or peaks[p].get("skipped"))), flush=True)
            for m in args.models:
                for p in args.precisions:
                    for peer in args.peers:
                        print(f"[{peer}] {m} {p} ...", flush=True)
                        t0 = time.perf_counter()
                        rows[(m, p, peer)] = (run_shardlab(m, p, args, tmp) if peer == "shardlab"
                                              else run_python(peer, m, p, args, tmp))
                        rows[(m, p, peer)]["process_wall_s"] = time.perf_counter() - t0
                        r = rows[(m, p, peer)]
                        # Each result as it comes, so a run cut short still shows what it measured.
                        print(f"    {r['median_step_s'] * 1e3:.2f} ms" if r.get("median_step_s") else
                              "    " + (r.get("skipped") or r.get("error") or "no result").splitlines()[0], flush=True)
    report(rows, peaks, args)
    if args.json:
        Path(args.json).write_text(json.dumps({"gpu": what, "peaks": peaks,
                                               "rows": [{"model": m, "precision": p, "peer": peer, **r}
                                                        for (m, p, peer), r in rows.items()]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
