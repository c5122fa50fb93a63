#!/usr/bin/env python3
"""Write Flax's own logical-sharding results for seed 002's model to expected.json.

Seed 002 is the Flax guide "Scale up Flax Modules on multiple devices with pjit": a 2x4 device
mesh ('data', 'model'), a DotReluDot block with logically partitioned W1 ('embed', 'hidden') and
W2 ('hidden', 'embed'), activation constraints y ('batch', 'hidden') and z ('batch', 'embed'),
stacked 4 times with nn.scan (metadata_params={nn.PARTITION_NAME: 'layer'}), input x (8, 1024)
with logical axes ('batch', 'embed').

For each rule set it records, for every parameter, the input x and the two activation constraints:
the logical axes, the PartitionSpec Flax derives (nn.logical_to_mesh_axes /
nn.logical_to_mesh_sharding), the global shape, the per-device shard shape
(NamedSharding.shard_shape) and the slice each mesh position holds (NamedSharding.devices_indices_map).
It also checks the result against a real jitted init/apply on 8 host CPU devices, and records a table
of direct nn.logical_to_mesh_axes(names, rules) results that pin down the rule semantics.

Run from the repository root:
    python3 tests/reference/sharding/make_sharding_reference.py            # writes expected.json next to this file
    python3 tests/reference/sharding/make_sharding_reference.py --out FILE # somewhere else
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

# Must be set before jax is imported: 8 fake CPU devices for the 2x4 mesh.
os.environ["JAX_PLATFORMS"] = "cpu"
if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    ).strip()

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.experimental import mesh_utils  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

import flax  # noqa: E402
import flax.linen as nn  # noqa: E402

BATCH, LAYERS, DEPTH = 8, 4, 1024
MESH_SHAPE = (2, 4)
MESH_AXES = ("data", "model")
X_LOGICAL = ("batch", "embed")
Y_LOGICAL = ("batch", "hidden")  # with_logical_constraint on relu(x @ W1)
Z_LOGICAL = ("batch", "embed")  # with_logical_constraint on y @ W2

RULE_SETS = {
    # The guide's rules, with 'embed' and 'layer' explicitly replicated. Must reproduce the guide's
    # hand-written specs: W1 (None, 'model'), W2 ('model', None) per layer, x ('data', None).
    "seed002": (("batch", "data"), ("hidden", "model"), ("embed", None), ("layer", None)),
    # FSDP-style: 'embed' has two rules, 'data' first and 'model' as an ordered fallback.
    "fsdp_fallbacks": (
        ("batch", "data"),
        ("embed", "data"),
        ("hidden", "model"),
        ("embed", "model"),
        ("layer", None),
    ),
}
RULE_SET_DESCRIPTIONS = {
    "seed002": "Seed 002 / the Flax pjit guide: batch->data, hidden->model, embed and layer replicated.",
    "fsdp_fallbacks": "'embed' listed twice: 'data' first, 'model' as fallback when 'data' is already used "
    "in the same array (e.g. by 'batch').",
}


# ----------------------------------------------------------------------------------------------
# The model (seed 002 / the Flax guide, logical-axis version).
# ----------------------------------------------------------------------------------------------
class DotReluDot(nn.Module):
    depth: int

    @nn.compact
    def __call__(self, x):
        W1 = self.param(
            "W1",
            nn.with_logical_partitioning(nn.initializers.xavier_normal(), ("embed", "hidden")),
            (x.shape[-1], self.depth),
        )
        y = jax.nn.relu(jnp.dot(x, W1))
        y = nn.with_logical_constraint(y, Y_LOGICAL)
        W2 = self.param(
            "W2",
            nn.with_logical_partitioning(nn.initializers.xavier_normal(), ("hidden", "embed")),
            (self.depth, x.shape[-1]),
        )
        z = jnp.dot(y, W2)
        z = nn.with_logical_constraint(z, Z_LOGICAL)
        return z, None


class MLP(nn.Module):
    num_layers: int
    depth: int

    @nn.compact
    def __call__(self, x):
        x, _ = nn.scan(
            DotReluDot,
            length=self.num_layers,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            metadata_params={nn.PARTITION_NAME: "layer"},
        )(self.depth)(x)
        return x


# ----------------------------------------------------------------------------------------------
# JSON helpers.
# ----------------------------------------------------------------------------------------------
def spec_entry(e):
    """PartitionSpec entry -> null | "axis" | ["axis", ...]."""
    if e is None:
        return None
    if isinstance(e, str):
        return e
    if isinstance(e, (tuple, list)):
        return [spec_entry_str(a) for a in e]
    raise TypeError(f"unexpected PartitionSpec entry {e!r}")


def spec_entry_str(a):
    if not isinstance(a, str):
        raise TypeError(f"unexpected mesh axis {a!r}")
    return a


def spec_json(spec):
    if spec is None:
        return None
    return [spec_entry(e) for e in tuple(spec)]


def names_json(names):
    return None if names is None else [n for n in names]


def rules_json(rules):
    return [[name, spec_entry(mesh)] for name, mesh in rules]


def path_str(path):
    parts = []
    for k in path:
        if isinstance(k, jax.tree_util.DictKey):
            parts.append(str(k.key))
        elif isinstance(k, jax.tree_util.GetAttrKey):
            parts.append(str(k.name))
        else:
            parts.append(str(k))
    return "/".join(parts)


def mesh_positions(mesh):
    """Row-major list of (mesh coordinate, device) over mesh.devices."""
    out = []
    for coord in np.ndindex(mesh.devices.shape):
        out.append((list(int(c) for c in coord), mesh.devices[coord]))
    return out


def shard_slices(sharding: NamedSharding, shape, mesh):
    """For each mesh position (row-major), the [start, stop) per dim that device holds."""
    idx_map = sharding.devices_indices_map(tuple(shape))
    out = []
    for coord, dev in mesh_positions(mesh):
        sl = idx_map[dev]
        bounds = []
        for s, n in zip(sl, shape):
            start, stop, step = s.indices(n)
            assert step == 1
            bounds.append([int(start), int(stop)])
        out.append({"mesh_coord": coord, "device_id": int(dev.id), "slice": bounds})
    return out


def parse_constraints(hlo_text):
    """[{shape, spec}] for every Shardy sharding_constraint op in a lowered module, in order."""
    out = []
    pat = re.compile(r"sdy\.sharding_constraint\s+\S+\s+<@\w+,\s*\[(.*?)\]>\s*:\s*tensor<([0-9x]+)x\w+>")
    for line in hlo_text.splitlines():
        if "sharding_constraint" not in line:
            continue
        m = pat.search(line)
        assert m, f"cannot parse constraint line: {line.strip()}"
        spec = []
        for dim in re.findall(r"\{([^}]*)\}", m.group(1)):
            axes = re.findall(r'"(\w+)"', dim)
            spec.append(None if not axes else axes[0] if len(axes) == 1 else axes)
        out.append({"shape": [int(d) for d in m.group(2).split("x")], "spec": spec})
    return out


def array_entry(logical, shape, rules, mesh):
    """Everything about one array under one rule set, via Flax's own functions."""
    logical_spec = PartitionSpec(*logical)
    spec = nn.logical_to_mesh_axes(logical, rules)
    # Same thing through the pytree API used for parameters.
    sharding = nn.logical_to_mesh_sharding(logical_spec, mesh, rules)
    assert isinstance(sharding, NamedSharding), sharding
    assert tuple(sharding.spec) == tuple(spec), (sharding.spec, spec)
    shard_shape = sharding.shard_shape(tuple(shape))
    return {
        "logical_axes": names_json(logical),
        "spec": spec_json(spec),
        "global_shape": [int(d) for d in shape],
        "shard_shape": [int(d) for d in shard_shape],
        "shard_slices": shard_slices(sharding, shape, mesh),
    }


# ----------------------------------------------------------------------------------------------
# Model-level results.
# ----------------------------------------------------------------------------------------------
def model_results(mesh):
    model = MLP(LAYERS, DEPTH)
    x_shape = (BATCH, DEPTH)
    x_abs = jax.ShapeDtypeStruct(x_shape, jnp.float32)
    abstract_variables = jax.eval_shape(model.init, jax.random.PRNGKey(0), x_abs)
    # Logical PartitionSpecs (of logical names) straight from the boxed metadata.
    logical_specs = nn.get_partition_spec(abstract_variables)
    unboxed_shapes = nn.unbox(abstract_variables)

    logical_leaves = jax.tree_util.tree_leaves_with_path(
        logical_specs, is_leaf=lambda v: isinstance(v, PartitionSpec)
    )
    shape_by_path = {
        path_str(p): tuple(v.shape) for p, v in jax.tree_util.tree_leaves_with_path(unboxed_shapes)
    }

    out = {}
    for rs_name, rules in RULE_SETS.items():
        # The pytree route the guide uses: logical specs -> NamedShardings.
        shardings = nn.logical_to_mesh_sharding(logical_specs, mesh, rules)
        sharding_by_path = {
            path_str(p): s
            for p, s in jax.tree_util.tree_leaves_with_path(
                shardings, is_leaf=lambda v: isinstance(v, NamedSharding)
            )
        }
        params = {}
        k_w1 = next(path_str(p) for p, _ in logical_leaves if path_str(p).endswith("/W1"))
        k_w2 = next(path_str(p) for p, _ in logical_leaves if path_str(p).endswith("/W2"))
        for p, lspec in logical_leaves:
            key = path_str(p)
            logical = tuple(lspec)
            entry = array_entry(logical, shape_by_path[key], rules, mesh)
            # nn.scan stacks params on axis 0 and prepends 'layer' to the logical names; inside the
            # scan body each layer sees the slice without that axis (and Flax constrains it with the
            # names minus 'layer', see jit_check.lowered_constraints).
            assert logical[0] == "layer", logical
            per_layer = array_entry(logical[1:], shape_by_path[key][1:], rules, mesh)
            del per_layer["shard_slices"]
            entry["per_layer"] = per_layer
            assert spec_json(sharding_by_path[key].spec) == entry["spec"]
            params[key] = entry

        # Cross-check against real jit: init with out_shardings, apply with x sharded, under
        # the rules so the activation constraints are live.
        with jax.set_mesh(mesh), nn.logical_axis_rules(rules):
            init_fn = jax.jit(model.init, out_shardings=shardings)
            variables = init_fn(jax.random.PRNGKey(0), jnp.zeros(x_shape, jnp.float32))
            checked = 0
            for p, leaf in jax.tree_util.tree_leaves_with_path(
                variables, is_leaf=lambda v: isinstance(v, nn.Partitioned)
            ):
                key = path_str(p)
                arr = leaf.value if isinstance(leaf, nn.Partitioned) else leaf
                assert spec_json(arr.sharding.spec) == params[key]["spec"], (key, arr.sharding.spec)
                assert [list(s.data.shape) for s in arr.addressable_shards] == [
                    params[key]["shard_shape"]
                ] * mesh.size
                checked += 1
            assert checked == len(params) == 2, checked
            x_entry = array_entry(X_LOGICAL, x_shape, rules, mesh)
            x_sharding = NamedSharding(mesh, PartitionSpec(*x_entry["spec"]))
            x = jax.device_put(
                np.random.default_rng(2).standard_normal(x_shape, dtype=np.float32), x_sharding
            )
            apply_fn = jax.jit(model.apply, in_shardings=(shardings, x_sharding))
            # The constraints must be live (with_logical_constraint is a silent no-op without
            # nn.logical_axis_rules). The scan body is lowered once; because `variables` are still
            # boxed (LogicallyPartitioned), apply's unboxing also constrains each per-layer slice of
            # W1/W2 (with the 'layer' axis removed), so 4 constraints: W1, y, W2, z.
            lowered_constraints = parse_constraints(apply_fn.lower(variables, x).as_text())
            expected_constraints = [
                {"shape": list(shape_by_path[k_w1][1:]), "spec": params[k_w1]["spec"][1:]},
                {"shape": [BATCH, DEPTH], "spec": spec_json(nn.logical_to_mesh_axes(Y_LOGICAL, rules))},
                {"shape": list(shape_by_path[k_w2][1:]), "spec": params[k_w2]["spec"][1:]},
                {"shape": [BATCH, DEPTH], "spec": spec_json(nn.logical_to_mesh_axes(Z_LOGICAL, rules))},
            ]
            assert lowered_constraints == expected_constraints, lowered_constraints
            z = apply_fn(variables, x)
            observed_out_spec = spec_json(z.sharding.spec)

        z_entry = array_entry(Z_LOGICAL, x_shape, rules, mesh)
        # XLA drops trailing None entries from the output sharding's spec; compare padded.
        padded = observed_out_spec + [None] * (len(x_shape) - len(observed_out_spec))
        assert padded == z_entry["spec"], (observed_out_spec, z_entry["spec"])

        out[rs_name] = {
            "description": RULE_SET_DESCRIPTIONS[rs_name],
            "rules": rules_json(rules),
            "params": params,
            "input": {"x": x_entry},
            "activations": {
                "y": dict(array_entry(Y_LOGICAL, (BATCH, DEPTH), rules, mesh),
                          note="nn.with_logical_constraint(relu(x @ W1), ('batch','hidden')) inside each layer"),
                "z": dict(z_entry,
                          note="nn.with_logical_constraint(y @ W2, ('batch','embed')) inside each layer; "
                          "also the model output"),
            },
            "jit_check": {
                "init_param_specs_match": True,
                "lowered_constraints": lowered_constraints,
                "lowered_constraints_note": "sdy.sharding_constraint ops in jit(model.apply) lowered under "
                "nn.logical_axis_rules, in program order (scan body lowered once): per-layer W1 slice, y, "
                "per-layer W2 slice, z. The W slices are constrained because apply receives the still-boxed "
                "LogicallyPartitioned params, whose unbox applies with_logical_constraint with 'layer' removed.",
                "apply_output_spec": observed_out_spec,
                "apply_output_spec_note": "z.sharding.spec of jit(model.apply) as JAX reports it "
                "(trailing None entries dropped by the compiler); equals activations.z.spec once padded.",
            },
        }
    return out


# ----------------------------------------------------------------------------------------------
# Direct nn.logical_to_mesh_axes cases.
# ----------------------------------------------------------------------------------------------
CASES = [
    ("first_match_wins",
     "Two rules for 'embed': the first (embed->model) wins, the later one (embed->data) is ignored.",
     ("embed", "hidden"), (("embed", "model"), ("embed", "data"))),
    ("first_match_wins_same_axis_other_name",
     "Rules are applied in rule order; 'batch' is first and takes 'data', so 'embed' (same axis, no fallback) stays None.",
     ("batch", "embed"), (("batch", "data"), ("embed", "data"))),
    ("used_axis_falls_back",
     "'batch' takes 'data'; embed->data is skipped because 'data' is used; the later embed->model applies.",
     ("batch", "embed"), (("batch", "data"), ("embed", "data"), ("embed", "model"))),
    ("used_axis_no_conflict_takes_first",
     "Same rules as used_axis_falls_back, but no 'batch' dim: 'embed' takes 'data' (first rule).",
     ("embed", "hidden"), (("batch", "data"), ("embed", "data"), ("embed", "model"))),
    ("fsdp_rules_on_layer_embed_hidden",
     "fsdp_fallbacks rules on a scanned W1: embed->data, hidden->model, layer->None.",
     ("layer", "embed", "hidden"),
     (("batch", "data"), ("embed", "data"), ("hidden", "model"), ("embed", "model"), ("layer", None))),
    ("fsdp_rules_on_layer_hidden_embed",
     "fsdp_fallbacks rules on a scanned W2.",
     ("layer", "hidden", "embed"),
     (("batch", "data"), ("embed", "data"), ("hidden", "model"), ("embed", "model"), ("layer", None))),
    ("none_rule_pins_replicated",
     "embed->None comes first, so 'embed' is pinned replicated even though embed->data follows.",
     ("embed", "hidden"), (("embed", None), ("embed", "data"), ("hidden", "model"))),
    ("none_rule_after_shard_rule_is_ignored",
     "embed->data comes first and wins; the later embed->None does nothing.",
     ("embed", "hidden"), (("embed", "data"), ("embed", None), ("hidden", "model"))),
    ("no_rule_is_replicated",
     "'layer' has no rule at all -> None.",
     ("layer", "embed", "hidden"), (("embed", "data"), ("hidden", "model"))),
    ("empty_rules",
     "No rules: every dim None.",
     ("batch", "embed"), ()),
    ("multi_axis_rule",
     "batch->('data','model') shards one dim over both mesh axes; both are then used, so embed->model is skipped.",
     ("batch", "embed"), (("batch", ("data", "model")), ("embed", "model"))),
    ("multi_axis_rule_blocked_by_partial_overlap",
     "embed->model comes first; batch->('data','model') needs 'model' too, so the whole rule is skipped "
     "(not reduced to 'data'); batch falls back to batch->data.",
     ("batch", "embed"), (("embed", "model"), ("batch", ("data", "model")), ("batch", "data"))),
    ("multi_axis_rule_single_axis_tuple",
     "A one-element tuple rule batch->('data',): Flax passes the tuple through, but jax's PartitionSpec "
     "normalises a one-element tuple to the plain axis name, so the result is 'data', not ['data'].",
     ("batch", "embed"), (("batch", ("data",)),)),
    ("rule_order_across_dims_embed_first",
     "Rules [('embed','data'),('batch','data')] on ('batch','embed'): rules are walked in order, "
     "not dims, so 'embed' (rule 1) takes 'data' and 'batch' gets None.",
     ("batch", "embed"), (("embed", "data"), ("batch", "data"))),
    ("rule_order_across_dims_batch_first",
     "Same with the rule order swapped: 'batch' takes 'data', 'embed' gets None.",
     ("batch", "embed"), (("batch", "data"), ("embed", "data"))),
    ("none_entries_in_names",
     "None in the names stays None and consumes no rule.",
     ("batch", None, "embed"), (("batch", "data"), ("embed", "model"))),
    ("all_none_names",
     "Names all None -> spec all None.",
     (None, None), (("batch", "data"),)),
    ("seed002_rules_on_W1",
     "seed002 rules on a scanned W1 (layer, embed, hidden).",
     ("layer", "embed", "hidden"), RULE_SETS["seed002"]),
    ("seed002_rules_on_W2",
     "seed002 rules on a scanned W2 (layer, hidden, embed).",
     ("layer", "hidden", "embed"), RULE_SETS["seed002"]),
    ("seed002_rules_on_x",
     "seed002 rules on x (batch, embed).",
     ("batch", "embed"), RULE_SETS["seed002"]),
    ("rule_for_absent_name_ignored",
     "A rule for a name that is not in the array ('hidden') does not use up its mesh axis.",
     ("batch", "embed"), (("hidden", "data"), ("embed", "data"))),
    ("mesh_axis_not_validated",
     "logical_to_mesh_axes does not check mesh axis names: an unknown axis 'pod' is returned as is "
     "(it only fails later, when a NamedSharding is built on a mesh without it).",
     ("batch", "embed"), (("batch", "pod"),)),
    ("duplicate_names_error",
     "The same logical name twice in one array is rejected.",
     ("embed", "embed"), (("embed", "data"),)),
]


def case_results():
    out = []
    for cid, desc, names, rules in CASES:
        entry = {
            "id": cid,
            "description": desc,
            "names": names_json(names),
            "rules": rules_json(rules),
        }
        try:
            spec = nn.logical_to_mesh_axes(names, rules)
            entry["spec"] = spec_json(spec)
            entry["error"] = None
        except ValueError as e:
            entry["spec"] = None
            entry["error"] = f"ValueError: {e}"
        out.append(entry)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "expected.json")
    args = ap.parse_args(argv)

    if jax.device_count() < 8:
        sys.exit(f"need 8 devices, got {jax.device_count()} (XLA_FLAGS={os.environ.get('XLA_FLAGS')!r})")

    device_mesh = mesh_utils.create_device_mesh(MESH_SHAPE, devices=jax.devices()[:8])
    mesh = Mesh(device_mesh, MESH_AXES)

    models = model_results(mesh)

    # seed002 must reproduce the guide's hand-written specs.
    s = models["seed002"]
    w1 = [k for k in s["params"] if k.endswith("/W1")]
    w2 = [k for k in s["params"] if k.endswith("/W2")]
    assert len(w1) == 1 and len(w2) == 1, list(s["params"])
    assert s["params"][w1[0]]["spec"] == [None, None, "model"], s["params"][w1[0]]
    assert s["params"][w2[0]]["spec"] == [None, "model", None], s["params"][w2[0]]
    assert s["params"][w1[0]]["per_layer"]["spec"] == [None, "model"], s["params"][w1[0]]
    assert s["params"][w2[0]]["per_layer"]["spec"] == ["model", None], s["params"][w2[0]]
    assert s["input"]["x"]["spec"] == ["data", None], s["input"]["x"]

    doc = {
        "description": "Flax's logical-axis sharding results for seed 002 (Flax guide 'Scale up Flax Modules "
        "on multiple devices with pjit'), written by make_sharding_reference.py. Specs are "
        "PartitionSpec entries: null (replicated), a mesh axis name, or a list of mesh axis names.",
        "versions": {
            "jax": jax.__version__,
            "jaxlib": jax.lib.__version__ if hasattr(jax.lib, "__version__") else None,
            "flax": flax.__version__,
            "numpy": np.__version__,
        },
        "mesh": {
            "axis_names": list(MESH_AXES),
            "shape": list(MESH_SHAPE),
            "device_ids": [[int(d.id) for d in row] for row in mesh.devices],
        },
        "model": {
            "batch": BATCH,
            "layers": LAYERS,
            "depth": DEPTH,
            "embed": DEPTH,
            "x_logical_axes": list(X_LOGICAL),
            "scan_partition_name": "layer",
        },
        "rule_sets": models,
        "cases": case_results(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
