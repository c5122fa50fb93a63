#!/usr/bin/env python3
"""Writes the seed corpus of tests/fuzz/safetensors_fuzzer.cpp into corpus/safetensors/ beside it.

    python3 tests/fuzz/make_safetensors_corpus.py

valid-*.safetensors are files the reader must accept (every dtype, scalars, empty tensors,
metadata, any header order, an unaligned header, a checkpoint-like file); bad-*.safetensors break
one rule each, as the rows of rejectsMalformedFiles in tests/engine/test_safetensors.cpp do, and
must be rejected. test_safetensors.cpp replays every file here, so a file this script adds is
checked in the default suite too. The outputs are committed; rerun after changing this script.
Needs only the standard library.
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "safetensors")

FORMATS = {"F32": "<f", "F16": "<e", "F64": "<d", "I64": "<q", "I32": "<i", "I16": "<h", "I8": "<b", "U8": "<B"}
SIZES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def le64(n):
    return struct.pack("<Q", n)


def raw(header_text, data_size):
    """A file with the given header text (not padded) and data bytes 0, 1, 2, ..."""
    h = header_text.encode("utf-8") if isinstance(header_text, str) else header_text
    return le64(len(h)) + h + bytes(i % 256 for i in range(data_size))


def encode(dtype, values):
    if dtype == "BOOL":
        return bytes(1 if v else 0 for v in values)
    if dtype == "BF16":
        return b"".join(struct.pack("<f", v)[2:] for v in values)  # truncation is exact for these values
    return b"".join(struct.pack(FORMATS[dtype], v) for v in values)


def writer(tensors, metadata=None, align=True):
    """As Shardlab's (and the reference) writer: metadata first, tensors by name, space padding."""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        dtype, shape, payload = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if align:
        text += b" " * ((8 - len(text) % 8) % 8)
    return le64(len(text)) + text + data


def valid_files():
    files = {}
    every = {}
    for dtype in SIZES:
        vals = [1.0, -2.0, 0.5, 3.0, 0.0, -0.25] if dtype[0] in "FB" and dtype != "BOOL" else [1, 0, 1, 1, 0, 1]
        if dtype in ("I64", "I32", "I16", "I8"):
            vals = [-1, 2, -3, 4, 0, 5]
        payload = encode(dtype, vals)
        files[f"valid-{dtype.lower()}-matrix"] = writer({"m": (dtype, [2, 3], payload)})
        every[dtype.lower()] = (dtype, [6], payload)
    files["valid-every-dtype"] = writer(every, {"format": "pt"})
    files["valid-scalar-and-empty"] = writer(
        {"scalar": ("F32", [], encode("F32", [7.0])), "empty": ("F32", [0], b""), "empty2d": ("I32", [2, 0], b"")})
    files["valid-no-tensors"] = writer({})
    files["valid-metadata-only"] = writer({}, {"k": "v", "unicode \u2713": "h\u00e9llo", "json": '{"a": [1]}'})
    files["valid-metadata-null"] = raw('{"__metadata__":null,"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', 1)
    files["valid-any-header-order"] = raw(
        '{"z":{"dtype":"U8","shape":[2],"data_offsets":[4,6]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
        '"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}}', 6)
    files["valid-unaligned-header"] = raw('{"a":{"dtype":"I16","shape":[2],"data_offsets":[0,4]}}', 4)
    files["valid-escaped-names"] = raw('{"a\\u00e9\\n\\"q\\"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', 1)
    files["valid-rank-4"] = writer({"t": ("F16", [1, 2, 1, 2], encode("F16", [1.0, 2.0, 3.0, 4.0]))})
    files["valid-checkpoint-like"] = writer(
        {"params/dense1/kernel": ("F32", [3, 2], encode("F32", [0.1, -0.2, 0.3, 0.4, -0.5, 0.6])),
         "params/dense1/bias": ("F32", [2], encode("F32", [0.0, 0.0])),
         "opt_state/mu/dense1/kernel": ("F32", [3, 2], encode("F32", [0.0] * 6)),
         "opt_state/nu/dense1/bias": ("F32", [2], encode("F32", [0.0, 0.0]))},
        {"format": "shardlab", "step": "12"})
    return files


def bad_files():
    ok_a = '"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}'

    def entry(body):
        return '{"a":{' + body + "}}"

    rows = {
        # Framing.
        "empty-file": b"",
        "shorter-than-8-bytes": b"\x02\x00\x00\x00\x00",
        "header-over-100MB": le64(100_000_001) + b"{}",
        "header-length-u64-max": le64(2**64 - 1) + b"{}",
        "header-past-end-of-file": le64(64) + b"{}",
        # Header text.
        "invalid-UTF-8": raw(b'{"\xff":1}', 0),
        "overlong-UTF-8": raw(b'{"\xc0\xaf":1}', 0),
        "UTF-8-surrogate": raw(b'{"\xed\xa0\x80":1}', 0),
        "truncated-UTF-8": raw(b'{"\xe2\x9c', 0),
        "not-JSON": raw('{"a": ', 0),
        "NUL-padding": raw(b"{}\x00\x00", 0),
        "NUL-then-garbage": raw(b"{}\x00garbage", 0),
        "trailing-garbage": raw("{} x", 0),
        "JSON-array": raw("[1, 2]", 0),
        "leading-space": raw(" {}", 0),
        "empty-header": raw("", 0),
        "entry-not-object": raw('{"a":[1]}', 0),
        "escaped-lone-surrogate": raw('{"\\ud800":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', 1),
        # dtype.
        "unknown-dtype": raw(entry('"dtype":"F33","shape":[1],"data_offsets":[0,4]'), 4),
        "unsupported-dtype": raw(entry('"dtype":"U16","shape":[1],"data_offsets":[0,2]'), 2),
        "lowercase-dtype": raw(entry('"dtype":"f32","shape":[1],"data_offsets":[0,4]'), 4),
        "dtype-not-string": raw(entry('"dtype":4,"shape":[1],"data_offsets":[0,4]'), 4),
        # shape.
        "shape-not-list": raw(entry('"dtype":"F32","shape":2,"data_offsets":[0,8]'), 8),
        "negative-dimension": raw(entry('"dtype":"F32","shape":[-2],"data_offsets":[0,8]'), 8),
        "float-dimension": raw(entry('"dtype":"F32","shape":[2.0],"data_offsets":[0,8]'), 8),
        "string-dimension": raw(entry('"dtype":"F32","shape":["2"],"data_offsets":[0,8]'), 8),
        "dimension-over-int64": raw(entry('"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]'), 8),
        "element-count-overflow": raw(entry('"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]'), 0),
        "byte-size-overflow": raw(entry('"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]'), 0),
        # data_offsets.
        "offsets-not-list": raw(entry('"dtype":"F32","shape":[2],"data_offsets":"0-8"'), 8),
        "one-offset": raw(entry('"dtype":"F32","shape":[2],"data_offsets":[8]'), 8),
        "three-offsets": raw(entry('"dtype":"F32","shape":[2],"data_offsets":[0,8,8]'), 8),
        "negative-offset": raw(entry('"dtype":"F32","shape":[0],"data_offsets":[-4,-4]'), 0),
        "float-offset": raw(entry('"dtype":"F32","shape":[2],"data_offsets":[0,8.0]'), 8),
        "begin-after-end": raw(entry('"dtype":"F32","shape":[0],"data_offsets":[8,0]'), 8),
        "size-mismatch": raw(entry('"dtype":"F32","shape":[2],"data_offsets":[0,4]'), 4),
        "scalar-size-mismatch": raw(entry('"dtype":"F64","shape":[],"data_offsets":[0,4]'), 4),
        "offset-u64-max": raw(entry('"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]'), 1),
        # Tiling of the data buffer.
        "overlapping-offsets": raw("{" + ok_a + ',"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', 12),
        "identical-offsets": raw("{" + ok_a + ',"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8),
        "gap-between-tensors": raw("{" + ok_a + ',"b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}}', 16),
        "data-not-starting-at-0": raw(entry('"dtype":"F32","shape":[1],"data_offsets":[4,8]'), 8),
        "offsets-past-end-of-buffer": raw("{" + ok_a + "}", 6),
        "empty-tensor-past-end": raw(entry('"dtype":"F32","shape":[0],"data_offsets":[9,9]'), 0),
        "trailing-bytes": raw("{" + ok_a + "}", 9),
        "data-but-no-tensors": raw("{}", 3),
        # Names and keys.
        "duplicate-tensor-name": raw("{" + ok_a + "," + ok_a + "}", 8),
        "duplicate-key-in-entry": raw(entry('"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]'), 8),
        "duplicate-__metadata__": raw('{"__metadata__":{},"__metadata__":{}}', 0),
        "unknown-key-in-entry": raw(entry('"dtype":"F32","shape":[2],"data_offsets":[0,8],"offset":0'), 8),
        "missing-dtype": raw(entry('"shape":[2],"data_offsets":[0,8]'), 8),
        "missing-shape": raw(entry('"dtype":"F32","data_offsets":[0,8]'), 8),
        "missing-data_offsets": raw(entry('"dtype":"F32","shape":[2]'), 8),
        # __metadata__.
        "metadata-not-object": raw('{"__metadata__":"pt"}', 0),
        "metadata-list": raw('{"__metadata__":[["k","v"]]}', 0),
        "metadata-number-value": raw('{"__metadata__":{"k":1}}', 0),
        "metadata-nested-value": raw('{"__metadata__":{"k":{"x":"y"}}}', 0),
        "metadata-duplicate-key": raw('{"__metadata__":{"k":"v","k":"w"}}', 0),
        # Deep nesting: a parser that recurses without a limit would overflow its stack.
        "deeply-nested-metadata": raw('{"__metadata__":' + "[" * 5000 + "]" * 5000 + "}", 0),
    }
    return {"bad-" + k: v for k, v in rows.items()}


def main():
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.startswith(("valid-", "bad-")):
            os.remove(os.path.join(OUT, old))
    files = {**valid_files(), **bad_files()}
    for name, data in sorted(files.items()):
        with open(os.path.join(OUT, name + ".safetensors"), "wb") as f:
            f.write(data)
    print(f"wrote {len(files)} files to {os.path.relpath(OUT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
