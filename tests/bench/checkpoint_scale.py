#!/usr/bin/env python3
"""Checkpoint save and restore over 1, 2 and 4 processes: does each process's cost follow its own
share of the state, or the whole model? deep-mlp-small (31.5 M parameters, 378 MB of parameters and
Adam state) under FSDP on a mesh of 4 devices (data=4, rules batch=data,embed=data), run as 1
process of 4 virtual devices, 2 of 2 or 4 of 1 (mpirun).

For each process count it runs, per round (the fastest of --rounds is kept):
  plain    train --steps 1                             (no checkpoint)
  save     train --steps 1 --checkpoint-dir D          (the same, and a save at the end)
  plain2   train --steps 2                             (no checkpoint)
  restore  train --steps 2 --resume-from D/step_000001 (a restore, then the same one step)
Every process runs under /usr/bin/time, which gives its peak RSS. The save's cost is save - plain
(wall seconds, and each process's peak RSS above the plain run's); the restore's is restore - plain2.
The table shows them beside the largest process's file in the checkpoint (its share).

With --baseline-cli, a second shardlab-cli (an older build, say) runs the same, for a before/after
in one run. With --width W --depth D the model is deep-mlp-small's kind with D layers of W (D * W^2
parameters, 12 bytes each with Adam's state): --width 4096 --depth 30 is 6 GB.

    python3 tests/bench/checkpoint_scale.py [--build build] [--baseline-cli PATH] [--rounds 2]
                                            [--width W --depth D] [--processes 1,2,4]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024


def run(cli, processes, args, tmp):
    """Wall seconds and every process's peak RSS (MiB) of one shardlab-cli run."""
    # Each process's figure goes to a file of its own (mpirun would interleave their stderr).
    peaks_dir = tempfile.mkdtemp(dir=tmp)
    timed = ["sh", "-c", f'exec /usr/bin/time -o "{peaks_dir}/rank.${{OMPI_COMM_WORLD_RANK:-0}}" -f %M "$@"', "sh", cli, *args]
    if processes > 1:
        timed = ["mpirun", "--oversubscribe", "--allow-run-as-root", "--bind-to", "none", "-np", str(processes), *timed]
    start = time.perf_counter()
    r = subprocess.run(timed, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(timed)}\n{r.stderr[-3000:]}")
    peaks = [int(open(f).read().split()[-1]) / 1024 for f in sorted(glob.glob(f"{peaks_dir}/rank.*"))]
    shutil.rmtree(peaks_dir)
    if len(peaks) != processes:
        sys.exit(f"expected {processes} peak RSS figures, got {len(peaks)}")
    return wall, peaks


def measure(cli, processes, project, rounds, tmp):
    common = ["train", project, "--mesh", "data=4", "--rules", "batch=data,embed=data", "--quiet"]
    best = {}
    for _ in range(rounds):
        ck = tempfile.mkdtemp(dir=tmp)
        shutil.rmtree(ck)
        figures = {
            "plain": run(cli, processes, common + ["--steps", "1"], tmp),
            "save": run(cli, processes, common + ["--steps", "1", "--checkpoint-dir", ck], tmp),
            "plain2": run(cli, processes, common + ["--steps", "2"], tmp),
            "restore": run(cli, processes, common + ["--steps", "2", "--resume-from", f"{ck}/step_000001"], tmp),
        }
        files = [os.path.getsize(f) for f in glob.glob(f"{ck}/step_000001/*.safetensors")]
        for k, v in figures.items():
            if k not in best or v[0] < best[k][0]:
                best[k] = v
        best["files"] = files
        shutil.rmtree(ck)
    return best


def report(name, processes, b):
    def delta(a, z):  # each process's peak above the run without, the largest
        return max(x - y for x, y in zip(b[a][1], b[z][1]))

    largest = max(b["files"]) / MIB
    total = sum(b["files"]) / MIB
    print(f"{name:9s} {processes:3d} {len(b['files']):6d} {largest:10.1f} {total:9.1f} "
          f"{b['save'][0] - b['plain'][0]:8.2f} {b['restore'][0] - b['plain2'][0]:9.2f} "
          f"{max(b['plain'][1]):10.0f} {max(b['save'][1]):10.0f} {delta('save', 'plain'):8.0f} "
          f"{max(b['restore'][1]):10.0f} {delta('restore', 'plain2'):8.0f}")


def wide_project(width, depth, path):
    """deep-mlp-small's kind of model, `depth` Dense layers of `width`, on synthetic ones."""
    nodes = [{"name": "x", "type": "Input", "params": {"shape": [width], "axes": ["embed"]}}]
    edges, prev = [], "x"
    for i in range(depth):
        nodes += [{"name": f"layers_{i}", "type": "Dense", "params": {"features": width}}, {"name": f"relu_{i}", "type": "ReLU"}]
        edges += [{"from": f"{prev}.out", "to": f"layers_{i}.in"}, {"from": f"layers_{i}.out", "to": f"relu_{i}.in"}]
        prev = f"relu_{i}"
    nodes.append({"name": "output_layer", "type": "Dense", "params": {"features": 10}})
    edges.append({"from": f"{prev}.out", "to": "output_layer.in"})
    project = {"format": "shardlab.project", "version": 1, "name": f"mlp-{depth}x{width}",
               "graph": {"nodes": nodes, "edges": edges}, "loss": {"type": "mean_squared_error", "output": "output_layer"},
               "optimizer": {"type": "adam", "learning_rate": 1e-4},
               "data": {"type": "synthetic", "kind": "ones", "feature_shape": [width], "target_shape": [10], "examples": 64},
               "training": {"batch_size": 16, "steps": 2, "seed": 0, "eval": False}}
    Path(path).write_text(json.dumps(project))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--baseline-cli", help="another shardlab-cli to measure the same way (an older build)")
    ap.add_argument("--project", default=str(ROOT / "projects/deep-mlp-small.shardlab.json"))
    ap.add_argument("--processes", default="1,2,4")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--width", type=int, help="instead of --project: D layers of W (with --depth)")
    ap.add_argument("--depth", type=int, default=30)
    args = ap.parse_args()
    if args.width:
        args.project = f"{tempfile.gettempdir()}/checkpoint-scale-{args.depth}x{args.width}.shardlab.json"
        wide_project(args.width, args.depth, args.project)
    if not shutil.which("mpirun"):
        sys.exit("mpirun not found (apt install openmpi-bin)")
    if not os.path.exists("/usr/bin/time"):
        sys.exit("/usr/bin/time not found (apt install time)")
    clis = [("this", str(Path(args.build) / "app/shardlab-cli"))]
    if args.baseline_cli:
        clis.append(("baseline", args.baseline_cli))
    counts = [int(x) for x in args.processes.split(",")]
    print(f"{Path(args.project).name}, mesh data=4, rules batch=data,embed=data (FSDP); {os.cpu_count()} cores; "
          f"fastest of {args.rounds} rounds")
    print("seconds are wall time over the run without a checkpoint; MiB are the largest process's peak RSS, "
          "and the most any process rose above its run without")
    print(f"{'build':9s} {'np':>3s} {'files':>6s} {'file MiB':>10s} {'all MiB':>9s} {'save s':>8s} {'restore s':>9s} "
          f"{'RSS plain':>10s} {'RSS save':>10s} {'+save':>8s} {'RSS rest.':>10s} {'+restore':>8s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, cli in clis:
            for k in counts:
                report(name, k, measure(cli, k, args.project, args.rounds, tmp))


if __name__ == "__main__":
    main()
