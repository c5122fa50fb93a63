#!/usr/bin/env python3
"""How long shardlab-cli takes to answer (accept or refuse) inputs that are large in the ways that
once made it quadratic: a safetensors header of N empty tensors (inspect), a project of N unknown
keys (check), a chain of N ReLU nodes (check), a project whose description is one unbroken string
of N bytes (check). Each row doubles N or more, so the table shows how the time grows; the
target is an answer within 2 s at the largest size of each (300,000 tensors, 700,000 keys, 20,000
nodes, 1 MB). A benchmark, not a test: it times the real build and prints, and exits 0.

    python3 tests/bench/input_scale.py [--build build]
"""
from __future__ import annotations

import argparse
import json
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def small_project(nodes=None, edges=None, **extra):
    p = {"format": "shardlab.project", "version": 1, "name": "scale",
         "graph": {"nodes": nodes or [{"name": "x", "type": "Input", "params": {"shape": [8]}},
                                      {"name": "d", "type": "Dense", "params": {"features": 2}}],
                   "edges": edges or [{"from": "x.out", "to": "d.in"}]},
         "loss": {"type": "mean_squared_error", "output": "d"}, "optimizer": {"type": "sgd", "learning_rate": 0.1},
         "data": {"type": "synthetic", "kind": "ones", "feature_shape": [8], "target_shape": [2], "examples": 16},
         "training": {"batch_size": 8, "steps": 1}}
    p.update(extra)
    return p


def header_checkpoint(cli, tmp, n):
    """A committed checkpoint whose model file is replaced by one of n empty tensors."""
    root = tmp / f"ck{n}"
    if not root.exists():
        proj = tmp / "tiny.shardlab.json"
        proj.write_text(json.dumps(small_project()))
        subprocess.run([cli, "train", str(proj), "--steps", "1", "--checkpoint-dir", str(root), "--quiet"], check=True,
                       capture_output=True)
    step = next(root.glob("step_*"))
    header = json.dumps({f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(n)}).encode()
    header += b" " * (-len(header) % 8)
    (step / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    return step


def keys_project(tmp, n):
    text = json.dumps(small_project())[:-1] + "".join(f', "k{i}": {i}' for i in range(n)) + "}"
    f = tmp / f"keys{n}.shardlab.json"
    f.write_text(text)
    return f


def chain_project(tmp, n):
    nodes = [{"name": "x", "type": "Input", "params": {"shape": [8]}}]
    edges, prev = [], "x"
    for i in range(n):
        nodes.append({"name": f"r{i}", "type": "ReLU"})
        edges.append({"from": f"{prev}.out", "to": f"r{i}.in"})
        prev = f"r{i}"
    nodes.append({"name": "d", "type": "Dense", "params": {"features": 2}})
    edges.append({"from": f"{prev}.out", "to": "d.in"})
    f = tmp / f"chain{n}.shardlab.json"
    f.write_text(json.dumps(small_project(nodes, edges)))
    return f


def description_project(tmp, n):
    f = tmp / f"desc{n}.shardlab.json"
    f.write_text(json.dumps(small_project(description="w" * n)))
    return f


def timed(cmd):
    t0 = time.perf_counter()
    cp = subprocess.run(cmd, capture_output=True, text=True)
    s = time.perf_counter() - t0
    said = (cp.stderr.strip().splitlines() or cp.stdout.strip().splitlines() or [""])[-1]
    return s, cp.returncode, said


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    cli = str((REPO / args.build / "app" / "shardlab-cli") if not Path(args.build).is_absolute() else Path(args.build) / "app" / "shardlab-cli")
    if not Path(cli).exists():
        print(f"no shardlab-cli at {cli}: build first")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="shardlab-scale-"))
    rows = []
    try:
        for n in (25000, 100000, 300000):
            step = header_checkpoint(cli, tmp, n)
            rows.append(("safetensors header, tensors", n, *timed([cli, "inspect", str(step)])))
        for n in (100000, 300000, 700000):
            rows.append(("project, unknown keys", n, *timed([cli, "check", str(keys_project(tmp, n))])))
        for n in (5000, 10000, 20000):
            rows.append(("ReLU chain, nodes", n, *timed([cli, "check", str(chain_project(tmp, n))])))
        for n in (65536, 262144, 1 << 20):
            rows.append(("description, bytes", n, *timed([cli, "check", str(description_project(tmp, n))])))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'input':30} {'size':>9} {'seconds':>8} {'exit':>5}  answer")
    for what, n, s, rc, said in rows:
        print(f"{what:30} {n:9d} {s:8.2f} {rc:5d}  {said[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
