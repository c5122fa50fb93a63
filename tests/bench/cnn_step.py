#!/usr/bin/env python3
"""CPU training-step benchmark of a convolutional network: Shardlab vs JAX/Flax (and PyTorch where installed).

The model is projects/cnn-fashion.shardlab.json, the Flax MNIST example's CNN: on (B, 28, 28, 1)
images, Conv 32 3x3 SAME -> relu -> AvgPool 2 -> Conv 64 3x3 SAME -> relu -> AvgPool 2 -> Flatten ->
Dense 256 -> relu -> Dense 10, softmax cross-entropy, Adam 1e-3, float32, batch 128. Each peer runs
in its own process pinned to the same T cores (the helpers of cpu_step.py, whose README section says
how); the step time is the median after the warm-up, per round, and the table shows the median over
the rounds. Beside the ratio it prints the step's convolution and matmul FLOPs at the GEMM peak
measured in the same run at conv2's GEMM shape (M = B*14*14, K = 288, N = 64).

    python3 tests/bench/cnn_step.py --threads 2 --rounds 3
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_step as common  # noqa: E402  (run_child, pinning, the log parser)

REPO = common.REPO
PROJECT = REPO / "projects" / "cnn-fashion.shardlab.json"
BATCH, LR = 128, 1e-3


def step_flops(batch=BATCH):
    """Multiply-adds x 2 of the convolutions and Dense layers, forward + backward (3 x forward)."""
    conv1 = 28 * 28 * 32 * 9 * 1
    conv2 = 14 * 14 * 64 * 9 * 32
    dense = 3136 * 256 + 256 * 10
    return 3 * 2 * batch * (conv1 + conv2 + dense)


# ==============================================================================================
# Worker side: one peer in its own process.
# ==============================================================================================
def worker_jax(threads, steps, warmup):
    import jax
    import jax.numpy as jnp
    import flax
    import flax.linen as nn
    import optax
    from flax.training import train_state

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = x[..., None]
            x = nn.avg_pool(nn.relu(nn.Conv(32, (3, 3))(x)), (2, 2), strides=(2, 2))
            x = nn.avg_pool(nn.relu(nn.Conv(64, (3, 3))(x)), (2, 2), strides=(2, 2))
            x = x.reshape((x.shape[0], -1))
            return nn.Dense(10)(nn.relu(nn.Dense(256)(x)))

    model = CNN()
    rng = jax.random.PRNGKey(0)
    x = jax.random.normal(rng, (BATCH, 28, 28), jnp.float32)
    y = jax.random.randint(rng, (BATCH,), 0, 10)
    state = train_state.TrainState.create(apply_fn=model.apply, params=model.init(rng, x)["params"], tx=optax.adam(LR))

    def train_step(state, x, y):
        def loss_fn(p):
            logits = state.apply_fn({"params": p}, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss

    step = common.jax_stepper(jax.jit(train_step, donate_argnums=0), state, x, y)
    times, losses, busy = common._timed_loop(step, steps + warmup, warmup)
    return {"version": f"jax {jax.__version__}, flax {flax.__version__}", "step_times_s": times, "losses": losses,
            "busy_cores": busy, "threads_used": len(os.sched_getaffinity(0))}


def worker_torch(threads, steps, warmup):
    import torch
    from torch import nn

    torch.set_num_threads(threads)
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                          nn.AvgPool2d(2), nn.Flatten(), nn.Linear(3136, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    x = torch.randn(BATCH, 1, 28, 28)
    y = torch.randint(0, 10, (BATCH,))
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return float(loss)

    times, losses, busy = common._timed_loop(step, steps + warmup, warmup)
    return {"version": f"torch {torch.__version__}", "step_times_s": times, "losses": losses, "busy_cores": busy,
            "threads_used": torch.get_num_threads()}


# ==============================================================================================
# Parent side.
# ==============================================================================================
def synthetic_project(tmp):
    """cnn-fashion with synthetic images in place of Fashion-MNIST: the step is the same, no data set needed."""
    doc = json.loads(PROJECT.read_text())
    doc["data"] = {"type": "synthetic", "kind": "blobs", "feature_shape": [28, 28], "classes": 10, "examples": 4 * BATCH}
    doc["training"]["batch_size"] = BATCH
    doc["training"]["eval"] = False
    path = tmp / "cnn-fashion-synthetic.shardlab.json"
    path.write_text(json.dumps(doc))
    return path


def bench_shardlab(args, cores, tmp):
    cli = (REPO / args.build / "app" / "shardlab-cli") if not Path(args.build).is_absolute() else Path(args.build) / "app" / "shardlab-cli"
    if not cli.is_file():
        return {"peer": "shardlab", "skipped": f"CLI not found at {cli}"}
    log = tmp / "shardlab.jsonl"
    if log.exists():
        log.unlink()
    cmd = [str(cli), "train", str(synthetic_project(tmp)), "--steps", str(args.steps + args.warmup), "--threads", str(args.threads),
           "--log", str(log)]
    code, rss, wall, cpu = common.run_child(cmd, common.child_env(args.threads), cores, args.timeout, tmp / "s.out", tmp / "s.err")
    if code != 0:
        return {"peer": "shardlab", "error": f"exit {code}\n{common._tail(tmp / 's.err')}"}
    found, notes = common.parse_shardlab_log(log, args.warmup)
    found.update(peer="shardlab", peak_rss_mib=rss, command=" ".join(cmd), notes=notes)
    return found


def bench_python(name, args, cores, tmp):
    modules = {"jax": ["jax", "flax", "optax"], "torch": ["torch"]}[name]
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        return {"peer": name, "skipped": f"not installed: {', '.join(missing)}"}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--threads", str(args.threads), "--steps", str(args.steps),
           "--warmup", str(args.warmup)]
    return common.run_peer_process(name, cmd, common.peer_env(name, args.threads), cores, args, tmp)


def gemm_peak(args, cores):
    """GFLOP/s of one GEMM at conv2's shape on the same cores (tests/bench/gemm_peak)."""
    import subprocess

    gemm = REPO / args.build / "tests" / "bench" / "gemm_peak"
    if not gemm.is_file():
        return None, f"gemm_peak not built at {gemm}"
    cmd = [str(gemm), "--threads", str(args.threads), "--flops", str(step_flops()), "--m", str(BATCH * 14 * 14), "--n", "64", "--k", "288"]
    cp = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=common.child_env(args.threads),
                        preexec_fn=(lambda: os.sched_setaffinity(0, cores)) if cores else None)
    doc = common._parse_json_loose(cp.stdout)
    if cp.returncode != 0 or not isinstance(doc, dict):
        return None, f"gemm_peak exit {cp.returncode}: {cp.stderr[-200:]}"
    return doc, " ".join(cmd)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10, help="timed steps per round")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--worker", choices=["jax", "torch"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        fn = {"jax": worker_jax, "torch": worker_torch}[args.worker]
        print("RESULT:" + json.dumps(fn(args.threads, args.steps, args.warmup)), flush=True)
        return 0

    cores = None if args.no_pin else common.pinned_cores(args.threads)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown CPU")
    flags = next((l for l in open("/proc/cpuinfo") if l.startswith("flags")), "")
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    print(f"cnn-fashion step, batch {BATCH}, float32, {args.threads} threads on {cpu} ({isa}); "
          f"{step_flops() / 1e9:.2f} GFLOP of convolution and matmul per step")
    medians = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for r in range(args.rounds):
            for peer in ("shardlab", "jax", "torch"):
                res = bench_shardlab(args, cores, tmp) if peer == "shardlab" else bench_python(peer, args, cores, tmp)
                if "skipped" in res or "error" in res:
                    if r == 0:
                        print(f"  {peer}: {res.get('skipped') or res.get('error')}")
                    continue
                medians.setdefault(peer, []).append(res["median_step_s"])
                print(f"  round {r + 1} {peer}: {res['median_step_s'] * 1e3:.1f} ms (losses {[round(l, 3) for l in res['losses'][:3]]})")
        peak, how = gemm_peak(args, cores)
    if "shardlab" not in medians:
        print("Shardlab did not run")
        return 1
    ours = statistics.median(medians["shardlab"])
    peak_gflops = peak.get("gflops") if peak else None
    print(f"\n| peer | median step (ms) | peer / Shardlab | GFLOP/s | fraction of the GEMM peak |")
    print("|---|---|---|---|---|")
    for peer, ts in medians.items():
        m = statistics.median(ts)
        rate = step_flops() / m / 1e9
        frac = f"{rate / peak_gflops:.0%}" if peak_gflops else "-"
        print(f"| {peer} | {m * 1e3:.1f} | {m / ours:.2f} | {rate:.1f} | {frac} |")
    print(f"\nGEMM peak at conv2's shape: {peak_gflops:.1f} GFLOP/s ({how})" if peak_gflops else f"\nGEMM peak: {how}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
