#!/usr/bin/env python3
"""SPMD overhead: N virtual devices against one, Shardlab and JAX in the same run.

Shardlab: build/tests/bench/spmd_overhead (deep-mlp-small, data=N with batch=data, against 1 device,
all devices sharing T cores). JAX: the same Flax model and Adam step (cpu_step.py's), jitted over a
mesh of N emulated host devices (XLA_FLAGS=--xla_force_host_platform_device_count=N) with the batch
split on 'data' and parameters replicated, against the same step on 1 device. Every peer runs in a
fresh process pinned to the same T cores, in turns for --rounds rounds; the round with the median
ratio is reported. Target: Shardlab's N-device step <= 1.5x its
1-device step.

    python3 tests/bench/spmd_overhead.py [--build build] [--threads 2] [--devices 8] [--steps 5] [--rounds 3]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_step  # noqa: E402  (the model's constants, the pinned child runner)


def worker_jax(devices, steps, warmup):
    import jax
    import jax.numpy as jnp
    import optax
    from flax.training import train_state
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    found = jax.devices()
    if len(found) < devices:
        raise SystemExit(f"JAX sees {len(found)} devices, {devices} wanted")
    mesh = Mesh(found[:devices], ("data",))
    replicated, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    model = cpu_step.flax_deep_mlp()
    x = jax.device_put(jnp.ones((cpu_step.BATCH, cpu_step.IN_FEATURES), jnp.float32), split)
    y = jax.device_put(jnp.ones((cpu_step.BATCH, cpu_step.OUT_FEATURES), jnp.float32), split)
    params = model.init(jax.random.PRNGKey(0), jnp.ones((1, cpu_step.IN_FEATURES)))["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(cpu_step.LR))
    state = jax.device_put(state, replicated)

    step_fn = jax.jit(cpu_step.jax_train_step(model), in_shardings=(replicated, split, split),
                      out_shardings=(replicated, replicated), donate_argnums=0)
    step = cpu_step.jax_stepper(step_fn, state, x, y)
    times, losses, busy = cpu_step._timed_loop(step, steps + warmup, warmup)
    return {"version": f"jax {jax.__version__}", "step_times_s": times, "losses": losses, "busy_cores": busy}


def run_jax(devices, args, cores, tmp):
    if importlib.util.find_spec("jax") is None or importlib.util.find_spec("flax") is None:
        return {"skipped": "jax/flax not installed (pip install -r tests/bench/requirements.txt)"}
    env = cpu_step.child_env(args.threads)
    env["JAX_PLATFORMS"] = "cpu"
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices} --xla_cpu_multi_thread_eigen=true"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker-devices", str(devices), "--steps", str(args.steps),
           "--warmup", str(args.warmup)]
    out, err = tmp / f"jax{devices}.out", tmp / f"jax{devices}.err"
    print(f"[jax, {devices} device(s)] running in a fresh process ...", flush=True)
    code, rss, wall, cpu = cpu_step.run_child(cmd, env, cores, args.timeout, out, err)
    if code != 0:
        return {"error": f"exit {code}\n{cpu_step._tail(err)}"}
    for line in out.read_text(errors="replace").splitlines():
        if line.startswith("RESULT:"):
            r = json.loads(line[len("RESULT:"):])
            r["median_step_s"] = statistics.median(r["step_times_s"][args.warmup:])
            return r
    return {"error": "no RESULT line\n" + cpu_step._tail(err)}


def run_shardlab(args, cores, tmp):
    exe = Path(args.build) / "tests" / "bench" / "spmd_overhead"
    if not exe.is_absolute():
        exe = cpu_step.REPO / exe
    if not exe.is_file():
        return {"skipped": f"{exe} not built"}
    cmd = [str(exe), "--devices", str(args.devices), "--threads", str(args.threads), "--steps", str(args.steps)]
    print(f"[shardlab] {' '.join(cmd)}", flush=True)
    out, err = tmp / "shardlab.out", tmp / "shardlab.err"
    code, rss, wall, cpu = cpu_step.run_child(cmd, cpu_step.child_env(args.threads), cores, args.timeout, out, err)
    text = out.read_text(errors="replace")
    if code != 0:
        return {"error": f"exit {code}\n{cpu_step._tail(err)}"}
    one = re.search(r"1 device:\s+([\d.]+) ms", text)
    many = re.search(r"devices \(data=\d+\):\s+([\d.]+) ms per step, of which ([\d.]+) ms in collectives", text)
    if not one or not many:
        return {"error": "unexpected output:\n" + text}
    return {"one_s": float(one.group(1)) / 1e3, "many_s": float(many.group(1)) / 1e3,
            "comm_s": float(many.group(2)) / 1e3, "output": text}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--peers", default="shardlab,jax")
    ap.add_argument("--rounds", type=int, default=3, help="run the peers in turns this many times; the median round's ratio counts")
    ap.add_argument("--worker-devices", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker_devices:
        print("RESULT:" + json.dumps(worker_jax(args.worker_devices, args.steps, args.warmup)), flush=True)
        return 0
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    cores = cpu_step.pinned_cores(args.threads)
    peers = args.peers.split(",")
    # Per peer, each round's (1-device step, N-device step, note). The peers run in turns, round after
    # round, and each one's ratio is the median of its rounds': this machine's speed drifts by 10-20%
    # over minutes, and one round's 1-device and N-device steps can fall on either side of a change.
    runs = {"shardlab": [], "jax": []}
    with tempfile.TemporaryDirectory(prefix="shardlab-spmd-") as d:
        tmp = Path(d)
        for k in range(args.rounds):
            if args.rounds > 1:
                print(f"-- round {k + 1} of {args.rounds}", flush=True)
            if "shardlab" in peers:
                s = run_shardlab(args, cores, tmp)
                if "one_s" in s:
                    runs["shardlab"].append((s["one_s"], s["many_s"], f"{s['comm_s'] * 1e3:.0f} ms in collectives per device"))
                else:
                    print(f"shardlab: {s.get('skipped') or s.get('error')}")
            if "jax" in peers:
                one, many = run_jax(1, args, cores, tmp), run_jax(args.devices, args, cores, tmp)
                if "median_step_s" in one and "median_step_s" in many:
                    runs["jax"].append((one["median_step_s"], many["median_step_s"], one["version"]))
                else:
                    for r in (one, many):
                        if "median_step_s" not in r:
                            print(f"jax: {r.get('skipped') or r.get('error')}")
    rows = []
    for name, got in runs.items():
        if got:
            # The round whose ratio is the median of the rounds'.
            ranked = sorted(got, key=lambda r: r[1] / r[0])
            rows.append((name, *ranked[len(ranked) // 2]))
    print()
    if args.rounds > 1:
        for name, got in runs.items():
            if got:
                print(f"{name} per round: " + ", ".join(f"{m * 1e3:.0f}/{o * 1e3:.0f} ms = {m / o:.2f}x" for o, m, _ in got))
    print(f"deep-mlp-small, batch {cpu_step.BATCH}, data={args.devices} vs 1 device, {args.threads} cores"
          f" ({'pinned' if cores else 'not pinned'}), median of {args.steps} steps after {args.warmup} warm-up"
          + (f"; the round of the median ratio of {args.rounds}" if args.rounds > 1 else ""))
    print(f"{'peer':10s} {'1 device ms':>12s} {f'{args.devices} devices ms':>14s} {'ratio':>7s}  note")
    for name, one, many, note in rows:
        print(f"{name:10s} {one * 1e3:12.1f} {many * 1e3:14.1f} {many / one:6.2f}x  {note}")
    sl = next((r for r in rows if r[0] == "shardlab"), None)
    if sl:
        ratio = sl[2] / sl[1]
        print(f"\ntarget: shardlab {args.devices} devices <= 1.5x its 1-device step ({ratio:.2f}x): "
              f"{'PASS' if ratio <= 1.5 else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
