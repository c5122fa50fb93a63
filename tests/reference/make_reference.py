#!/usr/bin/env python3
"""Write Flax/Optax reference data that Shardlab's C++ tests compare against.

For each model this writes, under tests/reference/data/<model>/:
  x.npy              the fixed input batch (float32)
  y.npy              the targets (int32 labels for fashion-mlp, vit-tiny, cnn-fashion and cnn-tiny,
                     int32 (8, 16) per-position targets for llama-tiny, float32 for dot-relu-dot)
  init/<name>.npy    Flax's own model.init parameters (PRNGKey(0)), float32
  step3/<name>.npy   the parameters after 3 optax.adam(1e-3) steps on that batch, float32
  logits.npy         llama-tiny only: the logits (8, 16, 64) at the init parameters, float32
  losses.json        {"losses": [loss before update 1, 2, 3], "loss_after": loss with step3 params,
                      "jax", "flax", "optax", "numpy" versions, "description", "params": {...},
                      "checks" for models with extra checks (cnn-tiny: max_pool ties);
                      llama-tiny adds "transformers" (version), "llama_config", "forward_check", ...}

llama-tiny is Hugging Face transformers' own FlaxLlamaForCausalLM (transformers 4.x, which the other
models don't need: pip install "transformers==4.57.6"); its HF parameter tree is converted to
Shardlab's names and layouts (llama_to_shardlab). The same run writes llama-tiny's init parameters as
Hugging Face model folders, as PyTorch's save_pretrained lays them out (config.json, safetensors with
LlamaForCausalLM's state-dict names, nn.Linear weights (out, in)), and reads them back to check them:
  <hf root>/llama-tiny/          config.json, model.safetensors (float32)
  <hf root>/llama-tiny-sharded/  config.json, model-0000{1,2}-of-00002.safetensors, model.safetensors.index.json
  <hf root>/llama-tiny-bf16/     config.json, model.safetensors (bfloat16)
<hf root> is tests/reference/hf (--hf-out DIR, default: hf next to the --out root).

gpt2-tiny is transformers' own FlaxGPT2LMHeadModel: it writes tests/reference/data/gpt2-tiny/{x.npy,
logits.npy (the logits at its init params), y.npy, logits_after.npy (after 3 Adam steps with the LM head tied
to the token embedding, as GPT-2 trains; meta.json's "training" also has an untied control), meta.json} and those init
params as a Hugging Face GPT2LMHeadModel folder, <hf root>/gpt2-tiny/ (config.json, model.safetensors: GPT-2's
Conv1D weights (in, out), no lm_head.weight since it is tied to transformer.wte.weight), and reads it back.

<name> is Shardlab's parameter path with '/' replaced by '.', e.g. dense1.kernel.npy.
The model names, shapes and parameter paths are the contract with the C++ side.

Run from the repository root:
    python3 tests/reference/make_reference.py            # writes tests/reference/data/
    python3 tests/reference/make_reference.py --out DIR  # somewhere else
    python3 tests/reference/make_reference.py --model vit-tiny  # one model only
    python3 tests/reference/make_reference.py --model llama-tiny  # also writes tests/reference/hf/
    python3 tests/reference/make_reference.py --model gpt2-tiny   # data/gpt2-tiny/ and hf/gpt2-tiny/ only
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

# Must be set before jax is imported.
os.environ["JAX_PLATFORMS"] = "cpu"

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", False)
jax.config.update("jax_default_matmul_precision", "highest")

import flax  # noqa: E402
import flax.linen as nn  # noqa: E402
import optax  # noqa: E402

SEED = 0  # model.init seed
LR = 1e-3  # optax.adam(LR), default b1=0.9, b2=0.999, eps=1e-8
STEPS = 3


# ----------------------------------------------------------------------------------------------
# (a) fashion-mlp: seed 001's SimpleModel.
# ----------------------------------------------------------------------------------------------
class SimpleModel(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = x.reshape((x.shape[0], -1))  # (32, 28, 28) -> (32, 784)
        x = nn.Dense(256, name="dense1")(x)
        x = nn.relu(x)
        x = nn.Dense(10, name="dense2")(x)
        return x


def fashion_mlp():
    rng = np.random.default_rng(1)
    x = rng.random((32, 28, 28), dtype=np.float32)  # uniform [0, 1)
    y = rng.integers(0, 10, size=(32,), dtype=np.int32)  # labels 0..9, same rng, drawn after x
    model = SimpleModel()

    def loss_fn(params, x, y):
        logits = model.apply({"params": params}, x)
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, y))

    # Flax path (inside "params") -> Shardlab path.
    paths = {
        ("dense1", "kernel"): "dense1/kernel",
        ("dense1", "bias"): "dense1/bias",
        ("dense2", "kernel"): "dense2/kernel",
        ("dense2", "bias"): "dense2/bias",
    }
    shapes = {
        "dense1/kernel": (784, 256),
        "dense1/bias": (256,),
        "dense2/kernel": (256, 10),
        "dense2/bias": (10,),
    }
    description = (
        "fashion-mlp (seed 001 SimpleModel): x float32 (32,28,28) = default_rng(1).random(dtype=float32), "
        "y int32 (32,) = same rng .integers(0,10); flatten -> nn.Dense(256) 'dense1' -> relu -> "
        "nn.Dense(10) 'dense2' (Flax default inits: lecun_normal kernel, zeros bias); "
        "loss = mean(optax.softmax_cross_entropy_with_integer_labels(logits, y)); "
        "model.init(PRNGKey(0)); 3 x optax.adam(1e-3) steps on the same batch; float32, "
        "jax_default_matmul_precision=highest, CPU."
    )
    return model, x, y, loss_fn, paths, shapes, description


# ----------------------------------------------------------------------------------------------
# (b) dot-relu-dot: seed 002, reduced size.
# ----------------------------------------------------------------------------------------------
EMBED, HIDDEN, LAYERS = 32, 48, 4


class DotReluDot(nn.Module):
    hidden: int

    @nn.compact
    def __call__(self, x, _):
        embed = x.shape[-1]
        w1 = self.param("W1", nn.initializers.xavier_normal(), (embed, self.hidden))
        y = nn.relu(x @ w1)
        w2 = self.param("W2", nn.initializers.xavier_normal(), (self.hidden, embed))
        z = y @ w2
        return z, None


class ScannedDotReluDot(nn.Module):
    @nn.compact
    def __call__(self, x):
        blocks = nn.scan(
            DotReluDot,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            length=LAYERS,
        )(hidden=HIDDEN, name="blocks")
        x, _ = blocks(x, None)
        return x


def dot_relu_dot():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, EMBED), dtype=np.float32)
    y = np.ones((8, EMBED), dtype=np.float32)
    model = ScannedDotReluDot()

    def loss_fn(params, x, y):
        out = model.apply({"params": params}, x)
        return jnp.mean((out - y) ** 2)

    paths = {
        ("blocks", "W1"): "blocks/W1/kernel",
        ("blocks", "W2"): "blocks/W2/kernel",
    }
    shapes = {
        "blocks/W1/kernel": (LAYERS, EMBED, HIDDEN),
        "blocks/W2/kernel": (LAYERS, HIDDEN, EMBED),
    }
    description = (
        "dot-relu-dot (seed 002, reduced): nn.scan over 4 layers (variable_axes={'params':0}, "
        "split_rngs={'params':True}) of DotReluDot: W1 = param('W1', xavier_normal, (32,48)), "
        "y = relu(x @ W1), W2 = param('W2', xavier_normal, (48,32)), z = y @ W2, carry z; no biases. "
        "x float32 (8,32) = default_rng(2).standard_normal(dtype=float32), target ones (8,32); "
        "loss = mean((out - y)^2); model.init(PRNGKey(0)); 3 x optax.adam(1e-3) steps on the same "
        "batch; float32, jax_default_matmul_precision=highest, CPU. Flax param blocks/W1 (stacked, "
        "leading layer axis) is Shardlab's blocks/W1/kernel."
    )
    return model, x, y, loss_fn, paths, shapes, description


# ----------------------------------------------------------------------------------------------
# (c) vit-tiny: tests/reference/vit-tiny.shardlab.json, a small pre-norm ViT.
# ----------------------------------------------------------------------------------------------
VIT_IMAGE, VIT_PATCH, VIT_EMBED, VIT_HEADS, VIT_MLP, VIT_LAYERS, VIT_CLASSES = 12, 4, 16, 2, 32, 2, 10
VIT_TOKENS = (VIT_IMAGE // VIT_PATCH) ** 2  # 9
VIT_BATCH = 16


class PositionEmbedding(nn.Module):
    @nn.compact
    def __call__(self, x):
        emb = self.param("embedding", nn.initializers.normal(0.02), x.shape[1:])  # (9, 16)
        return x + emb[None]


class EncoderBlock(nn.Module):
    """Pre-norm transformer block; the carry is x, as Shardlab's Repeat body."""

    @nn.compact
    def __call__(self, x, _):
        y = nn.LayerNorm(name="ln1")(x)
        y = nn.MultiHeadDotProductAttention(num_heads=VIT_HEADS, name="attn")(y)  # self-attention
        x = x + y  # res1
        y = nn.LayerNorm(name="ln2")(x)
        y = nn.Dense(VIT_MLP, name="mlp1")(y)
        y = nn.gelu(y)  # approximate=True (tanh), Flax's default
        y = nn.Dense(VIT_EMBED, name="mlp2")(y)
        return x + y, None  # res2


class ViTTiny(nn.Module):
    @nn.compact
    def __call__(self, x):
        b = x.shape[0]
        x = nn.Conv(VIT_EMBED, (VIT_PATCH, VIT_PATCH), strides=(VIT_PATCH, VIT_PATCH), padding="VALID",
                    name="patches")(x[..., None])  # (B, 3, 3, 16)
        x = x.reshape((b, -1, VIT_EMBED))  # (B, 9, 16), row-major over the patch grid
        x = PositionEmbedding(name="pos")(x)
        blocks = nn.scan(
            EncoderBlock,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            length=VIT_LAYERS,
        )(name="blocks")
        x, _ = blocks(x, None)
        x = nn.LayerNorm(name="norm")(x)
        x = jnp.mean(x, axis=1)  # mean over the 9 tokens
        return nn.Dense(VIT_CLASSES, name="head")(x)


def vit_tiny():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((VIT_BATCH, VIT_IMAGE, VIT_IMAGE), dtype=np.float32)
    y = rng.integers(0, VIT_CLASSES, size=(VIT_BATCH,), dtype=np.int32)  # same rng, drawn after x
    model = ViTTiny()

    def loss_fn(params, x, y):
        logits = model.apply({"params": params}, x)
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, y))

    E, H, K, M, L, C = VIT_EMBED, VIT_HEADS, VIT_EMBED // VIT_HEADS, VIT_MLP, VIT_LAYERS, VIT_CLASSES
    shapes = {
        "patches/kernel": (VIT_PATCH, VIT_PATCH, 1, E),
        "patches/bias": (E,),
        "pos/embedding": (VIT_TOKENS, E),
        "blocks/ln1/scale": (L, E),
        "blocks/ln1/bias": (L, E),
    }
    for proj in ("query", "key", "value"):
        shapes[f"blocks/attn/{proj}/kernel"] = (L, E, H, K)
        shapes[f"blocks/attn/{proj}/bias"] = (L, H, K)
    shapes.update({
        "blocks/attn/out/kernel": (L, H, K, E),
        "blocks/attn/out/bias": (L, E),
        "blocks/ln2/scale": (L, E),
        "blocks/ln2/bias": (L, E),
        "blocks/mlp1/kernel": (L, E, M),
        "blocks/mlp1/bias": (L, M),
        "blocks/mlp2/kernel": (L, M, E),
        "blocks/mlp2/bias": (L, E),
        "norm/scale": (E,),
        "norm/bias": (E,),
        "head/kernel": (E, C),
        "head/bias": (C,),
    })
    # The Flax path inside "params" is Shardlab's path split at '/'.
    paths = {tuple(p.split("/")): p for p in shapes}
    description = (
        "vit-tiny (tests/reference/vit-tiny.shardlab.json): x float32 (16,12,12) = "
        "default_rng(3).standard_normal(dtype=float32), y int32 (16,) = same rng .integers(0,10); "
        "nn.Conv(16, (4,4), strides=(4,4), padding='VALID') 'patches' on x[..., None] -> reshape (16,9,16) "
        "-> 'pos' (param 'embedding' normal(0.02) (9,16), x + emb[None]) -> nn.scan 'blocks' over 2 layers "
        "(variable_axes={'params':0}, split_rngs={'params':True}) of a pre-norm block: "
        "x + MultiHeadDotProductAttention(num_heads=2) 'attn'(LayerNorm 'ln1'(x)), then "
        "x + Dense(16) 'mlp2'(gelu(Dense(32) 'mlp1'(LayerNorm 'ln2'(x)))) (gelu approximate=True) -> "
        "LayerNorm 'norm' -> mean over the 9 tokens -> nn.Dense(10) 'head'; Flax default inits; "
        "loss = mean(optax.softmax_cross_entropy_with_integer_labels(logits, y)); model.init(PRNGKey(0)); "
        "3 x optax.adam(1e-3) steps on the same batch; float32, jax_default_matmul_precision=highest, CPU. "
        "Stacked params (blocks/...) lead with the layer axis. blocks/attn/key/bias has an identically "
        "zero gradient (softmax over the keys is invariant to q . b), so its step-3 values are float32 "
        "rounding noise amplified by Adam (listed in zero_gradient)."
    )
    return model, x, y, loss_fn, paths, shapes, description


# ----------------------------------------------------------------------------------------------
# (d) cnn-fashion: the Flax MNIST example's CNN, on Fashion-MNIST shaped input.
# ----------------------------------------------------------------------------------------------
class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = x[..., None]  # (B, 28, 28) -> (B, 28, 28, 1), NHWC
        x = nn.Conv(32, (3, 3), name="conv1")(x)  # padding 'SAME', stride 1 -> (B, 28, 28, 32)
        x = nn.relu(x)
        x = nn.avg_pool(x, (2, 2), strides=(2, 2))  # (B, 14, 14, 32)
        x = nn.Conv(64, (3, 3), name="conv2")(x)  # (B, 14, 14, 64)
        x = nn.relu(x)
        x = nn.avg_pool(x, (2, 2), strides=(2, 2))  # (B, 7, 7, 64)
        x = x.reshape((x.shape[0], -1))  # (B, 3136), row-major over (7, 7, 64)
        x = nn.Dense(256, name="dense1")(x)
        x = nn.relu(x)
        x = nn.Dense(10, name="dense2")(x)
        return x


def softmax_xent_loss(model):
    def loss_fn(params, x, y):
        logits = model.apply({"params": params}, x)
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, y))
    return loss_fn


def cnn_fashion():
    rng = np.random.default_rng(5)
    x = rng.random((16, 28, 28), dtype=np.float32)  # uniform [0, 1)
    y = rng.integers(0, 10, size=(16,), dtype=np.int32)  # same rng, drawn after x
    model = CNN()
    shapes = {
        "conv1/kernel": (3, 3, 1, 32),
        "conv1/bias": (32,),
        "conv2/kernel": (3, 3, 32, 64),
        "conv2/bias": (64,),
        "dense1/kernel": (3136, 256),
        "dense1/bias": (256,),
        "dense2/kernel": (256, 10),
        "dense2/bias": (10,),
    }
    paths = {tuple(p.split("/")): p for p in shapes}
    description = (
        "cnn-fashion (the Flax MNIST example's CNN): x float32 (16,28,28) = default_rng(5).random(dtype=float32), "
        "y int32 (16,) = same rng .integers(0,10); on x[..., None] (NHWC): nn.Conv(32, (3,3)) 'conv1' "
        "(padding 'SAME', stride 1) -> relu -> nn.avg_pool((2,2), strides=(2,2)) -> nn.Conv(64, (3,3)) 'conv2' "
        "-> relu -> avg_pool((2,2), strides=(2,2)) -> reshape (16, 3136) row-major over (7,7,64) -> "
        "nn.Dense(256) 'dense1' -> relu -> nn.Dense(10) 'dense2'; Flax default inits (lecun_normal kernel, "
        "zeros bias); loss = mean(optax.softmax_cross_entropy_with_integer_labels(logits, y)); "
        "model.init(PRNGKey(0)); 3 x optax.adam(1e-3) steps on the same batch; float32, "
        "jax_default_matmul_precision=highest, CPU."
    )
    return model, x, y, softmax_xent_loss(model), paths, shapes, description


# ----------------------------------------------------------------------------------------------
# (e) cnn-tiny: stride, SAME padding with stride 2 on an even size, SAME max pooling, dilation,
#     feature groups, VALID padding.
# ----------------------------------------------------------------------------------------------
class CNNTiny(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = x[..., None]  # (B, 12, 12, 1)
        # 'SAME' with stride 2 on 12: out 6, total pad (6-1)*2+3-12 = 1, low 0, high 1.
        x = nn.Conv(8, (3, 3), strides=(2, 2), padding="SAME", name="conv1")(x)  # (B, 6, 6, 8)
        x = nn.relu(x)
        x = nn.max_pool(x, (3, 3), strides=(1, 1), padding="SAME")  # pad 1 each side with -inf, (B, 6, 6, 8)
        # effective window 5 (dilation 2), VALID: 6 -> 2; 2 groups of 4 input -> 4 output channels.
        x = nn.Conv(8, (3, 3), kernel_dilation=(2, 2), feature_group_count=2, padding="VALID",
                    name="conv2")(x)  # (B, 2, 2, 8)
        x = nn.relu(x)
        x = nn.avg_pool(x, (2, 2), strides=(2, 2))  # VALID, (B, 1, 1, 8)
        x = x.reshape((x.shape[0], -1))  # (B, 8)
        return nn.Dense(10, name="head")(x)


def cnn_tiny():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 12, 12), dtype=np.float32)
    y = rng.integers(0, 10, size=(8,), dtype=np.int32)  # same rng, drawn after x
    model = CNNTiny()
    shapes = {
        "conv1/kernel": (3, 3, 1, 8),
        "conv1/bias": (8,),
        "conv2/kernel": (3, 3, 4, 8),
        "conv2/bias": (8,),
        "head/kernel": (8, 10),
        "head/bias": (10,),
    }
    paths = {tuple(p.split("/")): p for p in shapes}
    description = (
        "cnn-tiny: x float32 (8,12,12) = default_rng(4).standard_normal(dtype=float32), y int32 (8,) = same "
        "rng .integers(0,10); on x[..., None] (NHWC): nn.Conv(8, (3,3), strides=(2,2), padding='SAME') 'conv1' "
        "(pad rows/cols: 0 before, 1 after) -> (8,6,6,8) -> relu -> nn.max_pool((3,3), strides=(1,1), "
        "padding='SAME') (pad 1 each side, -inf) -> nn.Conv(8, (3,3), kernel_dilation=(2,2), "
        "feature_group_count=2, padding='VALID') 'conv2' -> (8,2,2,8) -> relu -> nn.avg_pool((2,2), "
        "strides=(2,2)) -> (8,1,1,8) -> reshape (8,8) -> nn.Dense(10) 'head'; Flax default inits "
        "(lecun_normal kernel, zeros bias); loss = mean(optax.softmax_cross_entropy_with_integer_labels("
        "logits, y)); model.init(PRNGKey(0)); 3 x optax.adam(1e-3) steps on the same batch; float32, "
        "jax_default_matmul_precision=highest, CPU. checks: max_pool windows whose maximum is held by more "
        "than one position, in each step's forward pass."
    )
    return model, x, y, softmax_xent_loss(model), paths, shapes, description


# ----------------------------------------------------------------------------------------------
# (f) gn-tiny: GroupNorm over an image's groups of channels (and over a vector's), between a
#     convolution and the head.
# ----------------------------------------------------------------------------------------------
class GNTiny(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = x[..., None]  # (B, 6, 6, 1)
        x = nn.Conv(8, (3, 3), padding="SAME", name="conv")(x)  # (B, 6, 6, 8)
        x = nn.GroupNorm(num_groups=4, name="norm1")(x)  # groups of 2 channels, each over 6 x 6 x 2
        x = nn.relu(x)
        x = x.reshape((x.shape[0], -1))  # (B, 288)
        x = nn.Dense(16, name="mid")(x)
        x = nn.GroupNorm(num_groups=2, epsilon=1e-5, name="norm2")(x)  # (B, 16): groups of 8 features
        x = nn.relu(x)
        return nn.Dense(10, name="head")(x)


def gn_tiny():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((8, 6, 6), dtype=np.float32)
    y = rng.integers(0, 10, size=(8,), dtype=np.int32)  # same rng, drawn after x
    model = GNTiny()
    shapes = {
        "conv/kernel": (3, 3, 1, 8),
        "conv/bias": (8,),
        "norm1/scale": (8,),
        "norm1/bias": (8,),
        "mid/kernel": (288, 16),
        "mid/bias": (16,),
        "norm2/scale": (16,),
        "norm2/bias": (16,),
        "head/kernel": (16, 10),
        "head/bias": (10,),
    }
    paths = {tuple(p.split("/")): p for p in shapes}
    description = (
        "gn-tiny: x float32 (8,6,6) = default_rng(6).standard_normal(dtype=float32), y int32 (8,) = same rng "
        ".integers(0,10); on x[..., None] (NHWC): nn.Conv(8, (3,3), padding='SAME') 'conv' -> (8,6,6,8) -> "
        "nn.GroupNorm(num_groups=4) 'norm1' (epsilon 1e-6) -> relu -> reshape (8,288) -> nn.Dense(16) 'mid' -> "
        "nn.GroupNorm(num_groups=2, epsilon=1e-5) 'norm2' -> relu -> nn.Dense(10) 'head'; Flax default inits "
        "(lecun_normal kernels, zeros biases, ones scales); loss = mean(optax.softmax_cross_entropy_with_integer_"
        "labels(logits, y)); model.init(PRNGKey(0)); 3 x optax.adam(1e-3) steps on the same batch; float32, "
        "jax_default_matmul_precision=highest, CPU."
    )
    return model, x, y, softmax_xent_loss(model), paths, shapes, description


# ----------------------------------------------------------------------------------------------
# (i) cat-tiny: jnp.concatenate twice, as a U-Net's skip joins channels and two branches join
#     features: conv1 -> relu -> conv2, [relu(conv1), conv2] joined along the channels, flattened,
#     two Dense branches joined along the features, relu, the head.
# ----------------------------------------------------------------------------------------------
class CatTiny(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = x[..., None]  # (B, 6, 6, 1)
        h1 = nn.relu(nn.Conv(4, (3, 3), padding="SAME", name="conv1")(x))  # (B, 6, 6, 4)
        h2 = nn.Conv(4, (3, 3), padding="SAME", name="conv2")(h1)  # (B, 6, 6, 4)
        h = jnp.concatenate([h1, h2], axis=-1)  # (B, 6, 6, 8): the skip joins the channels
        h = h.reshape((h.shape[0], -1))  # (B, 288)
        a = nn.Dense(16, name="a")(h)
        b = nn.Dense(8, name="b")(h)
        h = nn.relu(jnp.concatenate([a, b], axis=-1))  # (B, 24): the branches join the features
        return nn.Dense(10, name="head")(h)


def cat_tiny():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((8, 6, 6), dtype=np.float32)
    y = rng.integers(0, 10, size=(8,), dtype=np.int32)  # same rng, drawn after x
    model = CatTiny()
    shapes = {
        "conv1/kernel": (3, 3, 1, 4), "conv1/bias": (4,), "conv2/kernel": (3, 3, 4, 4), "conv2/bias": (4,),
        "a/kernel": (288, 16), "a/bias": (16,), "b/kernel": (288, 8), "b/bias": (8,),
        "head/kernel": (24, 10), "head/bias": (10,),
    }
    paths = {tuple(p.split("/")): p for p in shapes}
    description = (
        "cat-tiny: x float32 (8,6,6) = default_rng(8).standard_normal(dtype=float32), y int32 (8,) = same rng "
        ".integers(0,10); on x[..., None] (NHWC): h1 = relu(nn.Conv(4, (3,3), padding='SAME') 'conv1'), h2 = "
        "nn.Conv(4, (3,3), padding='SAME') 'conv2' (h1), jnp.concatenate([h1, h2], axis=-1) (8,6,6,8) -> reshape "
        "(8,288) -> nn.Dense(16) 'a' and nn.Dense(8) 'b' -> jnp.concatenate([a, b], axis=-1) (8,24) -> relu -> "
        "nn.Dense(10) 'head'; Flax default inits; loss = mean(optax.softmax_cross_entropy_with_integer_labels"
        "(logits, y)); model.init(PRNGKey(0)); 3 x optax.adam(1e-3) steps on the same batch; float32, "
        "jax_default_matmul_precision=highest, CPU."
    )
    return model, x, y, softmax_xent_loss(model), paths, shapes, description


def max_pool_tie_routing():
    """Where jax.grad of nn.max_pool sends a window's gradient when its maximum is tied: a (1,3,3,1)
    input of zeros, max_pool (3,3) stride 1 'SAME'. JAX routes each window's gradient to its first
    maximum in row-major window order (padding skipped), which gives [[4,2,0],[2,1,0],[0,0,0]]."""
    g = jax.grad(lambda v: nn.max_pool(v, (3, 3), strides=(1, 1), padding="SAME").sum())(jnp.zeros((1, 3, 3, 1)))
    g = np.asarray(g)[0, :, :, 0]
    first = np.array([[4, 2, 0], [2, 1, 0], [0, 0, 0]], np.float32)
    last = np.array([[0, 0, 0], [0, 1, 2], [0, 2, 4]], np.float32)
    return "first" if np.array_equal(g, first) else "last" if np.array_equal(g, last) else g.tolist()


def cnn_tiny_checks(model, params, x):
    """Ties in the max_pool windows of this forward pass, computed with NumPy from conv1's output."""
    _, state = model.apply({"params": params}, x, capture_intermediates=True, mutable=["intermediates"])
    pre = np.asarray(state["intermediates"]["conv1"]["__call__"][0])  # (B, 6, 6, 8), before relu
    a = np.maximum(pre, np.float32(0))  # what max_pool sees
    b, h, w, c = a.shape
    padded = np.full((b, h + 2, w + 2, c), -np.inf, np.float32)  # 'SAME', window 3, stride 1: pad 1, 1
    padded[:, 1:-1, 1:-1, :] = a
    win = np.stack([padded[:, i:i + h, j:j + w, :] for i in range(3) for j in range(3)])  # (9, B, h, w, c)
    m = win.max(axis=0)
    tied = (win == m).sum(axis=0) > 1
    out = {
        "max_pool_windows": int(m.size),
        "max_pool_tied_windows": int(tied.sum()),
        "max_pool_tied_windows_max_positive": int((tied & (m > 0)).sum()),  # a tie between positive values
        "conv1_exact_zeros": int((pre == 0).sum()),  # relu'(0): none expected
    }
    if tied.any():
        out["max_pool_tie_gradient_goes_to"] = max_pool_tie_routing()
    return out


# ----------------------------------------------------------------------------------------------
# (f) llama-tiny: Hugging Face transformers' own FlaxLlamaForCausalLM (transformers 4.x; the Flax
#     classes are gone in 5.x). Imported here only, so the other models don't need transformers.
# ----------------------------------------------------------------------------------------------
LLAMA_VOCAB, LLAMA_EMBED, LLAMA_MLP, LLAMA_LAYERS, LLAMA_HEADS, LLAMA_KV_HEADS, LLAMA_SEQ = 64, 32, 64, 2, 4, 2, 16
LLAMA_HEAD_DIM = LLAMA_EMBED // LLAMA_HEADS  # 8
LLAMA_BATCH = 8
LLAMA_EPS, LLAMA_THETA = 1e-6, 10000.0


def llama_config():
    from transformers import LlamaConfig
    return LlamaConfig(vocab_size=LLAMA_VOCAB, hidden_size=LLAMA_EMBED, intermediate_size=LLAMA_MLP,
                       num_hidden_layers=LLAMA_LAYERS, num_attention_heads=LLAMA_HEADS,
                       num_key_value_heads=LLAMA_KV_HEADS, max_position_embeddings=LLAMA_SEQ,
                       rms_norm_eps=LLAMA_EPS, rope_theta=LLAMA_THETA, tie_word_embeddings=False,
                       attention_bias=False, hidden_act="silu")


class HFLlama:
    """transformers' FlaxLlamaForCausalLM behind the init/apply interface that build() uses.

    init: FlaxLlamaForCausalLM(config, seed=SEED) runs init_weights(PRNGKey(SEED), input_shape=(1, 1))
    in its constructor; init() runs the same call with the key build() passes and checks that it gives the
    constructor's parameters. apply: the model's own __call__ with the given params, default
    attention_mask (all ones, so only the causal mask acts) and position_ids (0..S-1), train=False.
    x holds token ids as float32 whole numbers (Shardlab feeds ids as floats)."""

    def __init__(self):
        from transformers import FlaxLlamaForCausalLM
        self.config = llama_config()
        self.hf = FlaxLlamaForCausalLM(self.config, input_shape=(1, 1), seed=SEED, dtype=jnp.float32)

    def init(self, rng, x):
        params = self.hf.init_weights(rng, self.hf.input_shape)
        same = jax.tree_util.tree_map(lambda a, b: bool(np.array_equal(np.asarray(a), np.asarray(b))),
                                      flax.core.unfreeze(params), flax.core.unfreeze(self.hf.params))
        if not all(jax.tree_util.tree_leaves(same)):
            raise SystemExit("llama-tiny: init_weights(PRNGKey(SEED)) differs from the constructor's params")
        return {"params": params}

    def apply(self, variables, x):
        ids = jnp.asarray(x).astype(jnp.int32)  # exact: whole numbers < 2^24
        return self.hf(ids, params=variables["params"]).logits  # (B, S, vocab)


def llama_shapes():
    E, H, KV, D, M, L, V = (LLAMA_EMBED, LLAMA_HEADS, LLAMA_KV_HEADS, LLAMA_HEAD_DIM, LLAMA_MLP, LLAMA_LAYERS,
                            LLAMA_VOCAB)
    return {
        "embed/embedding": (V, E),
        "blocks/ln1/scale": (L, E),
        "blocks/attn/query/kernel": (L, E, H, D),
        "blocks/attn/key/kernel": (L, E, KV, D),
        "blocks/attn/value/kernel": (L, E, KV, D),
        "blocks/attn/out/kernel": (L, H, D, E),
        "blocks/ln2/scale": (L, E),
        "blocks/gate/kernel": (L, E, M),
        "blocks/up/kernel": (L, E, M),
        "blocks/down/kernel": (L, M, E),
        "norm/scale": (E,),
        "head/kernel": (E, V),
    }


def llama_to_shardlab(flat):
    """HF Flax Llama params (flattened dict, Dense kernels (in, out)) -> {Shardlab path: array}.

    Per-layer tensors are stacked on a leading layer axis (layer 0 first). q/k/v kernels (E, heads*D) are
    reshaped to (E, heads, D): output column head*D + d, as FlaxLlamaAttention._split_heads reshapes the
    projection's last axis to (heads, D). o_proj's kernel (heads*D, E) is reshaped to (heads, D, E), its
    input row head*D + d being _merge_heads' order. Every HF parameter must be used exactly once."""
    used = set()

    def get(*key):
        used.add(key)
        return np.asarray(flat[key])

    def stacked(sub, reshape=None):
        arrs = []
        for i in range(LLAMA_LAYERS):
            a = get("model", "layers", str(i), *sub)
            arrs.append(a.reshape(reshape) if reshape else a)
        return np.stack(arrs)

    E, H, KV, D = LLAMA_EMBED, LLAMA_HEADS, LLAMA_KV_HEADS, LLAMA_HEAD_DIM
    out = {
        "embed/embedding": get("model", "embed_tokens", "embedding"),
        "blocks/ln1/scale": stacked(("input_layernorm", "weight")),
        "blocks/attn/query/kernel": stacked(("self_attn", "q_proj", "kernel"), (E, H, D)),
        "blocks/attn/key/kernel": stacked(("self_attn", "k_proj", "kernel"), (E, KV, D)),
        "blocks/attn/value/kernel": stacked(("self_attn", "v_proj", "kernel"), (E, KV, D)),
        "blocks/attn/out/kernel": stacked(("self_attn", "o_proj", "kernel"), (H, D, E)),
        "blocks/ln2/scale": stacked(("post_attention_layernorm", "weight")),
        "blocks/gate/kernel": stacked(("mlp", "gate_proj", "kernel")),
        "blocks/up/kernel": stacked(("mlp", "up_proj", "kernel")),
        "blocks/down/kernel": stacked(("mlp", "down_proj", "kernel")),
        "norm/scale": get("model", "norm", "weight"),
        "head/kernel": get("lm_head", "kernel"),
    }
    if used != set(flat):
        raise SystemExit(f"llama-tiny: HF params {sorted(set(flat) - used)} not converted, "
                         f"{sorted(used - set(flat))} missing")
    return out


def llama_reference_forward(p, x):
    """The README's llama-tiny math written directly in jax.numpy on Shardlab-layout params (no HF, no Flax
    modules): a check of both the description and the parameter conversion against transformers."""
    E, H, KV, D = LLAMA_EMBED, LLAMA_HEADS, LLAMA_KV_HEADS, LLAMA_HEAD_DIM
    f32 = jnp.float32

    def rms(h, w):
        return w * (h / jnp.sqrt(jnp.mean(h * h, axis=-1, keepdims=True) + f32(LLAMA_EPS)))

    s = x.shape[1]
    inv_freq = 1.0 / (LLAMA_THETA ** (np.arange(0, D, 2) / D))  # (D/2,), float64
    ang = (np.arange(s)[:, None] * inv_freq[None, :]).astype(np.float32)  # (S, D/2)
    ang = np.concatenate([ang, ang], axis=-1)  # (S, D)
    cos, sin = jnp.asarray(np.cos(ang))[:, None, :], jnp.asarray(np.sin(ang))[:, None, :]  # (S, 1, D)

    def rope(t):  # (B, S, heads, D); rotate_half pairs element i with i + D/2
        rot = jnp.concatenate([-t[..., D // 2:], t[..., :D // 2]], axis=-1)
        return t * cos + rot * sin

    causal = np.tril(np.ones((s, s), bool))
    h = jnp.asarray(p["embed/embedding"])[jnp.asarray(x).astype(jnp.int32)]  # (B, S, E)
    for i in range(LLAMA_LAYERS):
        a = rms(h, p["blocks/ln1/scale"][i])
        q = rope(jnp.einsum("bse,ehd->bshd", a, p["blocks/attn/query/kernel"][i]))
        k = rope(jnp.einsum("bse,ehd->bshd", a, p["blocks/attn/key/kernel"][i]))
        v = jnp.einsum("bse,ehd->bshd", a, p["blocks/attn/value/kernel"][i])
        kv_of = np.arange(H) // (H // KV)  # query head h uses kv head h // (H / KV) (repeat_kv's order)
        k, v = k[:, :, kv_of], v[:, :, kv_of]
        sc = jnp.einsum("bqhd,bkhd->bhqk", q / jnp.sqrt(f32(D)), k)
        sc = jnp.where(causal, sc, -jnp.inf)
        att = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, axis=-1), v)
        h = h + jnp.einsum("bqhd,hde->bqe", att, p["blocks/attn/out/kernel"][i])
        m = rms(h, p["blocks/ln2/scale"][i])
        g = m @ p["blocks/gate/kernel"][i]
        h = h + (g * jax.nn.sigmoid(g) * (m @ p["blocks/up/kernel"][i])) @ p["blocks/down/kernel"][i]
    return rms(h, p["norm/scale"]) @ p["head/kernel"]


def llama_tiny():
    rng = np.random.default_rng(6)
    x = rng.integers(0, LLAMA_VOCAB, size=(LLAMA_BATCH, LLAMA_SEQ)).astype(np.float32)  # ids as floats
    y = rng.integers(0, LLAMA_VOCAB, size=(LLAMA_BATCH, LLAMA_SEQ), dtype=np.int32)  # same rng, after x
    model = HFLlama()
    description = (
        "llama-tiny: transformers' FlaxLlamaForCausalLM with LlamaConfig(vocab_size=64, hidden_size=32, "
        "intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, "
        "max_position_embeddings=16, rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=False, "
        "attention_bias=False, hidden_act='silu'), dtype float32, its own init (seed 0: "
        "init_weights(PRNGKey(0), (1,1)); normal(0.02) embedding and kernels, ones RMSNorm weights). "
        "x float32 (8,16) = default_rng(6).integers(0,64) token ids as floats; y int32 (8,16) = same rng "
        ".integers(0,64), drawn after x, the target at each position (not shifted). Default position_ids "
        "0..15 and attention_mask all ones (causal mask only). logits (8,16,64); loss = "
        "mean(optax.softmax_cross_entropy_with_integer_labels(logits, y)) over all 128 tokens; 3 x "
        "optax.adam(1e-3) steps on HF's param tree, converted to Shardlab's names afterwards (stacked "
        "blocks/..., layer 0 first; q/k/v kernels (32, heads, 8), out kernel (4, 8, 32), Dense kernels (in, "
        "out)). logits.npy: the logits at the init params. float32, jax_default_matmul_precision=highest, CPU."
    )
    return model, x, y, softmax_xent_loss(model), llama_to_shardlab, llama_shapes(), description


def llama_tiny_extra(model, init_params, final_params, init_flat, step_flat, x, y, loss_after):
    """logits.npy at the init params, the transformers version and config, and a check of the README's
    math (llama_reference_forward on the converted init and step-3 params) against transformers."""
    import transformers
    logits = np.asarray(model.apply({"params": init_params}, jnp.asarray(x)), dtype=np.float32)
    ref_logits = np.asarray(llama_reference_forward(init_flat, jnp.asarray(x)))
    ref_after = np.asarray(llama_reference_forward(step_flat, jnp.asarray(x)))
    ref_loss_after = float(jnp.mean(optax.softmax_cross_entropy_with_integer_labels(ref_after, jnp.asarray(y))))
    check = {
        "reference_forward_logits_max_abs_diff": float(np.abs(ref_logits - logits).max()),
        "reference_forward_loss_after": ref_loss_after,
        "reference_forward_loss_after_rel_diff": abs(ref_loss_after - loss_after) / abs(loss_after),
    }
    print(f"llama-tiny: check of the README math on Shardlab-layout params: {check}")
    if check["reference_forward_logits_max_abs_diff"] > 1e-5 or check["reference_forward_loss_after_rel_diff"] > 1e-5:
        raise SystemExit("llama-tiny: the plain jax.numpy forward pass disagrees with transformers")
    cfg = model.config
    meta = {
        "transformers": transformers.__version__,
        "hf_model_class": type(model.hf).__name__,
        "llama_config": {k: getattr(cfg, k) for k in (
            "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "max_position_embeddings", "rms_norm_eps", "rope_theta", "tie_word_embeddings",
            "attention_bias", "hidden_act", "initializer_range")},
        "logits": {"file": "logits.npy", "shape": list(logits.shape), "dtype": str(logits.dtype),
                   "params": "init"},
        "forward_check": check,
        # Rows of embed/embedding whose id is not in x: exactly zero gradient, unchanged by Adam.
        "embedding_rows_not_in_x": sorted(set(range(LLAMA_VOCAB)) - set(int(t) for t in x.ravel())),
    }
    return {"logits.npy": logits}, meta


# ----------------------------------------------------------------------------------------------
# llama-tiny as Hugging Face model folders: <hf root>/llama-tiny{,-sharded,-bf16}/, written with
# data/llama-tiny/ (same run, same init parameters) for an importer of Hub checkpoints. They hold
# LlamaForCausalLM's PyTorch state dict (names and layouts of modeling_llama.py) in safetensors, and
# config.json, as PyTorch's save_pretrained writes them; neither writing nor checking them needs torch.
# ----------------------------------------------------------------------------------------------
LLAMA_HF_SINGLE, LLAMA_HF_SHARDED, LLAMA_HF_BF16 = "llama-tiny", "llama-tiny-sharded", "llama-tiny-bf16"
# save_pretrained's max_shard_size, applied by huggingface_hub's greedy split in state-dict order: with
# 46,000 bytes the embedding and layer 0 (45,312 bytes) fill the first shard, layer 1, model.norm and
# lm_head (45,440) the second.
LLAMA_HF_MAX_SHARD_SIZE = 46_000
LLAMA_HF_METADATA = {"format": "pt"}  # what save_pretrained (PyTorch) puts in every safetensors header


def llama_hf_shapes():
    """LlamaForCausalLM's state dict (transformers' modeling_llama.py) in its own order, {name: shape}:
    model.embed_tokens (nn.Embedding (V, E)), model.layers.<i> (LlamaDecoderLayer registers self_attn,
    mlp, input_layernorm, post_attention_layernorm, in that order), model.norm, lm_head. nn.Linear weights
    are (out, in); no biases (attention_bias = mlp_bias = False); the rotary inv_freq buffer is not
    persistent, so not in the state dict."""
    E, M, V = LLAMA_EMBED, LLAMA_MLP, LLAMA_VOCAB
    HD, KVD = LLAMA_HEADS * LLAMA_HEAD_DIM, LLAMA_KV_HEADS * LLAMA_HEAD_DIM
    shapes = {"model.embed_tokens.weight": (V, E)}
    for i in range(LLAMA_LAYERS):
        p = f"model.layers.{i}."
        shapes.update({
            p + "self_attn.q_proj.weight": (HD, E),
            p + "self_attn.k_proj.weight": (KVD, E),
            p + "self_attn.v_proj.weight": (KVD, E),
            p + "self_attn.o_proj.weight": (E, HD),
            p + "mlp.gate_proj.weight": (M, E),
            p + "mlp.up_proj.weight": (M, E),
            p + "mlp.down_proj.weight": (E, M),
            p + "input_layernorm.weight": (E,),
            p + "post_attention_layernorm.weight": (E,),
        })
    shapes["model.norm.weight"] = (E,)
    shapes["lm_head.weight"] = (V, E)
    return shapes


def llama_flax_to_hf(flat):
    """HF Flax params (flattened dict) -> LlamaForCausalLM's PyTorch state dict {name: float32 array}, in
    the state dict's order, by transformers' own Flax -> PyTorch rules (load_flax_weights_in_pytorch_model
    in modeling_flax_pytorch_utils.py): the path joined with '.', a Dense 'kernel' (in, out) becomes
    'weight' = kernel.T (out, in), nn.Embed's 'embedding' becomes 'weight' unchanged, and the RMSNorm
    'weight' (a Flax param of that name) stays."""
    out = {}
    for key, a in flat.items():
        a = np.asarray(a)
        if a.dtype != np.float32:
            raise SystemExit(f"llama-tiny HF export: {key} has dtype {a.dtype}, expected float32")
        if key[-1] == "kernel":
            key, a = key[:-1] + ("weight",), a.T
        elif key[-1] == "embedding":
            key = key[:-1] + ("weight",)
        elif key[-1] != "weight":
            raise SystemExit(f"llama-tiny HF export: no PyTorch name for {key}")
        out[".".join(key)] = np.ascontiguousarray(a)  # safetensors writes the raw buffer: must be C-order
    shapes = llama_hf_shapes()
    if set(out) != set(shapes):
        raise SystemExit(f"llama-tiny HF export: {sorted(set(out) ^ set(shapes))} differ from modeling_llama's names")
    for name, shape in shapes.items():
        if out[name].shape != shape:
            raise SystemExit(f"llama-tiny HF export: {name} has shape {out[name].shape}, expected {shape}")
    return {name: out[name] for name in shapes}


def llama_hf_to_flax(tensors):
    """The other way, written separately (as transformers' rename_key_and_reshape_tensor for this model):
    {PyTorch name: array} -> flattened Flax params, float32 (bfloat16 upcast, which is exact)."""
    import ml_dtypes
    out = {}
    for name, a in tensors.items():
        key, a = tuple(name.split(".")), np.asarray(a)
        if a.dtype == ml_dtypes.bfloat16:
            a = a.astype(np.float32)
        if name == "model.embed_tokens.weight":
            key = key[:-1] + ("embedding",)
        elif key[-2].endswith("_proj") or key[-2] == "lm_head":  # nn.Linear: weight (out, in) = kernel.T
            key, a = key[:-1] + ("kernel",), a.T
        out[key] = a
    return out


def llama_hf_to_shardlab(tensors):
    """{PyTorch name: float32 array} -> {Shardlab path: array} directly (the README's table): nn.Linear
    weights transposed to (in, out), q/k/v then reshaped to (E, heads, D) and o_proj's to (H, D, E) as in
    llama_to_shardlab; per-layer tensors stacked, layer 0 first; embedding and norm weights as they are."""
    E, H, KV, D = LLAMA_EMBED, LLAMA_HEADS, LLAMA_KV_HEADS, LLAMA_HEAD_DIM

    def stacked(sub, reshape=None, transpose=True):
        arrs = []
        for i in range(LLAMA_LAYERS):
            a = tensors[f"model.layers.{i}.{sub}.weight"]
            a = a.T if transpose else a
            arrs.append(a.reshape(reshape) if reshape else a)
        return np.stack(arrs)

    return {
        "embed/embedding": tensors["model.embed_tokens.weight"],
        "blocks/ln1/scale": stacked("input_layernorm", transpose=False),
        "blocks/attn/query/kernel": stacked("self_attn.q_proj", (E, H, D)),
        "blocks/attn/key/kernel": stacked("self_attn.k_proj", (E, KV, D)),
        "blocks/attn/value/kernel": stacked("self_attn.v_proj", (E, KV, D)),
        "blocks/attn/out/kernel": stacked("self_attn.o_proj", (H, D, E)),
        "blocks/ln2/scale": stacked("post_attention_layernorm", transpose=False),
        "blocks/gate/kernel": stacked("mlp.gate_proj"),
        "blocks/up/kernel": stacked("mlp.up_proj"),
        "blocks/down/kernel": stacked("mlp.down_proj"),
        "norm/scale": tensors["model.norm.weight"],
        "head/kernel": tensors["lm_head.weight"].T,
    }


def llama_hf_config_json(torch_dtype):
    """config.json as save_pretrained writes it for LlamaForCausalLM: config.to_json_file(path) (use_diff=True,
    json.dumps(indent=2, sort_keys=True) + newline), with "architectures": ["LlamaForCausalLM"] and the
    weights' dtype under "torch_dtype", the name most configs on the Hub use (transformers 4.57.6 writes it
    as "dtype" and still reads "torch_dtype")."""
    cfg = llama_config()
    cfg.architectures = ["LlamaForCausalLM"]
    d = cfg.to_diff_dict()
    d.pop("dtype", None)
    d["torch_dtype"] = torch_dtype
    return json.dumps(d, indent=2, sort_keys=True) + "\n"


def read_safetensors_raw(path: Path):
    """A safetensors file parsed by hand, as a C++ reader does: 8-byte little-endian header length, the JSON
    header, then the data; every tensor's data_offsets must tile the data exactly. Returns (metadata,
    {name: float32 array}, {name: dtype string}, data bytes); F32 is decoded as little-endian float32, BF16 as
    the upper 16 bits of a float32."""
    b = path.read_bytes()
    n = int.from_bytes(b[:8], "little")
    header = json.loads(b[8:8 + n])
    data = b[8 + n:]
    metadata = header.pop("__metadata__", None)
    arrays, dtypes, pos = {}, {}, 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, end = info["data_offsets"]
        count = int(np.prod(info["shape"], dtype=np.int64))
        size = {"F32": 4, "BF16": 2}[info["dtype"]]
        if begin != pos or end - begin != size * count:
            raise SystemExit(f"{path}: {name} data_offsets {info['data_offsets']} don't tile the data")
        raw = data[begin:end]
        if info["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4")
        else:
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        arrays[name] = a.astype(np.float32).reshape(info["shape"])
        dtypes[name] = info["dtype"]
        pos = end
    if pos != len(data):
        raise SystemExit(f"{path}: {len(data) - pos} bytes after the last tensor")
    return metadata, arrays, dtypes, len(data)


def write_llama_hf(hf_root: Path, flat):
    """Writes the three folders (each replaced wholesale) from the flattened Flax init params."""
    import ml_dtypes
    from huggingface_hub import split_state_dict_into_shards_factory
    from safetensors.numpy import save_file

    sd = llama_flax_to_hf(flat)

    def fresh(name):
        d = hf_root / name
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        return d

    def save(tensors, path):
        save_file(tensors, path, metadata=LLAMA_HF_METADATA)
        path.chmod(0o644)  # safetensors creates its files 0600

    d = fresh(LLAMA_HF_SINGLE)
    (d / "config.json").write_bytes(llama_hf_config_json("float32").encode())
    save(sd, d / "model.safetensors")

    # Sharded as save_pretrained(max_shard_size=...) shards: split_torch_state_dict_into_shards is this
    # factory with the tensors' storage sizes, the file names model-0000k-of-0000n.safetensors.
    d = fresh(LLAMA_HF_SHARDED)
    (d / "config.json").write_bytes(llama_hf_config_json("float32").encode())
    split = split_state_dict_into_shards_factory(sd, get_storage_size=lambda a: a.nbytes,
                                                 filename_pattern="model{suffix}.safetensors",
                                                 max_shard_size=LLAMA_HF_MAX_SHARD_SIZE)
    first = ["model.embed_tokens.weight"] + [n for n in sd if n.startswith("model.layers.0.")]
    if (list(split.filename_to_tensors) != ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
            or split.filename_to_tensors["model-00001-of-00002.safetensors"] != first):
        raise SystemExit(f"llama-tiny HF export: unexpected shards {split.filename_to_tensors}")
    for fname, names in split.filename_to_tensors.items():
        save({n: sd[n] for n in names}, d / fname)
    # As save_pretrained (modeling_utils.py of 4.57.6) writes the index: total_parameters and
    # huggingface_hub's total_size, the bytes of tensor data over all shards.
    index = {"metadata": {"total_parameters": int(sum(a.size for a in sd.values())), **split.metadata},
             "weight_map": split.tensor_to_filename}
    (d / "model.safetensors.index.json").write_bytes((json.dumps(index, indent=2, sort_keys=True) + "\n").encode())

    d = fresh(LLAMA_HF_BF16)
    (d / "config.json").write_bytes(llama_hf_config_json("bfloat16").encode())
    save({n: a.astype(ml_dtypes.bfloat16) for n, a in sd.items()}, d / "model.safetensors")


def check_llama_hf(hf_root: Path, flat, shardlab_init, hf_model, x, logits):
    """Reads each folder back and requires its tensors, converted back to Flax's layout, to be the init
    params: exactly for float32, exactly the init params rounded to bfloat16 (round to nearest even) for
    bf16. Each file is read twice (by hand as a C++ reader would, and with safetensors), converted twice
    (llama_hf_to_flax, and transformers' own convert_pytorch_state_dict_to_flax), and the single-file
    folders are also loaded with FlaxLlamaForCausalLM.from_pretrained (transformers' PyTorch-checkpoint
    path for safetensors with format "pt"; it has no sharded-safetensors support) and run on x. Each folder's
    tensors mapped straight to Shardlab's paths (llama_hf_to_shardlab) must also give data/llama-tiny/init/
    (rounded to bfloat16 for bf16)."""
    import ml_dtypes
    from safetensors.numpy import load_file
    from transformers import FlaxLlamaForCausalLM, LlamaConfig
    from transformers.utils import logging as hf_logging
    from transformers.modeling_flax_pytorch_utils import convert_pytorch_state_dict_to_flax

    shapes = llama_hf_shapes()
    flat = {k: np.asarray(v) for k, v in flat.items()}
    rounded = {k: v.astype(ml_dtypes.bfloat16).astype(np.float32) for k, v in flat.items()}
    shardlab_rounded = {k: v.astype(ml_dtypes.bfloat16).astype(np.float32) for k, v in shardlab_init.items()}
    want_cfg = {k: v for k, v in llama_config().to_diff_dict().items() if k != "transformers_version"}

    def same(got, want, what):
        if set(got) != set(want):
            raise SystemExit(f"llama-tiny HF {what}: keys {sorted(set(got) ^ set(want))} differ")
        for k in want:
            g = np.asarray(got[k])
            if g.dtype == ml_dtypes.bfloat16:
                g = g.astype(np.float32)
            if g.shape != want[k].shape or not np.array_equal(g, want[k]):
                raise SystemExit(f"llama-tiny HF {what}: {k} differs")

    report = {}
    for folder, dtype in ((LLAMA_HF_SINGLE, "float32"), (LLAMA_HF_SHARDED, "float32"), (LLAMA_HF_BF16, "bfloat16")):
        d = hf_root / folder
        want = flat if dtype == "float32" else rounded
        cfg_json = json.loads((d / "config.json").read_text())
        cfg = LlamaConfig.from_json_file(str(d / "config.json"))
        got_cfg = cfg.to_diff_dict()
        if (cfg_json.get("torch_dtype") != dtype or cfg_json.get("architectures") != ["LlamaForCausalLM"]
                or cfg_json.get("model_type") != "llama" or str(cfg.dtype) != dtype
                or any(got_cfg.get(k) != v for k, v in want_cfg.items())):
            raise SystemExit(f"llama-tiny HF {folder}: config.json {cfg_json} is not llama-tiny's config")
        if folder == LLAMA_HF_SHARDED:
            index = json.loads((d / "model.safetensors.index.json").read_text())
            files = sorted(set(index["weight_map"].values()))
        else:
            index, files = None, ["model.safetensors"]
        raw, loaded, data_bytes = {}, {}, 0
        for f in files:
            meta, arrays, dtypes, n = read_safetensors_raw(d / f)
            data_bytes += n
            if meta != LLAMA_HF_METADATA:
                raise SystemExit(f"llama-tiny HF {folder}/{f}: metadata {meta}, expected {LLAMA_HF_METADATA}")
            if set(dtypes.values()) != {"F32" if dtype == "float32" else "BF16"}:
                raise SystemExit(f"llama-tiny HF {folder}/{f}: dtypes {sorted(set(dtypes.values()))}")
            lib = load_file(d / f)
            same(lib, arrays, f"{folder}/{f} (safetensors vs by hand)")
            if set(arrays) & set(raw) or (index and any(index["weight_map"][k] != f for k in arrays)):
                raise SystemExit(f"llama-tiny HF {folder}/{f}: tensors in the wrong file")
            raw.update(arrays)
            loaded.update(lib)
        if {k: v.shape for k, v in raw.items()} != {k: tuple(v) for k, v in shapes.items()}:
            raise SystemExit(f"llama-tiny HF {folder}: names/shapes {({k: v.shape for k, v in raw.items()})}")
        if index is not None and (index["metadata"]["total_size"] != data_bytes
                                  or index["metadata"]["total_parameters"] != sum(a.size for a in raw.values())):
            raise SystemExit(f"llama-tiny HF {folder}: index metadata {index['metadata']}, data {data_bytes} bytes")
        same(llama_hf_to_flax(raw), want, f"{folder} (llama_hf_to_flax)")
        same(llama_hf_to_shardlab(raw), shardlab_init if dtype == "float32" else shardlab_rounded,
             f"{folder} (llama_hf_to_shardlab vs data/llama-tiny/init)")
        same(flax.traverse_util.flatten_dict(convert_pytorch_state_dict_to_flax(dict(loaded), hf_model)), want,
             f"{folder} (transformers' convert_pytorch_state_dict_to_flax)")
        entry = {"files": files, "tensor_bytes": data_bytes,
                 "max_abs_diff_to_float32_init": float(max(np.abs(want[k] - flat[k]).max() for k in flat))}
        if index is None:
            # seed=1: a tensor from_pretrained failed to load would keep a random init unlike the saved one.
            verbosity = hf_logging.get_verbosity()
            hf_logging.set_verbosity_error()  # its notice that bf16 weights stay bf16 lists every tensor
            try:
                m = FlaxLlamaForCausalLM.from_pretrained(str(d), seed=1, dtype=jnp.float32)
            finally:
                hf_logging.set_verbosity(verbosity)
            same(flax.traverse_util.flatten_dict(flax.core.unfreeze(m.params)), want, f"{folder} (from_pretrained)")
            p32 = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float32), m.params)
            lg = np.asarray(m(jnp.asarray(x).astype(jnp.int32), params=p32).logits)
            entry["from_pretrained_logits_max_abs_diff_to_logits_npy"] = float(np.abs(lg - logits).max())
            if dtype == "float32" and entry["from_pretrained_logits_max_abs_diff_to_logits_npy"] > 1e-6:
                raise SystemExit(f"llama-tiny HF {folder}: from_pretrained's logits differ from logits.npy")
        report[folder] = entry
        print(f"llama-tiny HF {folder}: {entry}")
    return report


def llama_tiny_hf(model, init_params, init_flat, x, extra_files, hf_root: Path):
    flat = flax.traverse_util.flatten_dict(flax.core.unfreeze(init_params))
    write_llama_hf(hf_root, flat)
    check_llama_hf(hf_root, flat, init_flat, model.hf, x, extra_files["logits.npy"])


# ----------------------------------------------------------------------------------------------
# (g) gpt2-tiny: Hugging Face transformers' own FlaxGPT2LMHeadModel: x, the logits at the model's own init
#     parameters, and those parameters as a Hugging Face GPT2LMHeadModel folder, <hf root>/gpt2-tiny/
#     (config.json, model.safetensors as the Hub's GPT-2 checkpoints hold them), for an importer of GPT-2
#     checkpoints; then 3 Adam steps with the LM head tied (y, logits after), and an untied control.
#     Writes data/gpt2-tiny/{x.npy, logits.npy, y.npy, logits_after.npy, meta.json}.
# ----------------------------------------------------------------------------------------------
GPT2_VOCAB, GPT2_POSITIONS, GPT2_EMBED, GPT2_LAYERS, GPT2_HEADS = 64, 16, 32, 2, 4
GPT2_HEAD_DIM = GPT2_EMBED // GPT2_HEADS  # 8
GPT2_MLP = 4 * GPT2_EMBED  # n_inner None: 4 * n_embd = 128
GPT2_BATCH, GPT2_SEQ = 8, 16
GPT2_EPS = 1e-5
GPT2_HF = "gpt2-tiny"  # the folder under the hf root
GPT2_HF_METADATA = {"format": "pt"}  # what save_pretrained (PyTorch) puts in the safetensors header


def gpt2_config():
    from transformers import GPT2Config
    return GPT2Config(vocab_size=GPT2_VOCAB, n_positions=GPT2_POSITIONS, n_embd=GPT2_EMBED, n_layer=GPT2_LAYERS,
                      n_head=GPT2_HEADS, activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                      attn_pdrop=0.0, layer_norm_epsilon=GPT2_EPS)


def gpt2_hf_shapes():
    """GPT2LMHeadModel's state dict (transformers' modeling_gpt2.py) as the Hub's checkpoints hold it, in the
    state dict's order, {name: shape}: transformer.wte and transformer.wpe (nn.Embedding, (rows, E)),
    transformer.h.<i> (GPT2Block registers ln_1, attn (c_attn, c_proj), ln_2, mlp (c_fc, c_proj), in that
    order), transformer.ln_f. GPT-2's projections are pytorch_utils.Conv1D, whose weight is (in, out)
    (torch.empty(nx, nf); forward: addmm(bias, x, weight) = x @ weight + bias), NOT nn.Linear's (out, in).
    No lm_head.weight: it is tied to transformer.wte.weight (_tied_weights_keys) and save_pretrained leaves it
    out; no attn.bias / attn.masked_bias (non-persistent buffers; some old Hub checkpoints still hold them)."""
    E, M, V, P = GPT2_EMBED, GPT2_MLP, GPT2_VOCAB, GPT2_POSITIONS
    shapes = {"transformer.wte.weight": (V, E), "transformer.wpe.weight": (P, E)}
    for i in range(GPT2_LAYERS):
        p = f"transformer.h.{i}."
        shapes.update({
            p + "ln_1.weight": (E,), p + "ln_1.bias": (E,),
            p + "attn.c_attn.weight": (E, 3 * E), p + "attn.c_attn.bias": (3 * E,),
            p + "attn.c_proj.weight": (E, E), p + "attn.c_proj.bias": (E,),
            p + "ln_2.weight": (E,), p + "ln_2.bias": (E,),
            p + "mlp.c_fc.weight": (E, M), p + "mlp.c_fc.bias": (M,),
            p + "mlp.c_proj.weight": (M, E), p + "mlp.c_proj.bias": (E,),
        })
    shapes.update({"transformer.ln_f.weight": (E,), "transformer.ln_f.bias": (E,)})
    return shapes


def gpt2_flax_to_hf(flat):
    """HF Flax GPT-2 params (flattened dict) -> GPT2LMHeadModel's PyTorch state dict {name: float32 array}, in
    the state dict's order, by transformers' own Flax -> PyTorch rules (load_flax_weights_in_pytorch_model):
    the path joined with '.', a 2-D 'kernel' becomes 'weight' = kernel.T, 'scale' (LayerNorm) and 'embedding'
    (nn.Embed) become 'weight' unchanged, 'bias' stays. FlaxConv1D stores its kernel as (out, in) (param shape
    (features, in), transposed before the product), so kernel.T is (in, out): exactly Conv1D's weight."""
    out = {}
    for key, a in flat.items():
        a = np.asarray(a)
        if a.dtype != np.float32:
            raise SystemExit(f"gpt2-tiny HF export: {key} has dtype {a.dtype}, expected float32")
        if key[-1] == "kernel" and a.ndim == 2:
            key, a = key[:-1] + ("weight",), a.T
        elif key[-1] in ("scale", "embedding"):
            key = key[:-1] + ("weight",)
        elif key[-1] != "bias":
            raise SystemExit(f"gpt2-tiny HF export: no PyTorch name for {key}")
        out[".".join(key)] = np.ascontiguousarray(a)  # safetensors writes the raw buffer: must be C-order
    shapes = gpt2_hf_shapes()
    if set(out) != set(shapes):
        raise SystemExit(f"gpt2-tiny HF export: {sorted(set(out) ^ set(shapes))} differ from modeling_gpt2's names")
    for name, shape in shapes.items():
        if out[name].shape != shape:
            raise SystemExit(f"gpt2-tiny HF export: {name} has shape {out[name].shape}, expected {shape}")
    return {name: out[name] for name in shapes}


def gpt2_hf_to_flax(tensors):
    """The other way, written separately: {PyTorch name: array} -> flattened FlaxGPT2LMHeadModel params.
    LayerNorm weight -> scale, wte/wpe weight -> embedding, Conv1D weight (in, out) -> FlaxConv1D kernel
    (out, in) = weight.T, biases unchanged."""
    out = {}
    for name, a in tensors.items():
        key, a = tuple(name.split(".")), np.asarray(a, dtype=np.float32)
        if key[-2] in ("wte", "wpe"):
            key = key[:-1] + ("embedding",)
        elif key[-2] in ("ln_1", "ln_2", "ln_f") and key[-1] == "weight":
            key = key[:-1] + ("scale",)
        elif key[-2] in ("c_attn", "c_proj", "c_fc") and key[-1] == "weight":
            key, a = key[:-1] + ("kernel",), a.T
        elif key[-1] != "bias":
            raise SystemExit(f"gpt2-tiny HF: no Flax name for {name}")
        out[key] = a
    return out


def gpt2_hf_config_json():
    """config.json as save_pretrained writes it for GPT2LMHeadModel (see llama_hf_config_json):
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", the weights' dtype as "torch_dtype"."""
    cfg = gpt2_config()
    cfg.architectures = ["GPT2LMHeadModel"]
    d = cfg.to_diff_dict()
    d.pop("dtype", None)
    d["torch_dtype"] = "float32"
    return json.dumps(d, indent=2, sort_keys=True) + "\n"


def gpt2_reference_forward(sd, x, xp=jnp, **variant):
    """The README's gpt2-tiny math written directly on the PyTorch-layout tensors of model.safetensors (no HF,
    no Flax modules), in jax.numpy float32 (xp=jnp) or NumPy float64 (xp=np). variant flags (jax.numpy only)
    change one detail each, to measure how much the logits depend on it."""
    E, H, D, L = GPT2_EMBED, GPT2_HEADS, GPT2_HEAD_DIM, GPT2_LAYERS
    dt = jnp.float32 if xp is jnp else np.float64
    t = {k: xp.asarray(np.asarray(v), dtype=dt) for k, v in sd.items()}
    eps = variant.get("eps", GPT2_EPS)
    use_bias = not variant.get("biases_ignored")
    use_affine = not variant.get("layernorm_affine_ignored")

    def ln(h, name):
        mu = xp.mean(h, axis=-1, keepdims=True)
        var = xp.mean((h - mu) ** 2, axis=-1, keepdims=True)  # biased (divide by E)
        y = (h - mu) / xp.sqrt(var + dt(eps))
        if variant.get("layernorm_weight_bias_swapped"):
            return y * t[name + ".bias"] + t[name + ".weight"]
        return y * t[name + ".weight"] + t[name + ".bias"] if use_affine else y

    def conv1d(h, name, transpose=False):  # Conv1D: x @ weight (in, out) + bias
        w = t[name + ".weight"]
        y = h @ (w.T if transpose else w)
        return y + t[name + ".bias"] if use_bias else y

    def gelu(z):
        if variant.get("gelu_exact"):
            return 0.5 * z * (1 + jax.scipy.special.erf(z / np.sqrt(2.0).astype(np.float32)))
        return dt(0.5) * z * (dt(1) + xp.tanh(dt(np.sqrt(2 / np.pi)) * (z + dt(0.044715) * z ** 3)))

    ids = np.asarray(x).astype(np.int64)  # exact: whole numbers
    B, S = ids.shape
    h = t["transformer.wte.weight"][ids]
    if not variant.get("no_position_embedding"):
        h = h + t["transformer.wpe.weight"][np.arange(S)][None]
    causal = np.tril(np.ones((S, S), bool)) | bool(variant.get("not_causal"))
    for i in range(L):
        p = f"transformer.h.{i}."
        a = ln(h, p + "ln_1")
        qkv = conv1d(a, p + "attn.c_attn")  # (B, S, 3E)
        if variant.get("qkv_per_head"):  # the fused layout (H, 3, D) of GPT-NeoX / BLOOM: wrong for GPT-2
            qkv = qkv.reshape(B, S, H, 3, D)
            q, k, v = qkv[..., 0, :], qkv[..., 1, :], qkv[..., 2, :]
        else:
            q, k, v = (qkv[..., j * E:(j + 1) * E] for j in range(3))

            def split(u):
                if variant.get("heads_d_major"):  # (D, H): head h = columns h, h + H, ...: wrong
                    return u.reshape(B, S, D, H).transpose(0, 1, 3, 2)
                return u.reshape(B, S, H, D)  # head h = columns h*D .. h*D + D-1
            q, k, v = split(q), split(k), split(v)
        sc = xp.einsum("bqhd,bkhd->bhqk", q, k)
        if not variant.get("no_attention_scale"):
            sc = sc / xp.sqrt(dt(D))
        sc = xp.where(causal, sc, -xp.inf)
        sc = xp.exp(sc - xp.max(sc, axis=-1, keepdims=True))
        w = sc / xp.sum(sc, axis=-1, keepdims=True)
        o = xp.einsum("bhqk,bkhd->bqhd", w, v).reshape(B, S, E)  # merge heads: column h*D + d
        h = h + conv1d(o, p + "attn.c_proj", transpose=bool(variant.get("attn_c_proj_as_linear")))
        m = ln(h, p + "ln_2")
        h = h + conv1d(gelu(conv1d(m, p + "mlp.c_fc")), p + "mlp.c_proj")
    if not variant.get("no_final_layernorm"):
        h = ln(h, "transformer.ln_f")
    return h @ t["transformer.wte.weight"].T  # tied head: logits = h @ wte^T, no bias


GPT2_VARIANTS = {  # name: flags for gpt2_reference_forward, each one plausible importer mistake
    "gelu_exact_erf_instead_of_tanh": {"gelu_exact": True},
    "qkv_fused_per_head_(H,3,D)": {"qkv_per_head": True},
    "heads_split_(D,H)": {"heads_d_major": True},
    "attn_c_proj_read_as_linear_(out,in)": {"attn_c_proj_as_linear": True},
    "no_attention_scale": {"no_attention_scale": True},
    "not_causal": {"not_causal": True},
    "no_position_embedding": {"no_position_embedding": True},
    "no_final_layernorm": {"no_final_layernorm": True},
    "layernorm_eps_1e-6": {"eps": 1e-6},
    "layernorm_weight_bias_swapped": {"layernorm_weight_bias_swapped": True},
    "biases_ignored": {"biases_ignored": True},
    "layernorm_affine_ignored": {"layernorm_affine_ignored": True},
}


def check_gpt2_hf(d: Path, flat, model, x, logits):
    """Reads hf/gpt2-tiny/ back: config.json must be gpt2-tiny's config; model.safetensors is parsed by hand
    (read_safetensors_raw, as a C++ reader) and with safetensors, must hold exactly gpt2_hf_shapes()'s names
    and shapes, F32, metadata {"format": "pt"}; mapped back to the Flax tree twice (gpt2_hf_to_flax, and
    transformers' convert_pytorch_state_dict_to_flax) it must be the init params exactly, and both those
    params and FlaxGPT2LMHeadModel.from_pretrained(folder) (transformers' PyTorch-safetensors path, no torch)
    must give logits.npy bit for bit."""
    from safetensors.numpy import load_file
    from transformers import FlaxGPT2LMHeadModel, GPT2Config
    from transformers.modeling_flax_pytorch_utils import convert_pytorch_state_dict_to_flax

    flat = {k: np.asarray(v) for k, v in flat.items()}
    ids = jnp.asarray(x).astype(jnp.int32)

    def same(got, want, what):
        if set(got) != set(want):
            raise SystemExit(f"gpt2-tiny HF {what}: keys {sorted(set(got) ^ set(want))} differ")
        for k in want:
            g = np.asarray(got[k])
            if g.dtype != np.float32 or g.shape != want[k].shape or not np.array_equal(g, want[k]):
                raise SystemExit(f"gpt2-tiny HF {what}: {k} differs")

    def same_logits(params, what):
        lg = np.asarray(model(ids, params=params).logits)
        if not np.array_equal(lg, logits):
            raise SystemExit(f"gpt2-tiny HF {what}: logits differ from logits.npy by {np.abs(lg - logits).max()}")

    want_cfg = {k: v for k, v in gpt2_config().to_diff_dict().items() if k != "transformers_version"}
    cfg_json = json.loads((d / "config.json").read_text())
    got_cfg = GPT2Config.from_json_file(str(d / "config.json")).to_diff_dict()
    if (cfg_json.get("torch_dtype") != "float32" or cfg_json.get("architectures") != ["GPT2LMHeadModel"]
            or cfg_json.get("model_type") != "gpt2" or any(got_cfg.get(k) != v for k, v in want_cfg.items())):
        raise SystemExit(f"gpt2-tiny HF: config.json {cfg_json} is not gpt2-tiny's config")
    meta, raw, dtypes, data_bytes = read_safetensors_raw(d / "model.safetensors")
    if meta != GPT2_HF_METADATA or set(dtypes.values()) != {"F32"}:
        raise SystemExit(f"gpt2-tiny HF: metadata {meta}, dtypes {sorted(set(dtypes.values()))}")
    loaded = load_file(d / "model.safetensors")
    same(loaded, raw, "model.safetensors (safetensors vs by hand)")
    if {k: v.shape for k, v in raw.items()} != {k: tuple(v) for k, v in gpt2_hf_shapes().items()}:
        raise SystemExit(f"gpt2-tiny HF: names/shapes {({k: v.shape for k, v in raw.items()})}")
    back = gpt2_hf_to_flax(raw)
    same(back, flat, "gpt2_hf_to_flax")
    same_logits(flax.traverse_util.unflatten_dict(back), "gpt2_hf_to_flax params")
    same(flax.traverse_util.flatten_dict(convert_pytorch_state_dict_to_flax(dict(loaded), model)), flat,
         "transformers' convert_pytorch_state_dict_to_flax")
    # seed=1: a tensor from_pretrained failed to load would keep a random init unlike the saved one.
    m = FlaxGPT2LMHeadModel.from_pretrained(str(d), seed=1, dtype=jnp.float32)
    same(flax.traverse_util.flatten_dict(flax.core.unfreeze(m.params)), flat, "from_pretrained params")
    lg = np.asarray(m(ids).logits)
    if not np.array_equal(lg, logits):
        raise SystemExit(f"gpt2-tiny HF: from_pretrained's logits differ from logits.npy by {np.abs(lg - logits).max()}")
    return {"file_bytes": (d / "model.safetensors").stat().st_size, "tensor_bytes": data_bytes,
            "tensors": len(raw), "parameters": int(sum(a.size for a in raw.values())),
            "read_back_to_flax_params": "exact (gpt2_hf_to_flax and convert_pytorch_state_dict_to_flax)",
            "from_pretrained_logits": "bit-identical to logits.npy"}


def gpt2_train(model, params, ids, y):
    """STEPS x optax.adam(LR) on the mean softmax cross-entropy of the logits against y (int32, per position):
    the losses before each update, the loss and the logits after the last."""
    tx = optax.adam(LR)
    opt_state = tx.init(params)
    yj = jnp.asarray(y)

    def loss_fn(p):
        logits = model(ids, params=p, train=False).logits
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, yj))

    vg = jax.value_and_grad(loss_fn)
    losses = []
    for _ in range(STEPS):
        loss, grads = vg(params)
        losses.append(float(loss))
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
    logits = np.asarray(model(ids, params=params, train=False).logits, dtype=np.float32)
    return losses, float(loss_fn(params)), logits


def gpt2_tiny(out_root: Path, hf_root: Path):
    import jaxlib
    import ml_dtypes
    import safetensors
    import transformers
    from safetensors.numpy import save_file
    from transformers import FlaxGPT2LMHeadModel

    cfg = gpt2_config()
    model = FlaxGPT2LMHeadModel(cfg, input_shape=(1, 1), seed=SEED, dtype=jnp.float32)
    params = model.init_weights(jax.random.PRNGKey(SEED), (1, 1))
    flat = flax.traverse_util.flatten_dict(flax.core.unfreeze(params))
    ctor = flax.traverse_util.flatten_dict(flax.core.unfreeze(model.params))
    if set(flat) != set(ctor) or not all(np.array_equal(np.asarray(flat[k]), np.asarray(ctor[k])) for k in flat):
        raise SystemExit("gpt2-tiny: init_weights(PRNGKey(SEED)) differs from the constructor's params")

    rng = np.random.default_rng(7)
    x = rng.integers(0, GPT2_VOCAB, size=(GPT2_BATCH, GPT2_SEQ)).astype(np.float32)  # ids as floats
    y = rng.integers(0, GPT2_VOCAB, size=(GPT2_BATCH, GPT2_SEQ), dtype=np.int32)  # same rng, after x
    ids = jnp.asarray(x).astype(jnp.int32)  # exact: whole numbers < 2^24
    logits = np.asarray(model(ids, params=params).logits, dtype=np.float32)  # defaults, train=False
    explicit = np.asarray(model(ids, attention_mask=jnp.ones_like(ids),
                                position_ids=jnp.broadcast_to(jnp.arange(GPT2_SEQ), ids.shape),
                                params=params, train=False).logits)
    if logits.shape != (GPT2_BATCH, GPT2_SEQ, GPT2_VOCAB) or not np.array_equal(logits, explicit):
        raise SystemExit("gpt2-tiny: the default call is not attention_mask ones, position_ids 0..15")

    # hf/gpt2-tiny/, written from the init params and read back.
    sd = gpt2_flax_to_hf(flat)
    d = hf_root / GPT2_HF
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    (d / "config.json").write_bytes(gpt2_hf_config_json().encode())
    save_file(sd, d / "model.safetensors", metadata=GPT2_HF_METADATA)
    (d / "model.safetensors").chmod(0o644)  # safetensors creates its files 0600
    hf_report = check_gpt2_hf(d, flat, model, x, logits)
    print(f"gpt2-tiny HF {GPT2_HF}: {hf_report}")

    # The README's math on the safetensors tensors, in float32 (jax.numpy) and float64 (NumPy).
    ref32 = np.asarray(gpt2_reference_forward(sd, x))
    ref64 = gpt2_reference_forward(sd, x, xp=np)
    forward_check = {
        "reference_forward_float32_max_abs_diff": float(np.abs(ref32 - logits).max()),
        "reference_forward_float64_max_abs_diff": float(np.abs(ref64 - logits.astype(np.float64)).max()),
    }
    print(f"gpt2-tiny: check of the README math on model.safetensors' tensors: {forward_check}")
    if max(forward_check.values()) > 1e-6:
        raise SystemExit("gpt2-tiny: the plain forward pass on the safetensors tensors disagrees with transformers")
    sensitivity = {name: float(np.abs(np.asarray(gpt2_reference_forward(sd, x, **flags)) - ref32).max())
                   for name, flags in GPT2_VARIANTS.items()}
    print(f"gpt2-tiny: max |logit change| of each variant: {sensitivity}")

    # Training with the LM head tied to wte (GPT-2's own: both the lookup and the logits' gradients reach
    # wte), and, as a control, the same model untied (tie_word_embeddings False, lm_head starting at wte^T
    # and trained apart): an importer that unties the head matches the control, not GPT-2.
    losses, loss_after, logits_after = gpt2_train(model, params, ids, y)
    untied_cfg = gpt2_config()
    untied_cfg.tie_word_embeddings = False
    untied = FlaxGPT2LMHeadModel(untied_cfg, input_shape=(1, 1), seed=SEED, dtype=jnp.float32, _do_init=False)
    untied_params = flax.core.unfreeze(jax.tree_util.tree_map(lambda a: a, params))
    untied_params["lm_head"] = {"kernel": jnp.asarray(params["transformer"]["wte"]["embedding"]).T}
    untied_losses, untied_loss_after, untied_logits = gpt2_train(untied, untied_params, ids, y)
    training = {
        "y": {"file": "y.npy", "shape": list(y.shape), "dtype": str(y.dtype),
              "generator": "the same default_rng(7), .integers(0, 64, size=(8, 16), dtype=np.int32) drawn after x"},
        "optimizer": {"name": "adam", "learning_rate": LR, "b1": 0.9, "b2": 0.999, "eps": 1e-8},
        "steps": STEPS,
        "loss": "mean(optax.softmax_cross_entropy_with_integer_labels(logits, y)) over all 128 positions",
        "losses": losses,
        "loss_after": loss_after,
        "logits_after": {"file": "logits_after.npy", "shape": list(logits_after.shape), "dtype": str(logits_after.dtype)},
        "untied_losses": untied_losses,
        "untied_loss_after": untied_loss_after,
        "untied_logits_after_max_abs_diff": float(np.abs(untied_logits - logits_after).max()),
    }
    print(f"gpt2-tiny: tied losses {losses}, after {loss_after}; untied {untied_losses}, after {untied_loss_after}")

    out = out_root / "gpt2-tiny"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    np.save(out / "x.npy", np.ascontiguousarray(x))
    np.save(out / "logits.npy", np.ascontiguousarray(logits))
    np.save(out / "y.npy", np.ascontiguousarray(y))
    np.save(out / "logits_after.npy", np.ascontiguousarray(logits_after))
    max_abs = float(np.abs(logits).max())
    meta = {
        "versions": {"python": sys.version.split()[0], "jax": jax.__version__, "jaxlib": jaxlib.__version__, "flax": flax.__version__,
                     "numpy": np.__version__, "transformers": transformers.__version__,
                     "safetensors": safetensors.__version__, "ml_dtypes": ml_dtypes.__version__},
        "description": (
            "gpt2-tiny: transformers' FlaxGPT2LMHeadModel with GPT2Config(vocab_size=64, n_positions=16, n_embd=32, "
            "n_layer=2, n_head=4, activation_function='gelu_new', resid_pdrop=0, embd_pdrop=0, attn_pdrop=0, "
            "layer_norm_epsilon=1e-5) (n_inner None: MLP 128; tie_word_embeddings True), dtype float32, its own "
            "init (seed 0: init_weights(PRNGKey(0), (1,1)); normal(0.02) wte, wpe and Conv1D kernels, zero "
            "biases, LayerNorm scale ones and bias zeros). x float32 (8,16) = default_rng(7).integers(0,64) token "
            "ids as floats. logits.npy: float32 (8,16,64), model(x, params=init).logits with the defaults "
            "(position_ids 0..15, attention_mask all ones, train=False). No training. The same init params are "
            "hf/gpt2-tiny/ (config.json, model.safetensors with GPT2LMHeadModel's state-dict names; Conv1D "
            "weights (in, out); no lm_head.weight, tied to transformer.wte.weight). float32, "
            "jax_default_matmul_precision=highest, CPU."),
        "hf_model_class": type(model).__name__,
        "gpt2_config": {k: getattr(cfg, k) for k in (
            "vocab_size", "n_positions", "n_embd", "n_layer", "n_head", "n_inner", "activation_function",
            "resid_pdrop", "embd_pdrop", "attn_pdrop", "layer_norm_epsilon", "initializer_range",
            "scale_attn_weights", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
            "tie_word_embeddings", "add_cross_attention")},
        "init_seed": SEED,
        "x": {"file": "x.npy", "shape": list(x.shape), "dtype": str(x.dtype),
              "generator": "np.random.default_rng(7).integers(0, 64, size=(8, 16)).astype(np.float32)"},
        "logits": {"file": "logits.npy", "shape": list(logits.shape), "dtype": str(logits.dtype), "params": "init",
                   "max_abs": max_abs},
        "max_abs_logit": max_abs,
        "hf_folder": {"path": f"hf/{GPT2_HF}", "files": ["config.json", "model.safetensors"],
                      **hf_report, "tensor_shapes": {k: list(v) for k, v in gpt2_hf_shapes().items()}},
        "forward_check": forward_check,
        "variant_max_abs_logit_change": sensitivity,
        "training": training,
        "tokens_not_in_x": sorted(set(range(GPT2_VOCAB)) - set(int(t) for t in x.ravel())),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"gpt2-tiny: max |logit| {max_abs} -> {out}; Hugging Face folder -> {d}")


MODELS = {"fashion-mlp": fashion_mlp, "dot-relu-dot": dot_relu_dot, "vit-tiny": vit_tiny,
          "cnn-fashion": cnn_fashion, "cnn-tiny": cnn_tiny, "llama-tiny": llama_tiny, "gn-tiny": gn_tiny,
          "cat-tiny": cat_tiny}

# Extra files and losses.json entries, computed after training:
#   f(model, init_params, final_params, init_flat, step_flat, x, y, loss_after) -> ({file: array}, {key: value}).
#   llama-tiny: logits.npy (the logits at the init params), the transformers version, the LlamaConfig,
#   and a check of the README's math against transformers.
EXTRA = {"llama-tiny": llama_tiny_extra}

# Written after data/<model>/, into the --hf-out root:
#   f(model, init_params, init_flat, x, extra_files, hf_root).
#   llama-tiny: hf/llama-tiny{,-sharded,-bf16}/, the init params as Hugging Face (PyTorch) model folders.
HF_EXPORT = {"llama-tiny": llama_tiny_hf}

# Models with no training run, written by their own function f(out_root, hf_root) instead of build():
#   gpt2-tiny: data/gpt2-tiny/{x.npy, logits.npy, meta.json} and hf/gpt2-tiny/.
FORWARD_ONLY = {"gpt2-tiny": gpt2_tiny}

# Per-step checks on the parameters before each update (the first is model.init's); each returns a
# JSON-able dict, recorded in losses.json under "checks" with the step number, and printed.
#   cnn-tiny: a max_pool window after relu can have its maximum at two different positions only if
#   it is all zeros (or by a coincidence of float32 values, which "..._max_positive" counts). Every
#   position of an all-zero window has a pre-relu value <= 0 and so relu gradient 0: whichever
#   position the max_pool gradient goes to, the parameter gradients are the same.
CHECKS = {"cnn-tiny": cnn_tiny_checks}

# Parameters whose exact gradient is identically zero, so that their float32 gradient is rounding
# noise (~1e-9, below Adam's eps) which Adam turns into updates of up to ~lr per step in an arbitrary
# direction: two correct float32 implementations then disagree on them completely. losses.json lists
# them under "zero_gradient" (only where there are any) and the C++ test checks them differently.
#   vit-tiny blocks/attn/key/bias: softmax(q . (k_j + b)) = softmax(q . k_j + q . b) over the keys j,
#   and q . b is the same for every key, so the attention weights do not depend on the key bias.
ZERO_GRADIENT = {"vit-tiny": ["blocks/attn/key/bias"]}


# ----------------------------------------------------------------------------------------------
def flatten_params(params, paths, shapes):
    """Flax params dict -> {shardlab_path: float32 ndarray}; checks that the mapping is exact."""
    flat = flax.traverse_util.flatten_dict(flax.core.unfreeze(params))
    if callable(paths):  # a converter (llama-tiny): flat Flax dict -> {shardlab_path: array}
        named = paths(flat)
    else:
        if set(flat) != set(paths):
            raise SystemExit(f"Flax params {sorted(flat)} don't match the expected {sorted(paths)}")
        named = {ours: flat[key] for key, ours in paths.items()}
    if set(named) != set(shapes):
        raise SystemExit(f"params {sorted(named)} don't match the expected {sorted(shapes)}")
    out = {}
    for ours, a in named.items():
        a = np.ascontiguousarray(np.asarray(a))
        if a.dtype != np.float32:
            raise SystemExit(f"{ours}: dtype {a.dtype}, expected float32")
        if a.shape != shapes[ours]:
            raise SystemExit(f"{ours}: shape {a.shape}, expected {shapes[ours]}")
        out[ours] = a
    return out


def save_params(d: Path, flat):
    d.mkdir(parents=True, exist_ok=True)
    for path, a in flat.items():
        np.save(d / (path.replace("/", ".") + ".npy"), a)


def build(name: str, out_root: Path, hf_root: Path):
    model, x, y, loss_fn, paths, shapes, description = MODELS[name]()
    params = model.init(jax.random.PRNGKey(SEED), jnp.asarray(x))["params"]
    init_params = params
    init_flat = flatten_params(params, paths, shapes)

    tx = optax.adam(LR)
    opt_state = tx.init(params)
    vg = jax.value_and_grad(loss_fn)
    xj, yj = jnp.asarray(x), jnp.asarray(y)
    zero_gradient = ZERO_GRADIENT.get(name, [])
    losses = []
    checks = []
    for step in range(STEPS):
        loss, grads = vg(params, xj, yj)
        losses.append(float(loss))
        if name in CHECKS:
            checks.append({"step": step + 1, **CHECKS[name](model, params, xj)})
            print(f"{name}: check before update {step + 1}: {checks[-1]}")
        flat_grads = flatten_params(grads, paths, shapes)
        largest = max(float(np.abs(g).max()) for g in flat_grads.values())
        for p in zero_gradient:  # rounding noise only
            if float(np.abs(flat_grads[p]).max()) > 1e-6 * largest:
                raise SystemExit(f"{name} {p}: gradient {np.abs(flat_grads[p]).max()} is not ~0")
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
    loss_after = float(loss_fn(params, xj, yj))
    step_flat = flatten_params(params, paths, shapes)
    extra_files, extra_meta = {}, {}
    if name in EXTRA:
        extra_files, extra_meta = EXTRA[name](model, init_params, params, init_flat, step_flat, x, y, loss_after)

    d = out_root / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    np.save(d / "x.npy", np.ascontiguousarray(x))
    np.save(d / "y.npy", np.ascontiguousarray(y))
    save_params(d / "init", init_flat)
    save_params(d / "step3", step_flat)
    for fname, a in extra_files.items():
        np.save(d / fname, np.ascontiguousarray(a))
    meta = {
        "losses": losses,
        "loss_after": loss_after,
        "jax": jax.__version__,
        "flax": flax.__version__,
        "optax": optax.__version__,
        "numpy": np.__version__,
        **({"transformers": extra_meta.pop("transformers")} if "transformers" in extra_meta else {}),
        "description": description,
        "optimizer": {"name": "adam", "learning_rate": LR, "b1": 0.9, "b2": 0.999, "eps": 1e-8},
        "steps": STEPS,
        "init_seed": SEED,
        "params": {p: list(s) for p, s in shapes.items()},
        **({"zero_gradient": zero_gradient} if zero_gradient else {}),
        **({"checks": checks} if checks else {}),
        "x": {"shape": list(x.shape), "dtype": str(x.dtype)},
        "y": {"shape": list(y.shape), "dtype": str(y.dtype)},
        **extra_meta,
    }
    (d / "losses.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"{name}: losses {losses}, loss_after {loss_after} -> {d}")
    if name in HF_EXPORT:
        HF_EXPORT[name](model, init_params, init_flat, x, extra_files, hf_root)
        print(f"{name}: Hugging Face folders -> {hf_root}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "data",
                    help="output root (default: tests/reference/data next to this script)")
    ap.add_argument("--hf-out", type=Path, default=None,
                    help="root of llama-tiny's and gpt2-tiny's Hugging Face folders (default: hf next to the "
                         "output root, i.e. tests/reference/hf)")
    ap.add_argument("--model", choices=sorted([*MODELS, *FORWARD_ONLY]), action="append",
                    help="only this model (repeatable); default: all")
    args = ap.parse_args(argv)
    assert jax.default_backend() == "cpu", jax.default_backend()
    names = args.model or [*MODELS, *FORWARD_ONLY]
    if "llama-tiny" in names or "gpt2-tiny" in names:
        try:
            import transformers  # noqa: F401
        except ImportError:
            raise SystemExit('llama-tiny and gpt2-tiny need Hugging Face transformers 4.x (pip install '
                             '"transformers==4.57.6"), which requirements.txt does not list; or pick the other '
                             "models with --model")
    hf_root = args.hf_out if args.hf_out is not None else args.out.resolve().parent / "hf"
    for name in names:
        if name in FORWARD_ONLY:
            FORWARD_ONLY[name](args.out, hf_root)
        else:
            build(name, args.out, hf_root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
