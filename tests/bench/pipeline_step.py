#!/usr/bin/env python3
"""Pipeline stages against data parallelism and FSDP: seed 003's deep MLP on 8 virtual CPU devices,
in the same run on the same cores. For each layout: the median step time (from the JSONL log), the
memory per device the plan gives (shard --json: the largest device's, and per stage for a
pipeline), and for the pipelines the bubble: the formula (S-1)/(M+S-1) against the share of each
stage's step its devices spent waiting in recv for a neighbouring stage (from --trace).

deep-mlp's Repeat has 89 layers, which no stage count divides; this bench runs it with 88 (89 dense
layers in all), narrower layers (--width, default 1024: eight data-parallel replicas of the 2056-wide
model and their Adam state outgrow a 23 GiB host) and a smaller batch (--batch-size, default 512).
Virtual devices share the host's cores, and a device waiting for its neighbour lends its core to
the others (ThreadBudget): the bubble shows in the trace but costs less wall time than on GPUs.

    python3 tests/bench/pipeline_step.py [--build build] [--steps 6] [--warmup 2] [--batch-size 512]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LAYOUTS = [
    # name, mesh, rules, microbatches, schedule
    ("data parallel", "data=8", "batch=data", 1, None),
    ("FSDP", "data=8", "batch=data,embed=data", 1, None),
    ("pipeline 4 stages x 2 data, GPipe", "stage=4,data=2", "layer=stage,batch=data", 8, "gpipe"),
    ("pipeline 4 stages x 2 data, 1F1B", "stage=4,data=2", "layer=stage,batch=data", 8, "1f1b"),
]


def project_file(tmp: str, batch: int, width: int) -> str:
    p = json.load(open(ROOT / "projects/deep-mlp.shardlab.json"))
    for n in p["graph"]["nodes"]:
        if n["type"] == "Repeat":
            n["params"]["count"] = 88
            for b in n["body"]["nodes"]:
                if b["type"] == "Dense":
                    b["params"]["features"] = width
        elif n["type"] == "Dense" and n["name"] != "output_layer":
            n["params"]["features"] = width
    p["training"]["batch_size"] = batch
    p["data"]["examples"] = batch * 4
    path = f"{tmp}/deep-mlp-88.shardlab.json"
    json.dump(p, open(path, "w"))
    return path


def recv_share(trace_path: str, warmup: int, stage_of: dict[int, int]) -> dict[int, float]:
    """Per stage: time in recv spans over the step's wall time, medians over the timed steps."""
    events = json.load(open(trace_path))
    events = events["traceEvents"] if isinstance(events, dict) else events
    waits: dict[tuple[int, int], float] = {}
    walls: dict[tuple[int, int], float] = {}
    for e in events:
        if e.get("ph") != "X":
            continue
        args = e.get("args", {})
        step = args.get("step")
        dev = (e.get("tid", 1) - 1) // 2  # the trace's track: 1 + 2 * device (+1 for its data track)
        if step is None or step < warmup:
            continue
        if e.get("cat") == "step":
            walls[(step, dev)] = walls.get((step, dev), 0.0) + e["dur"]
        elif e.get("name") == "recv":
            waits[(step, dev)] = waits.get((step, dev), 0.0) + e["dur"]
    per_stage: dict[int, list[float]] = {}
    for key, wall in walls.items():
        per_stage.setdefault(stage_of.get(key[1], -1), []).append(waits.get(key, 0.0) / wall)
    return {s: statistics.median(v) for s, v in sorted(per_stage.items())}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--width", type=int, default=1024, help="the layers' width (deep-mlp's is 2056)")
    args = ap.parse_args()
    cli = str(Path(args.build) / "app/shardlab-cli")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "CPU")
    with tempfile.TemporaryDirectory() as tmp:
        project = project_file(tmp, args.batch_size, args.width)
        print(f"deep-mlp with 88 repeated layers of width {args.width}, batch {args.batch_size}, 8 virtual devices, {args.steps} steps "
              f"({args.warmup} warm-up) on {cpu}")
        print(f"{'layout':40s} {'step ms':>9s} {'per device':>11s}  stage arenas / bubble")
        base = None
        for name, mesh, rules, m, schedule in LAYOUTS:
            extra = ["--microbatches", str(m)] + (["--pipeline-schedule", schedule] if schedule else [])
            shard = json.loads(subprocess.run([cli, "shard", project, "--mesh", mesh, "--rules", rules, "--json", *extra],
                                              check=True, capture_output=True, text=True).stdout)
            per_device = max(d["total"] for d in shard["devices"])
            log, trace = f"{tmp}/{len(name)}.jsonl", f"{tmp}/{len(name)}.trace.json"
            subprocess.run([cli, "train", project, "--steps", str(args.steps), "--mesh", mesh, "--rules", rules, "--quiet",
                            "--log", log, "--trace", trace, *extra], check=True, stdout=subprocess.DEVNULL)
            steps = [json.loads(l) for l in open(log) if json.loads(l).get("event") == "step"]
            step = statistics.median(s["step_time_s"] for s in steps[args.warmup:])
            base = base or step
            note = ""
            if "pipeline" in shard:
                pipe = shard["pipeline"]
                # Device d's stage: its coordinate along the stage axis (row-major mesh order).
                names, sizes = list(shard["mesh"].keys()), list(shard["mesh"].values())
                k = names.index(pipe["axis"])
                inner = 1
                for s in sizes[k + 1:]:
                    inner *= s
                stage_of = {d: (d // inner) % sizes[k] for d in range(len(shard["devices"]))}
                waits = recv_share(trace, args.warmup, stage_of)
                arenas = " ".join(f"{s['arena_bytes'] / 2**20:.0f}" for s in pipe["per_stage"])
                measured = " ".join(f"{100 * w:.0f}%" for w in waits.values())
                note = (f"arenas MiB [{arenas}]; bubble formula {100 * pipe['bubble']:.0f}%, "
                        f"waiting in recv per stage [{measured}]")
            print(f"{name:40s} {step * 1e3:9.1f} {per_device / 2**20:9.1f} MiB  {note}  ({step / base:.2f}x data parallel)")


if __name__ == "__main__":
    main()
