#!/usr/bin/env python3
"""Processes against threads: deep-mlp-small data-parallel on 2 devices, run as 2 processes of 1
device each under mpirun (collectives over MPI) and as 1 process of 2 virtual devices (collectives
through shared memory), in the same run on the same cores. Reports each layout's median step time,
the ratio, and the time the devices spent in collectives (the log's comm_time_s), and checks that both
trained the same losses. --mesh/--rules/--microbatches time another layout the same way, e.g.
pipeline stages over processes (stages' activations as MPI messages):

    python3 tests/bench/mpi_step.py [--build build] [--steps 12] [--warmup 2] [--project P]
    python3 tests/bench/mpi_step.py --mesh stage=2 --rules layer=stage --microbatches 4 --project projects/dot-relu-dot.shardlab.json
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(cmd, log):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    steps = [json.loads(line) for line in open(log) if '"event": "step"' in line or '"event":"step"' in line]
    return steps


def summarize(name, steps, warmup):
    timed = steps[warmup:]
    step = statistics.median(s["step_time_s"] for s in timed)
    comm = statistics.median(s.get("comm_time_s", 0.0) for s in timed)
    print(f"{name:32s} step {step * 1e3:8.1f} ms   in collectives {comm * 1e3:8.1f} ms ({100 * comm / step:4.1f}%)")
    return step, comm


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--project", default=str(ROOT / "projects/deep-mlp-small.shardlab.json"))
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--mesh", default="data=2", help="a mesh of 2 devices (one per process)")
    ap.add_argument("--rules", default="batch=data")
    ap.add_argument("--microbatches", type=int, default=1)
    args = ap.parse_args()
    cli = str(Path(args.build) / "app/shardlab-cli")
    mpirun = shutil.which("mpirun")
    if not mpirun:
        sys.exit("mpirun not found (apt install openmpi-bin)")
    cores = os.cpu_count() or 1
    common = ["train", args.project, "--steps", str(args.steps), "--mesh", args.mesh, "--rules", args.rules, "--quiet",
              "--microbatches", str(args.microbatches)]
    with tempfile.TemporaryDirectory() as tmp:
        one_log, two_log = f"{tmp}/threads.jsonl", f"{tmp}/processes.jsonl"
        one = run([cli, *common, "--threads", str(cores), "--log", one_log], one_log)
        two = run([mpirun, "--oversubscribe", "--allow-run-as-root", "--bind-to", "none", "-np", "2", cli, *common, "--log",
                   two_log], two_log)
    print(f"{Path(args.project).name}, {args.mesh} ({args.rules}), {args.microbatches} microbatches, {args.steps} steps "
          f"({args.warmup} warm-up), {cores} cores shared by both layouts")
    t1, _ = summarize("1 process x 2 devices (threads)", one, args.warmup)
    t2, _ = summarize("2 processes x 1 device (MPI)", two, args.warmup)
    print(f"ratio processes / threads: {t2 / t1:.2f}x")
    same = [a["loss"] for a in one] == [b["loss"] for b in two]
    print("losses: " + ("bitwise equal" if same else "DIFFER"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
