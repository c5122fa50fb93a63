#!/usr/bin/env python3
"""Cross-checks Shardlab's safetensors reader and writer against the reference implementation.

Used by tests/engine/test_safetensors.cpp (which skips when `safetensors` or `numpy` is missing):

    interop.py check PATH   load PATH (written by Shardlab) with safetensors.numpy.load_file and compare
                            every tensor, bit for bit, and the metadata with EXPECTED below; prints one
                            line per tensor, then "OK", or the mismatches and exits with status 1
    interop.py write PATH   write EXPECTED with safetensors.numpy.save_file, for Shardlab to read

EXPECTED must match expected_interop() in test_safetensors.cpp. BF16 is not in it: numpy has no
bfloat16, so safetensors.numpy can neither load nor save it.
"""
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

EXPECTED = {
    "f32": np.array([[0.0, 1.5, -2.25], [3.0e38, 1e-40, -0.0]], dtype=np.float32),
    "f16": np.array([1.0, -2.5, 65504.0, 2.0**-24], dtype=np.float16),
    "f64": np.array([1.0 / 3.0, -1e300], dtype=np.float64),
    "i64": np.array([-(2**63), 2**63 - 1, -1], dtype=np.int64),
    "i32": np.array([-(2**31), 2**31 - 1], dtype=np.int32),
    "i16": np.array([[-32768, 32767, -2]], dtype=np.int16),
    "i8": np.array([-128, 127, 0], dtype=np.int8),
    "u8": np.array([0, 255, 7], dtype=np.uint8),
    "bool": np.array([True, False, True], dtype=np.bool_),
    "scalar": np.array(7.0, dtype=np.float32),
    "empty": np.zeros((0,), dtype=np.float32),
    "empty2d": np.zeros((2, 0), dtype=np.int32),
}
METADATA = {"format": "np", "note": "h\u00e9llo \u2713"}


def check(path):
    got = load_file(path)
    problems = []
    for name, want in EXPECTED.items():
        if name not in got:
            problems.append(f"{name}: missing")
            continue
        arr = got[name]
        print(f"{name}: {arr.dtype} {list(arr.shape)} {arr.ravel().tolist()}")
        if arr.dtype != want.dtype:
            problems.append(f"{name}: dtype {arr.dtype}, expected {want.dtype}")
        elif arr.shape != want.shape:
            problems.append(f"{name}: shape {arr.shape}, expected {want.shape}")
        elif arr.tobytes() != want.tobytes():
            problems.append(f"{name}: values {arr.ravel().tolist()}, expected {want.ravel().tolist()}")
    for name in got:
        if name not in EXPECTED:
            problems.append(f"{name}: unexpected tensor")
    with safe_open(path, framework="np") as f:
        meta = f.metadata()
    print(f"metadata: {meta}")
    if meta != METADATA:
        problems.append(f"metadata {meta}, expected {METADATA}")
    for p in problems:
        print("MISMATCH", p)
    print("OK" if not problems else "FAILED")
    return 0 if not problems else 1


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("check", "write"):
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "check":
        return check(sys.argv[2])
    save_file(EXPECTED, sys.argv[2], metadata=METADATA)
    print("wrote", sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
