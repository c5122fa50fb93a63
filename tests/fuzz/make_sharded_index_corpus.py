#!/usr/bin/env python3
"""Writes the seed corpus of tests/fuzz/sharded_index_fuzzer.cpp into corpus/sharded_index/.

    python3 tests/fuzz/make_sharded_index_corpus.py [BUILD_DIR]     # default: build

The valid seed is the index the engine's own write_model wrote for the fuzzer's fixed model: the
script runs BUILD_DIR/tests/fuzz/sharded_index_replay (build it first) with
SHARDLAB_FUZZ_WRITE_INDEX set, which copies that index out. valid-*.json vary it in ways the reader
accepts; bad-*.json each break one rule the reader checks (engine/checkpoint/sharded.h). The
default suite replays every file (CTest sharded_index_corpus). The outputs are committed; rerun
after changing this script or the fixture. Needs only the standard library.
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "corpus", "sharded_index")


def written_by_engine(build):
    replay = os.path.join(build, "tests", "fuzz", "sharded_index_replay")
    if not os.path.exists(replay):
        sys.exit(f"{replay}: not built (ninja -C {build} sharded_index_replay)")
    with tempfile.TemporaryDirectory() as tmp:
        out, empty = os.path.join(tmp, "index.json"), os.path.join(tmp, "empty")
        open(empty, "wb").close()
        subprocess.run([replay, empty], check=True, env=dict(os.environ, SHARDLAB_FUZZ_WRITE_INDEX=out),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out, "rb") as f:
            return f.read()


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
    real = written_by_engine(build)
    base = json.loads(real)
    wm = base["weight_map"]
    names, shards = list(wm), sorted(set(wm.values()))
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    files = {"valid-written-by-engine": real}

    def variant(name, change):
        j = copy.deepcopy(base)
        change(j)
        files[name] = (json.dumps(j, indent=1) + "\n").encode()

    variant("valid-no-metadata", lambda j: j.pop("metadata"))
    variant("valid-no-total-size", lambda j: j["metadata"].pop("total_size"))
    variant("valid-reordered", lambda j: j.update(weight_map=dict(reversed(list(j["weight_map"].items())))))
    variant("valid-extra-metadata", lambda j: j["metadata"].update(format="pt", note={"any": [1, 2]}))

    variant("bad-wrong-total-size", lambda j: j["metadata"].update(total_size=j["metadata"]["total_size"] + 1))
    variant("bad-negative-total-size", lambda j: j["metadata"].update(total_size=-1))
    variant("bad-float-total-size", lambda j: j["metadata"].update(total_size=1.5))
    variant("bad-total-size-over-u64", lambda j: j["metadata"].update(total_size=18446744073709551616))
    variant("bad-metadata-list", lambda j: j.update(metadata=[1]))
    variant("bad-weight-map-list", lambda j: j.update(weight_map=list(j["weight_map"])))
    variant("bad-no-weight-map", lambda j: j.pop("weight_map"))
    variant("bad-tensor-missing", lambda j: j["weight_map"].pop(names[0]))
    variant("bad-tensor-not-in-shards", lambda j: j["weight_map"].update(ghost=shards[0]))
    variant("bad-tensor-in-wrong-shard", lambda j: j["weight_map"].update({names[0]: shards[-1]}))
    variant("bad-shard-missing", lambda j: j["weight_map"].update({names[0]: "model-00009-of-00009.safetensors"}))
    variant("bad-shard-unlisted", lambda j: j.update(weight_map={n: s for n, s in wm.items() if s != shards[-1]}))
    variant("bad-path-traversal", lambda j: j["weight_map"].update({names[0]: "../" + shards[0]}))
    variant("bad-absolute-path", lambda j: j["weight_map"].update({names[0]: "/etc/passwd"}))
    variant("bad-backslash", lambda j: j["weight_map"].update({names[0]: "..\\" + shards[0]}))
    variant("bad-dot-dot", lambda j: j["weight_map"].update({names[0]: ".."}))
    variant("bad-empty-shard-name", lambda j: j["weight_map"].update({names[0]: ""}))
    variant("bad-shard-not-string", lambda j: j["weight_map"].update({names[0]: 1}))
    variant("bad-single-file-name", lambda j: j["weight_map"].update({names[0]: "model.safetensors"}))
    raw = {
        "bad-tensor-twice": ('{"weight_map": {"%s": "%s", "%s": "%s"}}' % (names[0], wm[names[0]], names[0], shards[-1])).encode(),
        "bad-duplicate-metadata": b'{"metadata": {}, "metadata": {}, "weight_map": {}}',
        "bad-nul-in-shard-name": ('{"weight_map": {"%s": "%s\\u0000x"}}' % (names[0], wm[names[0]])).encode(),
        "bad-not-object": b'["weight_map"]',
        "bad-malformed": real[: len(real) // 2],
        "bad-deep-nesting": b'{"metadata": ' + b"[" * 2000 + b"]" * 2000 + b', "weight_map": {}}',
        "bad-empty": b"",
    }
    files.update(raw)
    for name, data in files.items():
        with open(os.path.join(OUT, name + ".json"), "wb") as f:
            f.write(data)
    print(f"{len(files)} files in {OUT}")


if __name__ == "__main__":
    main()
