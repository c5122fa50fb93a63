#!/usr/bin/env python3
"""Runs an ONNX model that Shardlab exported, for tests/engine/test_onnx_export.cpp.

    run_onnx.py MODEL X.npy OUT_PREFIX
        check MODEL with onnx.checker (full_check) when the `onnx` module is installed, then run it on
        X.npy with onnxruntime on the CPU twice: graph optimisations off (the graph as exported) and
        at their default (ORT may fuse the GELU, LayerNorm and MatMul+Add patterns), writing
        OUT_PREFIX.plain.npy and OUT_PREFIX.optimised.npy. Prints "checker: ok" or why it was
        skipped, then "OK".

Exits with status 3 and a line starting "SKIP:" when numpy or onnxruntime is missing, so the test
skips with that reason; with status 1 on any other failure.
"""
import sys

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:  # the caller skips
    print(f"SKIP: python3 cannot import numpy and onnxruntime ({e})")
    sys.exit(3)


def main(model, x_path, out_prefix):
    try:
        import onnx
    except ImportError as e:
        print(f"checker: skipped (python3 cannot import onnx: {e})")
    else:
        m = onnx.load(model)
        onnx.checker.check_model(m, full_check=True)
        print(f"checker: ok (onnx {onnx.__version__}, IR {m.ir_version}, opset {m.opset_import[0].version})")
    x = np.load(x_path)
    for label, level in (("plain", ort.GraphOptimizationLevel.ORT_DISABLE_ALL),
                         ("optimised", ort.GraphOptimizationLevel.ORT_ENABLE_ALL)):
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        (y,) = session.run(None, {session.get_inputs()[0].name: x})
        np.save(f"{out_prefix}.{label}.npy", y.astype(np.float32))
    print(f"onnxruntime {ort.__version__}: input {session.get_inputs()[0].name} {x.shape}, output {y.shape}")
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
