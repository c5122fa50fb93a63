#!/usr/bin/env python3
"""CPU training-step benchmark: Shardlab vs JAX/Flax vs PyTorch on a small Vision Transformer.

vit-fashion (projects/vit-fashion.shardlab.json, seed 004's model, reduced), batch 128, float32:
    image (28, 28) -> 7x7 patches -> Dense 64 (PatchEmbed) -> + learned position embedding (16, 64)
    -> 4 x pre-norm block [LayerNorm, 4-head self-attention, residual, LayerNorm, Dense 128,
       GELU (tanh), Dense 64, residual] -> LayerNorm -> mean over the 16 tokens -> Dense 10;
    softmax cross-entropy with integer labels (mean over the batch), Adam (b1 0.9, b2 0.999, eps 1e-8).

The peers build that model from the numbers in the project file (patch, features, heads, blocks, MLP
width, classes, batch), and the script refuses a project whose structure differs. Shardlab trains a
copy of the project whose data is synthetic (`blobs`: normal features, integer labels, 8 batches)
and whose learning rate is the constant the peers use, without evaluation; the peers step on one
random batch. Data and learning rate do not change the work of a step.

As cpu_step.py (whose child runner, timed loop and log reader this script uses): each peer runs in its
own fresh child process, pinned to the same T cores and told to use T threads; its peak RSS is that
child's ru_maxrss; step time is the median of the timed steps after the warm-up steps (Shardlab's
from the `step_time_s` of its --log JSONL). FLOP/s = the training-step FLOPs `shardlab-cli check --json`
reports (totals.train_step_flops) / the median step time, the same count for every peer.

This is not a test; run it by hand after building (see tests/bench/README.md):
    python3 tests/bench/vit_step.py [--build build] [--threads T] [--steps 20] [--warmup 3] [--json out.json]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_step  # noqa: E402  (the pinned child runner, the timed loop, the JSONL log reader)

REPO = cpu_step.REPO
DEFAULT_PROJECT = "projects/vit-fashion.shardlab.json"
LR = 1e-3  # constant, for every peer (the project's warmup-cosine schedule is replaced: same work per step)
LN_EPS = 1e-6  # Shardlab's and Flax's LayerNorm default; PyTorch's is 1e-5, so it is set explicitly
MIB = 1024 * 1024

# The block the Repeat must hold, in order (the edges are those of a pre-norm encoder block).
BLOCK_TYPES = ["LayerNorm", "MultiHeadAttention", "Add", "LayerNorm", "Dense", "GELU", "Dense", "Add"]
TOP_TYPES = ["Input", "PatchEmbed", "PositionEmbedding", "Repeat", "LayerNorm", "MeanPool", "Dense"]


def vit_config(project: dict) -> dict:
    """The numbers the peers need, read from the project; raises ValueError if it is not this ViT."""
    nodes = project["graph"]["nodes"]
    types = [n["type"] for n in nodes]
    if types != TOP_TYPES:
        raise ValueError(f"graph nodes {types}, expected {TOP_TYPES}")
    inp, patch, _, rep, _, _, head = nodes
    body = rep["body"]["nodes"]
    if [n["type"] for n in body] != BLOCK_TYPES:
        raise ValueError(f"Repeat body {[n['type'] for n in body]}, expected {BLOCK_TYPES}")
    ln_params = [n.get("params", {}) for n in nodes + body if n["type"] == "LayerNorm"]
    if any(p for p in ln_params):
        raise ValueError(f"LayerNorm params {ln_params}: only the defaults (epsilon {LN_EPS}, scale, bias) are built")
    attn = body[1].get("params", {})
    if set(attn) - {"num_heads"}:
        raise ValueError(f"MultiHeadAttention params {attn}: only num_heads is built")
    if set(patch.get("params", {})) - {"patch", "features"}:
        raise ValueError(f"PatchEmbed params {patch['params']}: only patch and features are built")
    for d in (body[4], body[6], head):
        if set(d.get("params", {})) - {"features"}:
            raise ValueError(f"Dense {d['name']} params {d['params']}: only features is built")
    shape = inp["params"]["shape"]
    if len(shape) != 2:
        raise ValueError(f"input shape {shape}: a (height, width) image expected")
    cfg = {
        "height": shape[0], "width": shape[1],
        "patch": patch["params"]["patch"], "features": patch["params"]["features"],
        "heads": attn["num_heads"], "depth": rep["params"]["count"],
        "mlp": body[4]["params"]["features"], "classes": head["params"]["features"],
        "batch": project["training"]["batch_size"],
    }
    if body[6]["params"]["features"] != cfg["features"]:
        raise ValueError("the block's second Dense must map back to the embedding's features")
    if project["loss"]["type"] != "softmax_cross_entropy" or project["optimizer"]["type"] != "adam":
        raise ValueError(f"loss {project['loss']['type']} / optimizer {project['optimizer']['type']}: "
                         "softmax_cross_entropy and adam expected")
    if set(project["optimizer"]) - {"type", "learning_rate"}:
        raise ValueError(f"optimizer {project['optimizer']}: only Adam's default b1, b2, eps are built")
    cfg["tokens"] = (cfg["height"] // cfg["patch"]) * (cfg["width"] // cfg["patch"])
    return cfg


def param_count(c):
    f, m = c["features"], c["mlp"]
    block = 2 * 2 * f + 4 * (f * f + f) + (f * m + m) + (m * f + f)
    return c["patch"] ** 2 * f + f + c["tokens"] * f + c["depth"] * block + 2 * f + f * c["classes"] + c["classes"]


def forward_matmul_flops(c):
    """Matmul FLOPs of one forward pass (2 per multiply-add), for the record beside Shardlab's count."""
    b, s, f, m, h = c["batch"], c["tokens"], c["features"], c["mlp"], c["heads"]
    rows = b * s
    block = 2 * rows * f * (4 * f + 2 * m) + 2 * 2 * b * h * s * s * (f // h)
    return 2 * rows * c["patch"] ** 2 * f + c["depth"] * block + 2 * b * f * c["classes"]


# ==============================================================================================
# Workers: `vit_step.py --worker torch|jax --config JSON ...` in a fresh process, pinned by the parent.
# ==============================================================================================
def random_batch(c, rng):
    """A random batch: images (B, H, W) float32 and integer labels (B,)."""
    import numpy as np

    x = rng.standard_normal((c["batch"], c["height"], c["width"]), dtype=np.float32)
    y = rng.integers(0, c["classes"], size=(c["batch"],)).astype(np.int32)
    return x, y


def torch_vit(c):
    """The model as a torch.nn.Module (torch's default initialisers; irrelevant for timing)."""
    import torch
    from torch import nn

    p, f = c["patch"], c["features"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(f, eps=LN_EPS)
            self.attn = nn.MultiheadAttention(f, c["heads"], batch_first=True)  # q, k, v in one (3f, f) in_proj
            self.ln2 = nn.LayerNorm(f, eps=LN_EPS)
            self.mlp1 = nn.Linear(f, c["mlp"])
            self.gelu = nn.GELU(approximate="tanh")
            self.mlp2 = nn.Linear(c["mlp"], f)

        def forward(self, x):
            y = self.ln1(x)
            x = x + self.attn(y, y, y, need_weights=False)[0]  # scaled_dot_product_attention inside
            return x + self.mlp2(self.gelu(self.mlp1(self.ln2(x))))

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patches = nn.Linear(p * p, f)
            self.pos = nn.Parameter(torch.randn(c["tokens"], f) * 0.02)
            self.blocks = nn.ModuleList(Block() for _ in range(c["depth"]))
            self.norm = nn.LayerNorm(f, eps=LN_EPS)
            self.head = nn.Linear(f, c["classes"])

        def forward(self, img):
            b = img.shape[0]
            # PatchEmbed as Shardlab lowers it: tiles, flattened row-major, through one Linear.
            x = img.reshape(b, c["height"] // p, p, c["width"] // p, p).transpose(2, 3).reshape(b, c["tokens"], p * p)
            x = self.patches(x) + self.pos
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.norm(x).mean(dim=1))

    return ViT()


def worker_torch(c, threads, steps, warmup):
    import numpy as np
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.set_float32_matmul_precision("highest")
    rss_import = cpu_step._vm_rss_mib()
    torch.manual_seed(0)
    model = torch_vit(c)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    xn, yn = random_batch(c, np.random.default_rng(0))
    x, y = torch.from_numpy(xn), torch.from_numpy(yn).long()

    def step():
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        float((logits.detach().argmax(-1) == y).float().mean())  # Shardlab's step reports accuracy too
        return float(loss.detach())

    times, losses, busy = cpu_step._timed_loop(step, steps + warmup, warmup)
    return {
        "version": f"PyTorch {torch.__version__}",
        "params": sum(t.numel() for t in model.parameters()),
        "threads_requested": threads,
        "threads_used": torch.get_num_threads(),
        "threading": f"torch.set_num_threads({threads}); process pinned to {len(os.sched_getaffinity(0))} cores",
        "step_times_s": times, "losses": losses, "busy_cores": busy, "rss_after_import_mib": rss_import,
    }


def flax_vit(c):
    """The model as a Flax module; its modules carry the Shardlab project's layer names."""
    import flax.linen as nn

    p, f = c["patch"], c["features"]

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            y = nn.LayerNorm(epsilon=LN_EPS, name="ln1")(x)
            x = x + nn.MultiHeadDotProductAttention(num_heads=c["heads"], name="attn")(y)
            y = nn.LayerNorm(epsilon=LN_EPS, name="ln2")(x)
            y = nn.gelu(nn.Dense(c["mlp"], name="mlp1")(y), approximate=True)
            return x + nn.Dense(f, name="mlp2")(y)

    class ViT(nn.Module):
        @nn.compact
        def __call__(self, img):
            b = img.shape[0]
            # PatchEmbed as Shardlab lowers it: tiles, flattened row-major, through one Dense.
            x = img.reshape(b, c["height"] // p, p, c["width"] // p, p).transpose(0, 1, 3, 2, 4)
            x = nn.Dense(f, name="patches")(x.reshape(b, c["tokens"], p * p))
            x = x + self.param("pos", nn.initializers.normal(0.02), (c["tokens"], f))
            for i in range(c["depth"]):  # unrolled; Shardlab's Repeat stacks the blocks' parameters
                x = Block(name=f"blocks_{i}")(x)
            x = nn.LayerNorm(epsilon=LN_EPS, name="norm")(x).mean(axis=1)
            return nn.Dense(c["classes"], name="head")(x)

    return ViT()


def worker_jax(c, threads, steps, warmup):
    import numpy as np
    import jax
    import jax.numpy as jnp
    import flax
    import optax
    from flax.training import train_state

    jax.config.update("jax_default_matmul_precision", "highest")  # full float32 (XLA's CPU default anyway)
    rss_import = cpu_step._vm_rss_mib()
    model = flax_vit(c)
    xn, yn = random_batch(c, np.random.default_rng(0))
    x, y = jnp.asarray(xn), jnp.asarray(yn)
    params = model.init(jax.random.PRNGKey(0), x)["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(LR))

    def train_step(state, x, y):
        def loss_fn(p):
            logits = model.apply({"params": p}, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), logits

        (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        acc = jnp.mean(jnp.argmax(logits, -1) == y)  # Shardlab's step reports accuracy too
        return state.apply_gradients(grads=grads), (loss, acc)

    step_fn = jax.jit(train_step, donate_argnums=0)
    box = {"state": state}

    def step():
        new_state, (loss, acc) = step_fn(box["state"], x, y)
        jax.block_until_ready((new_state, loss, acc))
        box["state"] = new_state
        return float(loss)

    times, losses, busy = cpu_step._timed_loop(step, steps + warmup, warmup)
    return {
        "version": f"JAX {jax.__version__}, Flax {flax.__version__}, Optax {optax.__version__}",
        "params": sum(int(np.prod(a.shape)) for a in jax.tree_util.tree_leaves(params)),
        "threads_requested": threads,
        "threads_used": len(os.sched_getaffinity(0)),
        "threading": (f"process pinned to {len(os.sched_getaffinity(0))} cores with sched_setaffinity (= taskset); "
                      f"XLA sizes its intra-op pool from the affinity mask. "
                      f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}"),
        "backend": jax.default_backend(),
        "step_times_s": times, "losses": losses, "busy_cores": busy, "rss_after_import_mib": rss_import,
    }


# ----------------------------------------------------------------------------------------------
# --verify: the three models from the same parameters (Shardlab's initial ones, exported), on the
# same batch, for VERIFY_STEPS Adam steps; the losses must agree to float32 rounding.
# ----------------------------------------------------------------------------------------------
VERIFY_STEPS = 3


def read_safetensors(path):
    """{name: float32 numpy array} from a safetensors file (the format is an 8-byte length, JSON, data)."""
    import numpy as np

    raw = Path(path).read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, v in header.items():
        if name == "__metadata__":
            continue
        if v["dtype"] != "F32":
            raise ValueError(f"{name}: dtype {v['dtype']}, F32 expected")
        a, b = v["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.float32).reshape(v["shape"]).copy()
    return out


def verify_jax(c, d):
    import numpy as np
    import jax
    import jax.numpy as jnp
    import optax

    jax.config.update("jax_default_matmul_precision", "highest")
    P = read_safetensors(d / "params.safetensors")
    x, y = jnp.asarray(np.load(d / "features.npy")), jnp.asarray(np.load(d / "targets.npy"))
    p2 = c["patch"] ** 2
    params = {"patches": {"kernel": P["patches/kernel"].reshape(p2, -1), "bias": P["patches/bias"]},
              "pos": P["pos/embedding"], "norm": {"scale": P["norm/scale"], "bias": P["norm/bias"]},
              "head": {"kernel": P["head/kernel"], "bias": P["head/bias"]}}
    for i in range(c["depth"]):
        blk = {ln: {"scale": P[f"blocks/{ln}/scale"][i], "bias": P[f"blocks/{ln}/bias"][i]} for ln in ("ln1", "ln2")}
        blk.update({m: {"kernel": P[f"blocks/{m}/kernel"][i], "bias": P[f"blocks/{m}/bias"][i]} for m in ("mlp1", "mlp2")})
        blk["attn"] = {q: {"kernel": P[f"blocks/attn/{q}/kernel"][i], "bias": P[f"blocks/attn/{q}/bias"][i]}
                       for q in ("query", "key", "value", "out")}
        params[f"blocks_{i}"] = blk
    model = flax_vit(c)
    shapes = lambda t: jax.tree_util.tree_map(lambda a: tuple(a.shape), t)  # noqa: E731
    if shapes(model.init(jax.random.PRNGKey(0), x)["params"]) != shapes(params):
        raise SystemExit("Shardlab's parameters do not map onto the Flax model's")

    def loss_fn(p):
        return optax.softmax_cross_entropy_with_integer_labels(model.apply({"params": p}, x), y).mean()

    tx = optax.adam(LR)
    state, losses = tx.init(params), []
    for _ in range(VERIFY_STEPS):
        loss, g = jax.value_and_grad(loss_fn)(params)
        losses.append(float(loss))
        updates, state = tx.update(g, state, params)
        params = optax.apply_updates(params, updates)
    return {"losses": losses}


def verify_torch(c, d):
    import numpy as np
    import torch

    torch.set_float32_matmul_precision("highest")
    P = read_safetensors(d / "params.safetensors")
    x, y = torch.from_numpy(np.load(d / "features.npy")), torch.from_numpy(np.load(d / "targets.npy")).long()
    f, p2 = c["features"], c["patch"] ** 2
    sd = {"patches.weight": P["patches/kernel"].reshape(p2, f).T, "patches.bias": P["patches/bias"],
          "pos": P["pos/embedding"], "norm.weight": P["norm/scale"], "norm.bias": P["norm/bias"],
          "head.weight": P["head/kernel"].T, "head.bias": P["head/bias"]}
    for i in range(c["depth"]):
        pre = f"blocks.{i}."
        for ln in ("ln1", "ln2"):
            sd[pre + ln + ".weight"], sd[pre + ln + ".bias"] = P[f"blocks/{ln}/scale"][i], P[f"blocks/{ln}/bias"][i]
        for m in ("mlp1", "mlp2"):
            sd[pre + m + ".weight"], sd[pre + m + ".bias"] = P[f"blocks/{m}/kernel"][i].T, P[f"blocks/{m}/bias"][i]
        # torch packs query, key and value as one (3f, f) in_proj; Shardlab's (embed, heads, kv) flattens to (f, f).
        sd[pre + "attn.in_proj_weight"] = np.concatenate(
            [P[f"blocks/attn/{q}/kernel"][i].reshape(f, f).T for q in ("query", "key", "value")])
        sd[pre + "attn.in_proj_bias"] = np.concatenate([P[f"blocks/attn/{q}/bias"][i].reshape(f) for q in ("query", "key", "value")])
        sd[pre + "attn.out_proj.weight"] = P["blocks/attn/out/kernel"][i].reshape(f, f).T
        sd[pre + "attn.out_proj.bias"] = P["blocks/attn/out/bias"][i]
    model = torch_vit(c)
    model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}, strict=True)
    opt, losses = torch.optim.Adam(model.parameters(), lr=LR), []
    for _ in range(VERIFY_STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return {"losses": losses}


def run_worker(args):
    c = json.loads(args.config)
    if args.verify_dir:
        fn = {"torch": verify_torch, "jax": verify_jax}[args.worker]
        print("RESULT:" + json.dumps(fn(c, Path(args.verify_dir))), flush=True)
        return 0
    fn = {"torch": worker_torch, "jax": worker_jax}[args.worker]
    print("RESULT:" + json.dumps(fn(c, args.threads, args.steps, args.warmup)), flush=True)
    return 0


# ==============================================================================================
# Parent side.
# ==============================================================================================
def bench_python_peer(name, c, args, cores, tmp):
    modules = {"torch": ["torch", "numpy"], "jax": ["jax", "flax", "optax", "numpy"]}[name]
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        return {"peer": name, "skipped": f"not importable: {', '.join(missing)} (pip install -r tests/bench/requirements.txt)"}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--config", json.dumps(c),
           "--threads", str(args.threads), "--steps", str(args.steps), "--warmup", str(args.warmup)]
    return cpu_step.run_peer_process(name, cmd, cpu_step.peer_env(name, args.threads), cores, args, tmp)


def shardlab_check(cli, project):
    """`check --json` (train_step_flops, param_count, the plan's total bytes); falls back to the text's
    "training step X FLOPs" line. Returns (dict, notes)."""
    notes, found = [], {}
    try:
        cp = subprocess.run([str(cli), "check", str(project), "--json"], capture_output=True, text=True,
                            timeout=300, cwd=REPO)
        doc = cpu_step._parse_json_loose(cp.stdout)
        if cp.returncode != 0:
            notes.append(f"`check --json` exited {cp.returncode}: {cp.stderr.strip()[-300:]}")
        if isinstance(doc, dict):
            totals, mem = doc.get("totals") or {}, doc.get("memory") or {}
            for key, src in (("train_step_flops", totals), ("param_count", totals), ("total_bytes", mem)):
                if isinstance(src.get(key), (int, float)):
                    found[key] = src[key]
            if "train_step_flops" in found:
                found["flops_source"] = "shardlab-cli check --json: totals.train_step_flops"
        if "train_step_flops" not in found:
            cp = subprocess.run([str(cli), "check", str(project)], capture_output=True, text=True, timeout=300, cwd=REPO)
            m = re.search(r"training step ([0-9.]+)\s*([KMGT]?)FLOPs", cp.stdout)
            if m:
                found["train_step_flops"] = float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m.group(2)]
                found["flops_source"] = "shardlab-cli check: 'training step ... FLOPs' (rounded)"
            else:
                notes.append("`check` printed no training-step FLOPs")
    except (OSError, subprocess.TimeoutExpired) as e:
        notes.append(f"`check` failed to run: {e}")
    return found, notes


def bench_project(src: dict, c: dict, total_steps: int, keep_data: bool) -> dict:
    """The project as Shardlab trains it here: synthetic data, constant LR, no evaluation."""
    p = json.loads(json.dumps(src))
    p["name"] = p.get("name", "vit") + "-bench"
    if not keep_data:
        p["data"] = {"type": "synthetic", "kind": "blobs", "feature_shape": [c["height"], c["width"]],
                     "classes": c["classes"], "examples": 8 * c["batch"], "test_fraction": 0.0, "seed": 0}
    p["optimizer"] = {"type": "adam", "learning_rate": LR}
    t = {k: v for k, v in p["training"].items() if k not in ("epochs", "steps", "checkpoint")}
    p["training"] = dict(t, steps=total_steps, eval=False)
    return p


def bench_shardlab(args, src, c, cores, tmp):
    cli = Path(args.build) / "app" / "shardlab-cli"
    if not cli.is_absolute():
        cli = REPO / cli
    res = {"peer": "shardlab", "notes": []}
    if not (cli.is_file() and os.access(cli, os.X_OK)):
        res["skipped"] = f"CLI not found at {cli} (build with cmake into {args.build}/ first)"
        return res
    total = args.steps + args.warmup
    project = tmp / "vit-bench.shardlab.json"
    project.write_text(json.dumps(bench_project(src, c, total, args.project_data), indent=2))
    found, notes = shardlab_check(cli, project)
    res.update(found)
    res["notes"] += notes
    log = tmp / "shardlab.jsonl"
    cmd = [str(cli), "train", str(project), "--steps", str(total), "--threads", str(args.threads), "--log", str(log)]
    res["command"] = " ".join(cmd)
    res["machine_busy_before"] = cpu_step.warn_if_busy("shardlab")
    print(f"[shardlab] {res['command']}", flush=True)
    code, rss, wall, cpu = cpu_step.run_child(cmd, cpu_step.child_env(args.threads), cores, args.timeout,
                                              tmp / "shardlab.out", tmp / "shardlab.err")
    res.update(peak_rss_mib=rss, process_wall_s=wall, process_cpu_s=cpu,
               threading=f"--threads {args.threads}, OMP_NUM_THREADS={args.threads}"
                         + (f", pinned to {len(cores)} cores" if cores else ""))
    res["version"] = "Shardlab"
    try:
        lines = subprocess.run([str(cli), "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()
        rev = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        res["version"] = (lines[0].strip() if lines else "Shardlab") + (f" ({rev})" if rev else "")
        res["code_path"] = next((l.split(":", 1)[1].strip() for l in lines if l.startswith("CPU code path")), None)
    except (OSError, subprocess.TimeoutExpired):
        pass
    if code != 0:
        why = "timed out" if code is None else f"exit code {code}"
        res["notes"].append(f"`train` {why}\n{cpu_step._tail(tmp / 'shardlab.err')}")
    parsed, notes = cpu_step.parse_shardlab_log(log, args.warmup)
    res.update(parsed)
    res["notes"] += notes
    if res.get("median_step_s") is None:
        res["error"] = "no step time measured: " + "; ".join(n.splitlines()[0] for n in res["notes"])
    return res


def verify(args, src, c, peers):
    """--verify: Shardlab's initial parameters and one batch through every framework's model and Adam."""
    try:
        import numpy as np
    except ImportError:
        print("--verify needs numpy (pip install -r tests/bench/requirements.txt)")
        return 2
    cli = Path(args.build) / "app" / "shardlab-cli"
    cli = cli if cli.is_absolute() else REPO / cli
    tol = 1e-4
    with tempfile.TemporaryDirectory(prefix="shardlab-vit-verify-") as tmpdir:
        d = Path(tmpdir)
        rng = np.random.default_rng(1)
        np.save(d / "features.npy", rng.standard_normal((c["batch"], c["height"], c["width"]), dtype=np.float32))
        np.save(d / "targets.npy", rng.integers(0, c["classes"], size=c["batch"]).astype(np.int32))
        p = json.loads(json.dumps(src))
        p["data"] = {"type": "npy", "features": str(d / "features.npy"), "targets": str(d / "targets.npy"), "test_fraction": 0.0}
        p["training"] = {"batch_size": c["batch"], "steps": VERIFY_STEPS, "seed": 0, "eval": False, "shuffle": False}

        def train(lr, steps, extra):
            p["optimizer"] = {"type": "adam", "learning_rate": lr}
            (d / "p.shardlab.json").write_text(json.dumps(p))
            cmd = [str(cli), "train", str(d / "p.shardlab.json"), "--steps", str(steps), "--threads", str(args.threads), "--quiet", *extra]
            subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=REPO)

        try:
            # Learning rate 0: the checkpoint after step 1 holds the initial parameters.
            train(0.0, 1, ["--checkpoint-dir", str(d / "ck")])
            subprocess.run([str(cli), "export", str(d / "ck"), "--out", str(d / "params.safetensors")],
                           check=True, capture_output=True, text=True, cwd=REPO)
            train(LR, VERIFY_STEPS, ["--log", str(d / "log.jsonl")])
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"shardlab: {e}\n{getattr(e, 'stderr', '') or ''}")
            return 1
        losses = {"shardlab": [json.loads(l)["loss"] for l in (d / "log.jsonl").read_text().splitlines()
                               if json.loads(l).get("event") == "step"]}
        for name in [n for n in ("jax", "torch") if n in peers]:
            mods = {"torch": ["torch", "numpy"], "jax": ["jax", "flax", "optax", "numpy"]}[name]
            if any(importlib.util.find_spec(m) is None for m in mods):
                print(f"{name}: SKIPPED - not importable")
                continue
            env = cpu_step.child_env(args.threads)
            env["JAX_PLATFORMS"] = "cpu"
            cp = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", name, "--config", json.dumps(c),
                                 "--verify-dir", str(d)], capture_output=True, text=True, env=env, cwd=REPO)
            res = [json.loads(l[7:]) for l in cp.stdout.splitlines() if l.startswith("RESULT:")]
            if cp.returncode or not res:
                print(f"{name}: ERROR - exit {cp.returncode}\n{cp.stderr[-1500:]}")
                return 1
            losses[name] = res[0]["losses"]
    names = list(losses)
    print(f"\nlosses from Shardlab's initial parameters on one fixed batch of {c['batch']}, Adam {LR}:")
    print("step  " + "  ".join(f"{n:>10s}" for n in names))
    for i in range(VERIFY_STEPS):
        print(f"{i + 1:4d}  " + "  ".join(f"{losses[n][i]:10.6f}" for n in names))
    worst = max((abs(losses[n][i] - losses["shardlab"][i]) / max(1.0, abs(losses["shardlab"][i]))
                 for n in names[1:] for i in range(VERIFY_STEPS)), default=0.0)
    ok = worst <= tol
    print(f"largest difference from Shardlab: {worst:.2e} (relative; tolerance {tol:g}): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def report(results, c, args, flops, flops_source):
    fmt = cpu_step.fmt
    sl_t = results.get("shardlab", {}).get("median_step_s")
    head = ["framework", "median step ms", "GFLOP/s", "peak RSS MiB", "shardlab/peer", "busy cores", "version"]
    rows = []
    for name in ("shardlab", "jax", "torch"):
        r = results.get(name)
        if r is None:
            continue
        t = r.get("median_step_s")
        ok = "skipped" not in r and "error" not in r
        rows.append([
            {"shardlab": "Shardlab", "jax": "JAX/Flax", "torch": "PyTorch"}[name],
            fmt(t * 1e3 if t else None),
            fmt(flops / t / 1e9 if t and flops else None),
            fmt(r.get("peak_rss_mib") if ok or name == "shardlab" else None, "{:.0f}"),
            fmt(sl_t / t if t and sl_t else None, "{:.2f}"),
            fmt(r.get("busy_cores"), "{:.2f}"),
            r.get("version", "-"),
        ])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    print()
    print(f"vit-fashion: batch {c['batch']}, ({c['height']}, {c['width']}) -> {c['tokens']} patches of {c['patch']}x{c['patch']}"
          f" -> {c['features']} features, {c['depth']} blocks ({c['heads']} heads, MLP {c['mlp']}), {c['classes']} classes, "
          f"{param_count(c)} params, Adam {LR}, float32")
    print(f"CPU: {cpu_model()}, {os.cpu_count()} logical cores; threads T={args.threads}; "
          f"median of {args.steps} steps after {args.warmup} warm-up")
    print("  ".join(h.rjust(w) if 0 < i < len(head) - 1 else h.ljust(w) for i, (h, w) in enumerate(zip(head, widths))))
    for r in rows:
        print("  ".join(x.rjust(w) if 0 < i < len(head) - 1 else x.ljust(w) for i, (x, w) in enumerate(zip(r, widths))))
    print(f"  (GFLOP/s = {flops / 1e9:.3f} GFLOP per step [{flops_source}] / median step, the same count for every "
          f"framework; shardlab/peer = Shardlab's step time over that framework's: < 1 means Shardlab is faster; "
          f"busy cores = CPU time / wall time over the timed steps)" if flops else "  (no FLOP count: see the notes)")
    for name in ("shardlab", "jax", "torch"):
        r = results.get(name)
        if not r:
            continue
        cpu_step.print_status(name, r)
        bc = r.get("busy_cores")
        if isinstance(bc, (int, float)) and bc < 0.75 * args.threads:
            print(f"  {name}: warning - used only {bc:.2f} of {args.threads} cores during the timed steps "
                  f"(other load on the machine, or too little work per step to split)")
        if r.get("params") and r["params"] != param_count(c):
            print(f"  {name}: warning - {r['params']} parameters, expected {param_count(c)}")
        if r.get("rss_after_import_mib"):
            print(f"  {name}: RSS after imports, before the model: {r['rss_after_import_mib']:.0f} MiB (included in peak RSS)")
        if r.get("code_path"):
            print(f"  {name}: CPU code path - {r['code_path']}")
        if name == "shardlab" and r.get("total_bytes"):
            print(f"  shardlab: the plan predicts {r['total_bytes'] / MIB:.1f} MiB (parameters, Adam state, step arena)")
        ls = [x for x in r.get("losses", []) if isinstance(x, (int, float))]
        if ls:
            print(f"  {name}: loss first {ls[0]:.4g}, last {ls[-1]:.4g}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="CMake build directory (default: build)")
    ap.add_argument("--project", default=DEFAULT_PROJECT, help=f"a ViT project of this shape (default: {DEFAULT_PROJECT})")
    ap.add_argument("--project-data", action="store_true",
                    help="train Shardlab on the project's own data (Fashion-MNIST) instead of synthetic blobs")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for every framework (default: os.cpu_count())")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per framework (>= 5; default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="warm-up steps, not timed (>= 2; default 3; JAX compiles in the first)")
    ap.add_argument("--peers", default="shardlab,jax,torch", help="comma-separated subset of shardlab,jax,torch (default: all)")
    ap.add_argument("--no-pin", action="store_true", help="don't pin children to the first T cores")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per framework process (default 900)")
    ap.add_argument("--json", metavar="OUT", help="also write all results to this JSON file")
    ap.add_argument("--worker", choices=["torch", "jax"], help=argparse.SUPPRESS)
    ap.add_argument("--verify", action="store_true",
                    help=f"instead of timing: check that the three models and Adam give the same losses for "
                         f"{VERIFY_STEPS} steps from Shardlab's initial parameters on one batch")
    ap.add_argument("--config", help=argparse.SUPPRESS)
    ap.add_argument("--verify-dir", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        return run_worker(args)
    if args.steps < 5 or args.warmup < 2:
        ap.error("--steps must be >= 5 and --warmup >= 2")
    if args.threads < 1:
        ap.error("--threads must be >= 1")
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = set(peers) - {"shardlab", "jax", "torch"}
    if unknown:
        ap.error(f"unknown peers {sorted(unknown)}")
    project_path = Path(args.project) if Path(args.project).is_absolute() else REPO / args.project
    src = json.loads(project_path.read_text())
    try:
        c = vit_config(src)
    except (KeyError, TypeError, ValueError) as e:
        ap.error(f"{args.project} is not the ViT this benchmark builds: {e}")

    if args.verify:
        return verify(args, src, c, peers)

    cores = None if args.no_pin else cpu_step.pinned_cores(args.threads)
    if not args.no_pin and cores is None:
        print(f"note: T={args.threads} > {len(os.sched_getaffinity(0))} available cores; not pinning "
              f"(JAX will then use every core)")
    print(f"threads T={args.threads}; children " + (f"pinned to cores {sorted(cores)}" if cores else "not pinned"))

    results = {}
    with tempfile.TemporaryDirectory(prefix="shardlab-vit-bench-") as tmpdir:
        tmp = Path(tmpdir)
        for name in peers:
            results[name] = (bench_shardlab(args, src, c, cores, tmp) if name == "shardlab"
                             else bench_python_peer(name, c, args, cores, tmp))

    sl = results.get("shardlab", {})
    flops, flops_source = sl.get("train_step_flops"), sl.get("flops_source")
    if not flops:
        flops = 3 * forward_matmul_flops(c)
        flops_source = "analytic: 3 x the forward's matmul FLOPs (Shardlab's count was not available)"
    report(results, c, args, flops, flops_source)
    if args.json:
        doc = {
            "model": dict(c, params=param_count(c), lr=LR, layer_norm_epsilon=LN_EPS,
                          forward_matmul_flops=forward_matmul_flops(c)),
            "train_step_flops": flops, "flops_source": flops_source,
            "cpu": cpu_model(), "cpu_count": os.cpu_count(), "python": sys.version.split()[0],
            "threads": args.threads, "steps": args.steps, "warmup": args.warmup,
            "pinned_cores": sorted(cores) if cores else None,
            "results": results, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
