#!/usr/bin/env python3
"""Write Flax/Optax reference data for Shardlab's precision policy.

The models and batches of make_reference.py (fashion-mlp, dot-relu-dot), from the same initial
parameters (data/<model>/init, which this script checks it reproduces), trained 10 optax.adam(1e-3)
steps on the same batch under two policies:

  <model>-bf16   Flax mixed precision: every Dense (and the dot-relu-dot block's products) with
                 dtype=jnp.bfloat16, param_dtype=jnp.float32: inputs and parameters cast to bfloat16
                 for the product, the bias added in bfloat16, relu in bfloat16; the predictions cast
                 back to float32 for the loss. Gradients reach the float32 parameters through the
                 casts; Adam's state is float32. Shardlab: precision {"dtype": "bfloat16"}.
  <model>-tf32   float32 everywhere, but every matmul (forward and both backward products) rounds its
                 operands to TensorFloat-32 (10 mantissa bits, to nearest even) and accumulates in
                 float32, as a GPU's TF32 mode does. JAX's own switch,
                 jax.default_matmul_precision("tensorfloat32"), is ignored by its CPU backend (this
                 script checks that and says so), so the rounding is written out here with a custom VJP.
                 Shardlab: precision {"matmul_precision": "tf32"}.

For each it writes data/<model>-<policy>/:
  step3/<name>.npy   the parameters after 3 steps, float32
  losses.json        {"losses": [the loss at steps 1..10, before each update], "init_from": "<model>",
                      "policy": {...}, the versions, "description"}
x, y and the initial parameters are data/<model>/'s (make_reference.py's), named in "init_from".

Run from the repository root, after make_reference.py:
    python3 tests/reference/make_precision_reference.py
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_reference as base  # noqa: E402  (sets JAX to the CPU, float32, highest precision)

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import flax.linen as nn  # noqa: E402
import optax  # noqa: E402

STEPS_LOSSES = 10
STEPS_PARAMS = 3
BF16 = jnp.bfloat16


# ----------------------------------------------------------------------------------------------
# TensorFloat-32 matmuls, forward and backward.
# ----------------------------------------------------------------------------------------------
def round_tf32(x):
    """float32 -> the nearest value with 10 mantissa bits (ties to even); inf and NaN as they are."""
    u = jax.lax.bitcast_convert_type(x, jnp.uint32)
    finite = (u & 0x7F800000) != 0x7F800000
    r = (u + 0xFFF + ((u >> 13) & 1)) & jnp.uint32(0xFFFFE000)
    return jnp.where(finite, jax.lax.bitcast_convert_type(r, jnp.float32), x)


def _mm(a, b):
    return jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST)


@jax.custom_vjp
def tf32_matmul(a, b):
    """a (..., k) @ b (k, n), both operands rounded to TF32; so are the backward products'."""
    return _mm(round_tf32(a), round_tf32(b))


def _tf32_fwd(a, b):
    return tf32_matmul(a, b), (a, b)


def _tf32_bwd(res, g):
    a, b = res
    ra, rb, rg = round_tf32(a), round_tf32(b), round_tf32(g)
    da = _mm(rg, rb.T)
    db = _mm(ra.reshape(-1, ra.shape[-1]).T, rg.reshape(-1, rg.shape[-1]))
    return da, db


tf32_matmul.defvjp(_tf32_fwd, _tf32_bwd)


def tf32_dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """nn.Dense's product (lhs's last dimension against rhs's first) through tf32_matmul."""
    (lc, rc), (lb, rb) = dimension_numbers
    assert tuple(lc) == (lhs.ndim - 1,) and tuple(rc) == (0,) and not lb and not rb and rhs.ndim == 2, dimension_numbers
    return tf32_matmul(lhs, rhs)


def jax_honours_tf32_on_this_backend():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 256), dtype=np.float32)
    b = rng.standard_normal((256, 16), dtype=np.float32)
    highest = np.asarray(jnp.dot(a, b, precision=jax.lax.Precision.HIGHEST))
    with jax.default_matmul_precision("tensorfloat32"):
        tf32 = np.asarray(jax.jit(lambda x, y: x @ y)(a, b))
    return not np.array_equal(highest, tf32)


# ----------------------------------------------------------------------------------------------
# The models under each policy: the same parameter names, shapes and initialisers as make_reference.py.
# ----------------------------------------------------------------------------------------------
class SimpleModelBf16(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = x.reshape((x.shape[0], -1))
        x = nn.Dense(256, dtype=BF16, param_dtype=jnp.float32, name="dense1")(x)
        x = nn.relu(x)
        x = nn.Dense(10, dtype=BF16, param_dtype=jnp.float32, name="dense2")(x)
        return x.astype(jnp.float32)


class SimpleModelTf32(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = x.reshape((x.shape[0], -1))
        x = nn.Dense(256, dot_general=tf32_dot_general, name="dense1")(x)
        x = nn.relu(x)
        return nn.Dense(10, dot_general=tf32_dot_general, name="dense2")(x)


class DotReluDotPolicy(nn.Module):
    hidden: int
    policy: str

    @nn.compact
    def __call__(self, x, _):
        embed = x.shape[-1]
        w1 = self.param("W1", nn.initializers.xavier_normal(), (embed, self.hidden))
        w2 = self.param("W2", nn.initializers.xavier_normal(), (self.hidden, embed))
        if self.policy == "bf16":  # nn.Dense(dtype=bfloat16)'s promote_dtype, then the bfloat16 product
            return jnp.matmul(nn.relu(jnp.matmul(x.astype(BF16), w1.astype(BF16))), w2.astype(BF16)), None
        return tf32_matmul(nn.relu(tf32_matmul(x, w1)), w2), None


class ScannedDotReluDotPolicy(nn.Module):
    policy: str

    @nn.compact
    def __call__(self, x):
        blocks = nn.scan(
            DotReluDotPolicy, variable_axes={"params": 0}, split_rngs={"params": True}, length=base.LAYERS
        )(hidden=base.HIDDEN, policy=self.policy, name="blocks")
        # The scan's carry keeps one dtype: under bfloat16 it is cast once, before the first layer
        # (Shardlab's first Dense casts the same values).
        x, _ = blocks(x.astype(BF16) if self.policy == "bf16" else x, None)
        return x.astype(jnp.float32)


def model_for(name: str, policy: str):
    if name == "fashion-mlp":
        return SimpleModelBf16() if policy == "bf16" else SimpleModelTf32()
    return ScannedDotReluDotPolicy(policy=policy)


POLICIES = {
    "bf16": {"dtype": "bfloat16", "param_dtype": "float32", "matmul_precision": "highest"},
    "tf32": {"dtype": "float32", "param_dtype": "float32", "matmul_precision": "tf32"},
}


def build(name: str, policy: str, out_root: Path):
    _, x, y, base_loss_fn, paths, shapes, _ = base.MODELS[name]()
    model = model_for(name, policy)
    params = model.init(jax.random.PRNGKey(base.SEED), jnp.asarray(x))["params"]
    # Same initial parameters as the float32 reference (the policy changes no initialiser).
    init_dir = out_root / name / "init"
    for path, a in base.flatten_params(params, paths, shapes).items():
        want = np.load(init_dir / (path.replace("/", ".") + ".npy"))
        if not np.array_equal(a, want):
            raise SystemExit(f"{name}-{policy}: {path} does not initialise as data/{name}/init does")

    if name == "fashion-mlp":
        def loss_fn(p, x, y):
            return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(model.apply({"params": p}, x), y))
    else:
        def loss_fn(p, x, y):
            return jnp.mean((model.apply({"params": p}, x) - y) ** 2)

    tx = optax.adam(base.LR)
    opt_state = tx.init(params)
    step = jax.jit(jax.value_and_grad(loss_fn))
    xj, yj = jnp.asarray(x), jnp.asarray(y)
    losses, step3 = [], None
    for i in range(STEPS_LOSSES):
        loss, grads = step(params, xj, yj)
        losses.append(float(loss))
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        if i + 1 == STEPS_PARAMS:
            step3 = base.flatten_params(params, paths, shapes)

    d = out_root / f"{name}-{policy}"
    if d.exists():
        shutil.rmtree(d)
    base.save_params(d / "step3", step3)
    honoured = jax_honours_tf32_on_this_backend()
    meta = {
        "losses": losses,
        "init_from": name,
        "policy": POLICIES[policy],
        "jax": jax.__version__,
        "flax": base.flax.__version__,
        "optax": optax.__version__,
        "numpy": np.__version__,
        "jax_cpu_honours_tensorfloat32": honoured,
        "description": (
            f"{name} (make_reference.py's model, batch and initial parameters) under "
            + ("Flax mixed precision: dtype=bfloat16, param_dtype=float32, predictions cast to float32 for the loss"
               if policy == "bf16" else
               "TensorFloat-32 matmuls emulated: every product's operands (forward and backward) rounded to 10 "
               "mantissa bits, float32 accumulation (jax.default_matmul_precision('tensorfloat32') is "
               + ("honoured" if honoured else "ignored") + " by JAX's CPU backend)")
            + f"; {STEPS_LOSSES} optax.adam({base.LR}) steps on the same batch; losses before each update, "
            f"parameters after {STEPS_PARAMS} steps."
        ),
        "steps": STEPS_LOSSES,
        "params_after_step": STEPS_PARAMS,
    }
    (d / "losses.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"{name}-{policy}: losses {[round(v, 6) for v in losses]} -> {d}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "data",
                    help="the reference data root, holding make_reference.py's models (default: tests/reference/data)")
    args = ap.parse_args(argv)
    assert jax.default_backend() == "cpu", jax.default_backend()
    if not jax_honours_tf32_on_this_backend():
        print("note: JAX's CPU backend ignores jax.default_matmul_precision('tensorfloat32'); "
              "the tf32 references emulate it by rounding every matmul's operands")
    for name in ("fashion-mlp", "dot-relu-dot"):
        for policy in ("bf16", "tf32"):
            build(name, policy, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
