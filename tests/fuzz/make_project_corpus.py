#!/usr/bin/env python3
"""Writes the seed corpus of tests/fuzz/project_fuzzer.cpp into corpus/project/ beside it.

    python3 tests/fuzz/make_project_corpus.py

valid-*.json are projects the loader accepts: the shipped examples (projects/, but deep-mlp, whose
Repeat of Dense layers teaches nothing dot-relu-dot's Repeat does not), and variants that reach
every layer type, optimizer, schedule, data source, mesh and rule form, the constraint fallbacks
and the editor section. bad-*.json each break one rule. The default suite replays every file
(CTest project_corpus). The outputs are committed; rerun after changing this script. Needs only
the standard library.
"""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "corpus", "project")


def load(path):
    with open(os.path.join(ROOT, path)) as f:
        return json.load(f)


def node(name, type_, params=None, **extra):
    n = {"name": name, "type": type_}
    if params:
        n["params"] = params
    n.update(extra)
    return n


def edge(a, b):
    return {"from": a, "to": b}


def project(nodes, edges, output, loss="softmax_cross_entropy", data=None, **sections):
    p = {
        "format": "shardlab.project",
        "version": 1,
        "name": "seed",
        "graph": {"nodes": nodes, "edges": edges},
        "loss": {"type": loss, "output": output},
        "optimizer": {"type": "sgd", "learning_rate": 0.1},
        "data": data or {"type": "synthetic", "kind": "blobs", "feature_shape": [6], "classes": 3, "examples": 24},
        "training": {"batch_size": 4, "steps": 2},
    }
    p.update(sections)
    return p


def every_layer():
    nodes = [
        node("x", "Input", {"shape": [2, 3], "axes": ["height", "width"]}),
        node("flat", "Flatten"),
        node("ln", "LayerNorm", {"epsilon": 1e-5, "use_scale": True, "use_bias": False}),
        node("d1", "Dense", {"features": 6}, param_axes={"kernel": ["embed", "mlp"]}, output_axes=["batch", "mlp"]),
        node("gelu", "GELU"),
        node("tanh", "Tanh"),
        node("drop", "Dropout", {"rate": 0.1}),
        node("sum", "Add"),
        node("block", "Repeat", {"count": 2}, body={
            "nodes": [node("W", "Dense", {"features": 6}), node("r", "ReLU")],
            "edges": [edge("@in.out", "W.in"), edge("W.out", "r.in")],
            "output": "r"}),
        node("head", "Dense", {"features": 3, "use_bias": True}),
    ]
    edges = [edge("x.out", "flat.in"), edge("flat.out", "ln.in"), edge("ln.out", "d1.in"), edge("d1.out", "gelu.in"),
             edge("gelu.out", "tanh.in"), edge("tanh.out", "drop.in"), edge("drop.out", "sum.a"), edge("d1.out", "sum.b"),
             edge("sum.out", "block.in"), edge("block.out", "head.in")]
    data = {"type": "synthetic", "kind": "blobs", "feature_shape": [2, 3], "classes": 3, "examples": 32, "seed": 7}
    return project(nodes, edges, "head", data=data)


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):  # crash-* files are the fuzzer's findings, kept as regressions
        if f.startswith(("valid-", "bad-")):
            os.remove(os.path.join(OUT, f))
    seeds = {}
    for name in ("fashion-mlp", "deep-mlp-small", "dot-relu-dot"):
        seeds["valid-" + name] = load(f"projects/{name}.shardlab.json")
    seeds["valid-dot-relu-dot-small"] = load("tests/reference/dot-relu-dot-small.shardlab.json")

    base = every_layer()
    seeds["valid-every-layer"] = base

    def variant(name, change):
        p = copy.deepcopy(base)
        change(p)
        seeds[name] = p

    variant("valid-adam-schedule", lambda p: p.update(optimizer={
        "type": "adam", "b1": 0.9, "b2": 0.99, "eps": 1e-7, "learning_rate": {
            "schedule": "warmup_cosine_decay", "init_value": 0, "peak_value": 0.01, "end_value": 0.001,
            "warmup_steps": 2, "decay_steps": 10}}))
    variant("valid-adamw", lambda p: p.update(optimizer={"type": "adamw", "weight_decay": 0.01,
                                                          "learning_rate": {"schedule": "constant", "value": 0.002}}))
    variant("valid-sgd-nesterov", lambda p: p.update(optimizer={"type": "sgd", "momentum": 0.9, "nesterov": True}))
    variant("valid-mesh-rules", lambda p: p.update(
        mesh={"axes": {"data": 2, "model": 2}},
        logical_axis_rules=[["batch", "data"], ["mlp", "model"], ["embed", None], ["layer", None]],
        constraint_fallback="error"))
    variant("valid-two-axis-rule", lambda p: p.update(mesh={"axes": {"data": 2, "model": 2}},
                                                      logical_axis_rules=[["batch", ["data", "model"]]],
                                                      constraint_fallback="no_constraint"))
    variant("valid-editor-epochs", lambda p: p.update(
        editor={"positions": {"x": [0, 0], "head": [300, 40]}},
        training={"batch_size": 8, "epochs": 2, "seed": 3, "shuffle": False, "prefetch": 0, "eval": True}))
    variant("valid-mse-npy", lambda p: (p.update(data={"type": "npy", "features": "x.npy", "targets": "y.npy",
                                                       "test_fraction": 0.25, "scale": 0.5}),
                                        p["loss"].update(type="mean_squared_error")))
    variant("valid-idx", lambda p: p.update(data={"type": "idx", "train_images": "a.idx", "train_labels": "b.idx.gz",
                                                  "test_images": "c.idx", "test_labels": "d.idx"}))

    # One broken rule each.
    variant("bad-unknown-layer", lambda p: p["graph"]["nodes"][3].update(type="Conv"))
    variant("bad-dangling-edge", lambda p: p["graph"]["edges"].append(edge("nowhere.out", "head.in")))
    variant("bad-cycle", lambda p: p["graph"]["edges"].append(edge("head.out", "ln.in")))
    variant("bad-repeat-count", lambda p: p["graph"]["nodes"][8]["params"].update(count=0))
    variant("bad-huge-features", lambda p: p["graph"]["nodes"][3]["params"].update(features=1 << 62))
    variant("bad-loss-output", lambda p: p["loss"].update(output="missing"))
    variant("bad-mesh-size", lambda p: p.update(mesh={"axes": {"data": -2}}))
    variant("bad-rule-shape", lambda p: p.update(logical_axis_rules=[["batch"]]))
    variant("bad-output-axes-rank", lambda p: p["graph"]["nodes"][3].update(output_axes=["batch", "mlp", "extra"]))
    variant("bad-version", lambda p: p.update(version=2))
    variant("bad-training-zero", lambda p: p.update(training={"steps": 0, "epochs": 0}))

    for name, p in seeds.items():
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(p, f, indent=1)
            f.write("\n")
    raw = {
        "bad-not-json": b'{"format": "shardlab.project", "version": 1,',
        "bad-deep-nesting": b"[" * 300 + b"]" * 300,
        "bad-empty": b"",
        "bad-number-overflow": b'{"format": "shardlab.project", "version": 1, "name": 1e4073709551616}',
        # A key twice in one object: refused, where a parser keeping one would read either value.
        "bad-duplicate-key": b'{"format": "shardlab.project", "version": 1, "name": "a", "name": "b"}',
    }
    for name, b in raw.items():
        with open(os.path.join(OUT, name + ".json"), "wb") as f:
            f.write(b)
    print(f"{len(seeds) + len(raw)} files in {OUT}")


if __name__ == "__main__":
    main()
