#!/usr/bin/env python3
"""Accuracy benchmark: vit-fashion trained to the end in Shardlab and in JAX/Flax with the same recipe.

Issue: "vit-fashion reaches >= 87% test accuracy in its default epochs, and within 1 point of Flax
trained on the same recipe (report both, and the wall time of each)".

Both frameworks train the ViT of projects/vit-fashion.shardlab.json on Fashion-MNIST with the recipe
read from the project file:
  * data: the Debian package dataset-fashion-mnist's four gzipped IDX files (Shardlab's default folder,
    kFashionMnistDefaultDir in engine/data/data_spec.h, or the project's data.dir); pixels times
    data.scale (default 1/255, as Shardlab's fashion_mnist loader), no other normalisation; the
    60000 training images, the 10000 test images;
  * batch training.batch_size (128), training.epochs (8) epochs of floor(60000 / 128) = 468 full
    batches: Shardlab's training BatchLoader drops the last partial batch (drop_remainder), so both
    train 3744 steps; a new shuffle of the training set each epoch (training.shuffle, default true);
  * Adam (b1, b2, eps from the project, default 0.9, 0.999, 1e-8) with the project's learning rate:
    {"schedule": "warmup_cosine_decay", ...} is optax.warmup_cosine_decay_schedule with the same
    arguments (Shardlab's ScheduleSpec::at is that formula; decay_steps counts the warmup);
  * softmax cross-entropy with integer labels, the mean over the batch;
  * evaluation on the test set after each epoch and after the last step, as Shardlab's trainer does
    (with a step cap, only after the last step); the final one is the reported accuracy.

Shardlab: `build/app/shardlab-cli train PROJECT --threads T --log LOG` (plus `--steps N` with
--max-steps), its final "eval after step N: loss L, accuracy A" line, and the wall time of the whole
process. Flax: the model of vit_step.py (flax_vit, the same architecture as the project; verified
there with --verify), Optax's Adam and schedule, a jitted train step with the state donated, float32
matmuls at "highest" precision; its wall time is also the whole process (imports, data loading, XLA
compilation, training and evaluation). Each framework runs in its own fresh process pinned to the same
T cores, as vit_step.py / cpu_step.py do (sched_setaffinity = taskset, OMP_NUM_THREADS=T, Shardlab's
--threads T; XLA sizes its thread pool from the affinity mask).

The two start from different random initial parameters (each framework's own initialisers and RNG)
and shuffle in different orders, so their accuracies differ by run-to-run noise as well as by any real
difference.

This is not a test; run it by hand after building (see tests/bench/README.md):
    python3 tests/bench/vit_accuracy.py [--threads T] [--only shardlab|flax] [--json out.json]
    python3 tests/bench/vit_accuracy.py --max-steps 20     # a smoke test: NOT a real accuracy
"""
from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_step  # noqa: E402  (the pinned child runner, thread environment, busy check)
import vit_step  # noqa: E402  (vit_config: the ViT's numbers from the project; flax_vit: the Flax model)

REPO = cpu_step.REPO
DEFAULT_PROJECT = vit_step.DEFAULT_PROJECT
TARGET_ACCURACY = 0.87  # the bar for Shardlab
TARGET_GAP_POINTS = 1.0  # Shardlab at most this many points below Flax
EVAL_BATCH = 1000  # Flax's evaluation batch (forward only; the result does not depend on it)


def fashion_default_dir() -> str:
    """kFashionMnistDefaultDir from engine/data/data_spec.h (the folder the Debian package installs)."""
    try:
        m = re.search(r'kFashionMnistDefaultDir\s*=\s*"([^"]+)"', (REPO / "engine/data/data_spec.h").read_text())
        if m:
            return m.group(1)
    except OSError:
        pass
    return "/usr/share/datasets/fashion-mnist"


def read_recipe(project: dict, project_path: Path) -> dict:
    """The training recipe from the project file; raises ValueError for what this script cannot mirror."""
    data = project.get("data") or {}
    if data.get("type") != "fashion_mnist":
        raise ValueError(f"data.type {data.get('type')!r}: fashion_mnist expected")
    d = Path(data.get("dir", fashion_default_dir()))
    if not d.is_absolute():
        d = project_path.parent / d
    opt = project["optimizer"]
    lr = opt.get("learning_rate", 1e-3)
    if isinstance(lr, (int, float)):
        lr = {"schedule": "constant", "value": float(lr)}
    if lr.get("schedule") not in ("constant", "warmup_cosine_decay"):
        raise ValueError(f"learning_rate {lr}: constant or warmup_cosine_decay expected")
    t = project.get("training") or {}
    unsupported = set(t) - {"batch_size", "epochs", "steps", "seed", "shuffle", "prefetch", "eval", "checkpoint"}
    if unsupported or t.get("accumulate", 1) != 1:
        raise ValueError(f"training {sorted(unsupported)}: not mirrored in Flax")
    if t.get("eval") is False:
        raise ValueError("training.eval is false: Shardlab would print no test accuracy")
    return {
        "data_dir": str(d),
        "scale": float(data.get("scale", 1.0 / 255.0)),
        "batch_size": int(t.get("batch_size", 32)),
        "epochs": int(t.get("epochs", 1)),
        "project_steps": int(t.get("steps", 0)),
        "seed": int(t.get("seed", 0)),
        "shuffle": bool(t.get("shuffle", True)),
        "b1": float(opt.get("b1", 0.9)), "b2": float(opt.get("b2", 0.999)), "eps": float(opt.get("eps", 1e-8)),
        "learning_rate": lr,
    }


def vit_config_of(project: dict) -> dict:
    """vit_step.vit_config, which refuses explicit Adam b1/b2/eps; those are read by read_recipe."""
    p = json.loads(json.dumps(project))
    for k in ("b1", "b2", "eps"):
        p["optimizer"].pop(k, None)
    return vit_step.vit_config(p)


# ==============================================================================================
# Data: the IDX files, read with numpy.
# ==============================================================================================
def read_idx(path: Path):
    import numpy as np

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    if raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion_file(d: Path, name: str) -> Path:
    for cand in (name + ".gz", name):
        if (d / cand).exists():
            return d / cand
    raise FileNotFoundError(f"{d / (name + '.gz')} missing (install the Debian package dataset-fashion-mnist, or set "
                            f"the project's data.dir)")


def load_fashion(d: Path, scale: float):
    import numpy as np

    out = {}
    for split, stem in (("train", "train"), ("test", "t10k")):
        x = read_idx(fashion_file(d, f"{stem}-images-idx3-ubyte"))
        y = read_idx(fashion_file(d, f"{stem}-labels-idx1-ubyte"))
        if len(x) != len(y):
            raise ValueError(f"{split}: {len(x)} images but {len(y)} labels")
        out[split] = (x.astype(np.float32) * np.float32(scale), y.astype(np.int32))
    return out


# ==============================================================================================
# The Flax worker: `vit_accuracy.py --worker flax --config JSON --recipe JSON` in a pinned process.
# ==============================================================================================
def worker_flax(c: dict, r: dict, max_steps: int | None) -> dict:
    t_start = time.perf_counter()
    import numpy as np
    import jax
    import jax.numpy as jnp
    import flax
    import optax
    from flax.training import train_state

    jax.config.update("jax_default_matmul_precision", "highest")  # full float32, as vit_step.py
    t_imported = time.perf_counter()
    data = load_fashion(Path(r["data_dir"]), r["scale"])
    (xtr, ytr), (xte, yte) = data["train"], data["test"]
    t_data = time.perf_counter()

    b = r["batch_size"]
    steps_per_epoch = len(xtr) // b  # the last partial batch is dropped, as Shardlab's BatchLoader
    total = r["project_steps"] if r["project_steps"] > 0 else r["epochs"] * steps_per_epoch
    if max_steps:
        total = min(total, max_steps)
    eval_each_epoch = r["project_steps"] == 0 and not max_steps  # Shardlab: epoch ends unless a step count is set

    lr = r["learning_rate"]
    if lr["schedule"] == "constant":
        sched = lr["value"]
    else:
        sched = optax.warmup_cosine_decay_schedule(
            init_value=lr.get("init_value", 0.0), peak_value=lr["peak_value"], warmup_steps=lr.get("warmup_steps", 0),
            decay_steps=lr.get("decay_steps", 1), end_value=lr.get("end_value", 0.0))
    tx = optax.adam(sched, b1=r["b1"], b2=r["b2"], eps=r["eps"])

    model = vit_step.flax_vit(c)
    params = model.init(jax.random.PRNGKey(r["seed"]), jnp.zeros((b, c["height"], c["width"]), jnp.float32))["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=tx)

    def train_step(state, x, y):
        def loss_fn(p):
            logits = state.apply_fn({"params": p}, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss

    def eval_batch(params, x, y, w):
        logits = model.apply({"params": params}, x)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, y)
        return jnp.sum(loss * w), jnp.sum((jnp.argmax(logits, -1) == y) * w)

    step_fn = jax.jit(train_step, donate_argnums=0)
    eval_fn = jax.jit(eval_batch)

    # The test set padded to a multiple of EVAL_BATCH, the padding weighted 0.
    n_test = len(xte)
    pad = (-n_test) % EVAL_BATCH
    xte_p = np.concatenate([xte, np.zeros((pad,) + xte.shape[1:], np.float32)])
    yte_p = np.concatenate([yte, np.zeros(pad, np.int32)])
    wte_p = np.concatenate([np.ones(n_test, np.float32), np.zeros(pad, np.float32)])

    def evaluate(params, step, epoch):
        t0 = time.perf_counter()
        loss_sum, correct = 0.0, 0.0
        for i in range(0, len(xte_p), EVAL_BATCH):
            s = slice(i, i + EVAL_BATCH)
            l, a = eval_fn(params, xte_p[s], yte_p[s], wte_p[s])
            loss_sum, correct = loss_sum + float(l), correct + float(a)
        return {"step": step, "epoch": epoch + 1, "loss": loss_sum / n_test, "accuracy": correct / n_test,
                "examples": n_test, "eval_s": time.perf_counter() - t0}

    rng = np.random.default_rng(r["seed"])
    evals, losses = [], []
    order, order_epoch = np.arange(len(xtr)), -1
    train_s = eval_s = 0.0
    first_step_s = None
    t_loop = time.perf_counter()
    t_seg = t_loop
    for i in range(total):
        epoch, k = divmod(i, steps_per_epoch)
        if epoch != order_epoch:
            if r["shuffle"]:
                order = rng.permutation(len(xtr))
            order_epoch = epoch
        idx = order[k * b:(k + 1) * b]
        state, loss = step_fn(state, xtr[idx], ytr[idx])
        losses.append(loss)
        if i == 0:
            jax.block_until_ready(state)
            first_step_s = time.perf_counter() - t_seg  # includes XLA's compilation of the step
        epoch_end = (i + 1) % steps_per_epoch == 0
        last = i + 1 == total
        if (epoch_end and eval_each_epoch) or last:
            jax.block_until_ready(state)
            train_s += time.perf_counter() - t_seg
            e = evaluate(state.params, i + 1, epoch)
            eval_s += e["eval_s"]
            evals.append(e)
            print(f"eval after step {i + 1}: loss {e['loss']:.4f}, accuracy {e['accuracy']:.4f} "
                  f"({n_test} test examples)", file=sys.stderr, flush=True)
            t_seg = time.perf_counter()
    t_end = time.perf_counter()
    losses = [float(x) for x in losses]
    lrs = (np.asarray(jax.vmap(sched)(jnp.arange(total))).astype(float).tolist() if callable(sched)
           else [float(sched)] * total)
    return {
        "version": f"JAX {jax.__version__}, Flax {flax.__version__}, Optax {optax.__version__}",
        "backend": jax.default_backend(),
        "params": sum(int(np.prod(a.shape)) for a in jax.tree_util.tree_leaves(params)),
        "threads_used": len(os.sched_getaffinity(0)),
        "threading": (f"process pinned to {len(os.sched_getaffinity(0))} cores with sched_setaffinity (= taskset); "
                      f"XLA sizes its intra-op pool from the affinity mask. "
                      f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}"),
        "steps": total, "steps_per_epoch": steps_per_epoch,
        "train_examples": len(xtr), "test_examples": n_test,
        "evals": evals,
        "final": evals[-1] if evals else None,
        "losses": losses,
        "learning_rates": lrs,
        "import_s": t_imported - t_start, "data_load_s": t_data - t_imported,
        "first_step_s": first_step_s, "train_s": train_s, "eval_s": eval_s,
        "loop_s": t_end - t_loop,
        "post_s": time.perf_counter() - t_end,  # after the loop: the losses and learning rates for the report
    }


def run_worker(args) -> int:
    c, r = json.loads(args.config), json.loads(args.recipe)
    print("RESULT:" + json.dumps(worker_flax(c, r, args.max_steps)), flush=True)
    return 0


# ==============================================================================================
# Parent side.
# ==============================================================================================
def run_child_timed(cmd, env, cores, timeout_s, stdout_path, stderr_path):
    """cpu_step.run_child, but stdout is read through a pipe and each line stamped with the seconds since the
    start (the CLI flushes after every line). Returns (code or None on timeout, peak RSS MiB, wall s, cpu s,
    [(t, line)])."""
    def preexec():
        if cores:
            os.sched_setaffinity(0, cores)

    lines = []
    with open(stdout_path, "w") as out, open(stderr_path, "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err, preexec_fn=preexec, cwd=REPO,
                                text=True, errors="replace", bufsize=1)

        def reader():
            for line in proc.stdout:
                lines.append((time.perf_counter() - t0, line.rstrip("\n")))
                out.write(line)

        th = threading.Thread(target=reader, daemon=True)
        th.start()
        timed_out = False
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            if time.perf_counter() - t0 > timeout_s and not timed_out:
                timed_out = True
                proc.send_signal(signal.SIGKILL)
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here; keep Popen from waiting again
        th.join(timeout=10)
    return (None if timed_out else proc.returncode), ru.ru_maxrss / 1024, wall, ru.ru_utime + ru.ru_stime, lines


EVAL_RE = re.compile(r"eval after step (\d+): loss ([-+0-9.eEnaif]+)(?:, accuracy ([-+0-9.eEnaif]+))?(?: \((\d+) test examples\))?")


def run_flax(args, c, r, cores, tmp) -> dict:
    res = {"framework": "flax", "notes": []}
    missing = [m for m in ("jax", "flax", "optax", "numpy") if importlib.util.find_spec(m) is None]
    if missing:
        res["skipped"] = f"not importable: {', '.join(missing)} (pip install -r tests/bench/requirements.txt)"
        return res
    env = cpu_step.peer_env("jax", args.threads)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "flax", "--config", json.dumps(c),
           "--recipe", json.dumps(r)] + (["--max-steps", str(args.max_steps)] if args.max_steps else [])
    res["machine_busy_before"] = cpu_step.warn_if_busy("flax")
    print("[flax] training in a fresh process ...", flush=True)
    out, err = tmp / "flax.out", tmp / "flax.err"
    code, rss, wall, cpu = cpu_step.run_child(cmd, env, cores, args.timeout, out, err)
    res.update(wall_s=wall, cpu_s=cpu, peak_rss_mib=rss)
    if code != 0:
        res["error"] = f"{'timed out' if code is None else f'exit code {code}'}\n{cpu_step._tail(err)}"
        return res
    found = [json.loads(l[len("RESULT:"):]) for l in out.read_text(errors="replace").splitlines() if l.startswith("RESULT:")]
    if not found:
        res["error"] = f"no RESULT line\n{cpu_step._tail(err)}"
        return res
    res.update(found[-1])
    res["startup_s"] = wall - res["loop_s"] - res["post_s"]  # interpreter, imports, data, model init
    res["other_s"] = res["loop_s"] - res["train_s"] + res["post_s"]  # the evaluations, the report, exit
    if res.get("final"):
        res["accuracy"], res["test_loss"] = res["final"]["accuracy"], res["final"]["loss"]
    else:
        res["error"] = "no evaluation"
    return res


def run_shardlab(args, project_path, r, cores, tmp) -> dict:
    res = {"framework": "shardlab", "notes": []}
    cli = Path(args.build) / "app" / "shardlab-cli"
    cli = cli if cli.is_absolute() else REPO / cli
    if not (cli.is_file() and os.access(cli, os.X_OK)):
        res["skipped"] = f"CLI not found at {cli} (build with cmake into {args.build}/ first)"
        return res
    log = tmp / "shardlab.jsonl"
    cmd = [str(cli), "train", str(project_path), "--threads", str(args.threads), "--log", str(log)]
    if args.max_steps:
        cmd += ["--steps", str(args.max_steps)]
    res["command"] = " ".join(cmd)
    try:
        lines = subprocess.run([str(cli), "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()
        rev = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        res["version"] = (lines[0].strip() if lines else "Shardlab") + (f" ({rev})" if rev else "")
    except (OSError, subprocess.TimeoutExpired):
        res["version"] = "Shardlab"
    res["threading"] = (f"--threads {args.threads}, OMP_NUM_THREADS={args.threads}"
                        + (f", pinned to {len(cores)} cores" if cores else ""))
    res["machine_busy_before"] = cpu_step.warn_if_busy("shardlab")
    print(f"[shardlab] {res['command']}", flush=True)
    out, err = tmp / "shardlab.out", tmp / "shardlab.err"
    code, rss, wall, cpu, stamped = run_child_timed(cmd, cpu_step.child_env(args.threads), cores, args.timeout, out, err)
    res.update(wall_s=wall, cpu_s=cpu, peak_rss_mib=rss)
    stdout = "\n".join(l for _, l in stamped)
    res["stdout_tail"] = [f"[{t:8.2f} s] {l}" for t, l in stamped[-8:]]  # seconds since the process started
    if code != 0:
        res["error"] = f"`train` {'timed out' if code is None else f'exit code {code}'}\n{cpu_step._tail(err)}"
        return res
    evals = []
    for m in EVAL_RE.finditer(stdout):
        evals.append({"step": int(m.group(1)), "loss": float(m.group(2)),
                      "accuracy": float(m.group(3)) if m.group(3) else None,
                      "examples": int(m.group(4)) if m.group(4) else None})
    res["evals"] = evals
    # The log: step count, losses, the summed step times (training compute without data waits or evals).
    steps, train_s = [], 0.0
    try:
        for line in log.read_text(errors="replace").splitlines():
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if o.get("event") == "start":
                res["steps_per_epoch"] = o.get("steps_per_epoch")
                res["params"] = o.get("param_count")
            elif o.get("event") == "step":
                steps.append(o)
                train_s += float(o.get("step_time_s") or 0.0) + float(o.get("data_wait_s") or 0.0)
    except OSError as e:
        res["notes"].append(f"log not readable: {e}")
    res["steps"] = steps[-1]["step"] if steps else (evals[-1]["step"] if evals else None)
    # "training N steps ..." is printed once the data is loaded and the plan made, just before step 1.
    t_train = next((t for t, l in stamped if l.startswith("training ")), None)
    t_done = next((t for t, l in stamped if re.match(r"(done|cancelled) in ", l)), None)
    if t_train is not None:
        res["startup_s"] = t_train
        if steps:
            res["other_s"] = (t_done if t_done is not None else wall) - t_train - train_s
            if t_done is not None:
                res["other_s"] += wall - t_done
    res["losses"] = [s.get("loss") for s in steps]
    res["learning_rates"] = [s.get("learning_rate") for s in steps]
    res["train_s"] = train_s if steps else None
    if not evals or evals[-1]["accuracy"] is None:
        res["error"] = "no 'eval after step N: loss L, accuracy A' line in the output:\n" + "\n".join(
            "    " + l for l in stdout.splitlines()[-10:])
        return res
    final = evals[-1]
    res["final"] = final
    res["accuracy"], res["test_loss"] = final["accuracy"], final["loss"]
    if final["examples"] is not None:
        res["test_examples"] = final["examples"]
    return res


def fmt(v, spec="{:.1f}"):
    return "-" if v is None else spec.format(v)


def report(results, c, r, args, total_steps, full_steps) -> dict:
    print()
    lr = r["learning_rate"]
    lr_txt = (f"constant {lr['value']:g}" if lr["schedule"] == "constant" else
              f"warmup_cosine_decay({lr.get('init_value', 0):g} -> {lr['peak_value']:g} over {lr.get('warmup_steps', 0)}, "
              f"-> {lr.get('end_value', 0):g} at {lr.get('decay_steps')})")
    print(f"vit-fashion on Fashion-MNIST: batch {r['batch_size']}, {r['epochs']} epochs = {full_steps} steps "
          f"(last partial batch dropped), Adam(b1 {r['b1']:g}, b2 {r['b2']:g}, eps {r['eps']:g}), lr {lr_txt}, "
          f"pixels x {r['scale']:.6g}, {vit_step.param_count(c)} params")
    print(f"CPU: {vit_step.cpu_model()}, {os.cpu_count()} logical cores; threads T={args.threads}")
    if args.max_steps:
        print(f"*** SMOKE RUN: --max-steps {args.max_steps}, {total_steps} of {full_steps} steps; the accuracies below are NOT real "
              f"results and the targets are not judged ***")
    head = ["framework", "test accuracy", "test loss", "wall time s", "start-up s", "train s", "eval+other s", "steps",
            "peak RSS MiB", "version"]
    rows = []
    for name, label in (("shardlab", "Shardlab"), ("flax", "JAX/Flax")):
        x = results.get(name)
        if not x:
            continue
        acc = x.get("accuracy")
        rows.append([label, fmt(acc * 100 if acc is not None else None, "{:.2f}%"), fmt(x.get("test_loss"), "{:.4f}"),
                     fmt(x.get("wall_s")), fmt(x.get("startup_s")), fmt(x.get("train_s")), fmt(x.get("other_s")),
                     fmt(x.get("steps"), "{}"),
                     fmt(x.get("peak_rss_mib"), "{:.0f}"), x.get("version", "-")])
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(s.ljust(w) if i in (0, len(head) - 1) else s.rjust(w)  # noqa: E731
                                   for i, (s, w) in enumerate(zip(cells, widths)))
    print(line(head))
    for row in rows:
        print(line(row))
    print("  (wall time = the whole process = start-up + train + eval+other. start-up: to the first step (interpreter "
          "and imports, data loading, Shardlab's plan; Shardlab's ends at its 'training N steps' line); train: Shardlab's "
          "summed step_time_s + data_wait_s from its log, Flax's training loop without the evaluations, XLA's "
          "compilation of the step included; eval+other: the evaluations and the rest (exit))")
    for name in ("shardlab", "flax"):
        x = results.get(name)
        if not x:
            continue
        cpu_step.print_status(name, x)
        ev = [e for e in x.get("evals", []) if e.get("accuracy") is not None]
        if len(ev) > 1:
            print(f"  {name}: test accuracy after each evaluation: "
                  + ", ".join(f"{e['step']}: {e['accuracy'] * 100:.2f}%" for e in ev))
        if x.get("test_examples") not in (None, 10000):
            print(f"  {name}: warning - evaluated on {x['test_examples']} test examples, 10000 expected")
        if x.get("steps") is not None and x["steps"] != total_steps:
            print(f"  {name}: warning - trained {x['steps']} steps, {total_steps} expected")
        if x.get("params") and x["params"] != vit_step.param_count(c):
            print(f"  {name}: warning - {x['params']} parameters, expected {vit_step.param_count(c)}")
        if name == "flax" and x.get("first_step_s") is not None:
            print(f"  flax: imports {x['import_s']:.1f} s, data {x['data_load_s']:.1f} s, first step (XLA compile) "
                  f"{x['first_step_s']:.1f} s, evaluations {x['eval_s']:.1f} s")
        ls = [v for v in x.get("losses", []) if isinstance(v, (int, float))]
        if ls:
            print(f"  {name}: training loss first {ls[0]:.4f}, last {ls[-1]:.4f}")

    lr_s, lr_f = results.get("shardlab", {}).get("learning_rates"), results.get("flax", {}).get("learning_rates")
    if lr_s and lr_f and len(lr_s) == len(lr_f) and all(isinstance(v, (int, float)) for v in lr_s):
        worst = max(abs(a - b) for a, b in zip(lr_s, lr_f))
        print(f"  learning rates, step by step: Shardlab's log against optax's schedule, largest difference {worst:.2e}"
              f" (of peak {max(lr_f):.3g})")

    sl, fx = results.get("shardlab", {}).get("accuracy"), results.get("flax", {}).get("accuracy")
    gap = (sl - fx) * 100 if sl is not None and fx is not None else None
    verdicts = {"gap_points": gap, "meets_87": None, "within_1_point": None}
    print()
    if gap is not None:
        print(f"gap: Shardlab - Flax = {gap:+.2f} points")
    if args.max_steps:
        print("targets: not judged (smoke run with --max-steps)")
        return verdicts
    if sl is not None:
        verdicts["meets_87"] = sl >= TARGET_ACCURACY
    if gap is not None:
        verdicts["within_1_point"] = gap >= -TARGET_GAP_POINTS
    print(f"target: Shardlab >= {TARGET_ACCURACY * 100:.0f}% test accuracy: "
          + cpu_step.verdict(verdicts["meets_87"]) + (f" ({sl * 100:.2f}%)" if sl is not None else ""))
    print(f"target: Shardlab within {TARGET_GAP_POINTS:g} point of Flax (at most {TARGET_GAP_POINTS:g} below): "
          + cpu_step.verdict(verdicts["within_1_point"]) + (f" ({gap:+.2f} points)" if gap is not None else ""))
    if gap is not None and gap > TARGET_GAP_POINTS:
        print(f"  note: Shardlab is ahead of Flax by more than {TARGET_GAP_POINTS:g} point; check that the recipes match")
    return verdicts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="CMake build directory (default: build)")
    ap.add_argument("--project", default=DEFAULT_PROJECT, help=f"the ViT project (default: {DEFAULT_PROJECT})")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for both frameworks (default: os.cpu_count())")
    ap.add_argument("--only", choices=["shardlab", "flax"], help="train only this framework")
    ap.add_argument("--max-steps", type=int, metavar="N",
                    help="smoke test: stop both after N steps (the accuracy is then not a real result)")
    ap.add_argument("--no-pin", action="store_true", help="don't pin the children to the first T cores")
    ap.add_argument("--timeout", type=float, default=6 * 3600, help="seconds per framework process (default 6 h)")
    ap.add_argument("--json", metavar="FILE", help="also write all results to this JSON file")
    ap.add_argument("--worker", choices=["flax"], help=argparse.SUPPRESS)
    ap.add_argument("--config", help=argparse.SUPPRESS)
    ap.add_argument("--recipe", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        return run_worker(args)
    if args.threads < 1:
        ap.error("--threads must be >= 1")
    if args.max_steps is not None and args.max_steps < 1:
        ap.error("--max-steps must be >= 1")
    project_path = Path(args.project) if Path(args.project).is_absolute() else REPO / args.project
    project = json.loads(project_path.read_text())
    try:
        c = vit_config_of(project)
        r = read_recipe(project, project_path)
    except (KeyError, TypeError, ValueError) as e:
        ap.error(f"{args.project}: {e}")
    for stem in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        try:
            fashion_file(Path(r["data_dir"]), stem)
        except FileNotFoundError as e:
            ap.error(str(e))
    with gzip.open(fashion_file(Path(r["data_dir"]), "train-labels-idx1-ubyte"), "rb") as f:
        n_train = int.from_bytes(f.read(8)[4:8], "big")
    steps_per_epoch = n_train // r["batch_size"]
    full_steps = r["project_steps"] if r["project_steps"] > 0 else r["epochs"] * steps_per_epoch
    total_steps = min(full_steps, args.max_steps) if args.max_steps else full_steps
    lr = r["learning_rate"]
    if lr["schedule"] == "warmup_cosine_decay" and lr.get("decay_steps") != full_steps:
        print(f"note: the schedule's decay_steps {lr.get('decay_steps')} != the run's {full_steps} steps "
              f"(both frameworks follow the project)")

    cores = None if args.no_pin else cpu_step.pinned_cores(args.threads)
    if not args.no_pin and cores is None:
        print(f"note: T={args.threads} > {len(os.sched_getaffinity(0))} available cores; not pinning "
              f"(JAX will then use every core)")
    print(f"threads T={args.threads}; children " + (f"pinned to cores {sorted(cores)}" if cores else "not pinned"))

    names = [args.only] if args.only else ["shardlab", "flax"]
    results = {}
    with tempfile.TemporaryDirectory(prefix="shardlab-vit-accuracy-") as tmpdir:
        tmp = Path(tmpdir)
        for name in names:
            results[name] = (run_shardlab(args, project_path, r, cores, tmp) if name == "shardlab"
                             else run_flax(args, c, r, cores, tmp))
    verdicts = report(results, c, r, args, total_steps, full_steps)
    if args.json:
        doc = {
            "project": str(args.project), "model": dict(c, params=vit_step.param_count(c)), "recipe": r,
            "total_steps": total_steps, "smoke_run": bool(args.max_steps), "max_steps": args.max_steps,
            "cpu": vit_step.cpu_model(), "cpu_count": os.cpu_count(), "python": sys.version.split()[0],
            "threads": args.threads, "pinned_cores": sorted(cores) if cores else None,
            "results": results, "targets": verdicts, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    if any("error" in x for x in results.values()):
        return 1
    if not args.max_steps and (verdicts["meets_87"] is False or verdicts["within_1_point"] is False):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
