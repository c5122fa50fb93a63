#!/usr/bin/env python3
"""How compile time grows with a model's depth: `shardlab-cli check` and `shardlab-cli shard` on
projects/deep-mlp.shardlab.json with its Repeat at N layers and batch 64, on one device and on a
data x model = 4 x 2 mesh (FSDP-like rules). Both build the step, partition it and plan its
memory; check also runs the design check. Each row doubles N, so the table shows the growth; the
target is 1600 layers within 1 s and 3200 within 2.2 x 1600 (linear, with room for noise). A wide
deep model is refused for memory on this machine: the refusal is the answer being timed. A
benchmark, not a test: it times the real build and prints, and exits 0.

    python3 tests/bench/compile_scale.py [--build build] [--layers 400,800,1600,3200] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

MESHES = {
    "1 device": None,
    "data 4 x model 2": ({"axes": {"data": 4, "model": 2}},
                         [["batch", "data"], ["hidden", "model"], ["embed", "data"], ["layer", None]]),
}


def deep_project(tmp: Path, layers: int, mesh) -> Path:
    p = json.loads((REPO / "projects" / "deep-mlp.shardlab.json").read_text())
    for node in p["graph"]["nodes"]:
        if node["type"] == "Repeat":
            node["params"]["count"] = layers
    p["training"]["batch_size"] = 64
    if mesh:
        p["mesh"], p["logical_axis_rules"] = mesh
    f = tmp / f"deep-{layers}-{len(p.get('mesh', {}).get('axes', {}))}.shardlab.json"
    f.write_text(json.dumps(p))
    return f


def timed(cmd: list[str], repeat: int) -> tuple[float, int]:
    times, rc = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, capture_output=True).returncode
        times.append(time.perf_counter() - t0)
    return statistics.median(times), rc


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--layers", default="400,800,1600,3200")
    ap.add_argument("--repeat", type=int, default=3, help="runs per cell; the median is shown")
    args = ap.parse_args()
    cli = str(Path(args.build) / "app" / "shardlab-cli")
    layers = [int(x) for x in args.layers.split(",")]
    print(f"{cpu_name()}, {os.cpu_count()} CPUs; median of {args.repeat} runs; exit 1 = refused (memory), timed all the same")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for mesh_name, mesh in MESHES.items():
            print(f"\n{mesh_name}")
            print(f"{'layers':>7} {'check s':>9} {'x prev':>7} {'rc':>3} {'shard s':>9} {'x prev':>7} {'rc':>3}")
            prev = None
            for n in layers:
                f = str(deep_project(tmp, n, mesh))
                check, crc = timed([cli, "check", f], args.repeat)
                shard, src = timed([cli, "shard", f], args.repeat)
                grow = ("", "") if prev is None else (f"{check / prev[0]:.2f}", f"{shard / prev[1]:.2f}")
                print(f"{n:>7} {check:>9.3f} {grow[0]:>7} {crc:>3} {shard:>9.3f} {grow[1]:>7} {src:>3}")
                prev = (check, shard)
    print("\ntarget: 1600 layers <= 1 s; 3200 / 1600 <= 2.2 (each row doubles the layers)")


if __name__ == "__main__":
    main()
