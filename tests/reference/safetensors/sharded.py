#!/usr/bin/env python3
"""Reads a sharded Shardlab checkpoint the way Hugging Face tools do, for test_sharded_checkpoint.cpp.

    sharded.py DIR OUT   load DIR/model.safetensors.index.json; open every shard it names with
                         safetensors (numpy), check each holds exactly the tensors the index places
                         there and that total_size is their byte count; write all tensors, merged,
                         to OUT with safetensors.numpy.save_file; print one line per shard, then "OK".
                         Exits with status 1 and the problems otherwise.
"""
import json
import os
import sys

from safetensors import safe_open
from safetensors.numpy import load_file, save_file


def main(directory, out):
    with open(os.path.join(directory, "model.safetensors.index.json"), encoding="utf-8") as f:
        index = json.load(f)
    by_shard = {}
    for name, shard in index["weight_map"].items():
        by_shard.setdefault(shard, set()).add(name)
    problems, merged, total = [], {}, 0
    for shard, names in sorted(by_shard.items()):
        path = os.path.join(directory, shard)
        with safe_open(path, framework="numpy") as f:
            keys = set(f.keys())
        if keys != names:
            problems.append(f"{shard}: holds {sorted(keys ^ names)} against the index")
        tensors = load_file(path)
        for name, value in tensors.items():
            if name in merged:
                problems.append(f"{shard}: {name} is in two shards")
            merged[name] = value
            total += value.nbytes
        print(f"{shard}: {len(tensors)} tensors")
    if index.get("metadata", {}).get("total_size") != total:
        problems.append(f"total_size {index.get('metadata', {}).get('total_size')} != {total}")
    if problems:
        print("\n".join(problems))
        return 1
    save_file(merged, out)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
