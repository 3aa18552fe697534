#!/usr/bin/env python3
"""Write tests/fixtures/quant_dequant.bin: blocks of every tensor type kvsnap
reads and their values as ggml's own reference code dequantizes them
(gguf-py's gguf.quants, which mirrors ggml-quants.c), for test_quant.c.

Per type: random blocks (random quant bits; scales drawn from every finite
f16 bit pattern, subnormals and 65504 included) and, for the types gguf-py
can quantize, blocks quantized from random floats.  Deterministic (seeded).

File (little-endian): "KVQF", u32 version 1, u32 count, then per entry
u32 ggml type id, u32 n elements, u32 n bytes, the bytes, n f32 values.
Run by scripts/make-quant-fixtures.sh (which pins gguf-py's version)."""
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

# type, blocks, elements per block, block bytes, byte offsets of f16 scales
TYPES = [
    (T.Q4_0, 6, 32, 18, [0]),
    (T.Q4_1, 6, 32, 20, [0, 2]),
    (T.Q5_0, 6, 32, 22, [0]),
    (T.Q5_1, 6, 32, 24, [0, 2]),
    (T.Q8_0, 6, 32, 34, [0]),
    (T.Q2_K, 3, 256, 84, [80, 82]),
    (T.Q3_K, 3, 256, 110, [108]),
    (T.Q4_K, 3, 256, 144, [0, 2]),
    (T.Q5_K, 3, 256, 176, [0, 2]),
    (T.Q6_K, 3, 256, 210, [208]),
]
QUANTIZABLE = {T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0}


def finite_f16(rng, n):
    """n random finite f16 bit patterns (exponent 0..30, either sign)."""
    e = rng.integers(0, 31, n, dtype=np.uint16)
    m = rng.integers(0, 1024, n, dtype=np.uint16)
    s = rng.integers(0, 2, n, dtype=np.uint16)
    return (s << 15) | (e << 10) | m


def main(out):
    rng = np.random.default_rng(20261128)
    entries = []
    for qt, nblk, be, bb, scale_offs in TYPES:
        raw = rng.integers(0, 256, (nblk, bb), dtype=np.uint8)
        for off in scale_offs:
            raw[:, off:off + 2] = finite_f16(rng, nblk).view(np.uint8).reshape(nblk, 2)
        raw[0, :] = 0  # an all-zero block
        entries.append((qt, raw.reshape(-1)))
        if qt in QUANTIZABLE:
            x = rng.normal(0.0, 1.0, (1, 2 * be)).astype(np.float32)
            x[0, :be] *= 1e-3
            entries.append((qt, quants.quantize(x, qt).reshape(-1)))
    # plain types: n not a multiple of anything
    f16 = finite_f16(rng, 37)
    entries.append((T.F16, f16.view(np.uint8)))
    b = rng.integers(0, 1 << 16, 37, dtype=np.uint32).astype(np.uint16)
    b = np.where((b & 0x7f80) == 0x7f80, b & 0xbfff, b).astype(np.uint16)  # finite
    entries.append((T.BF16, b.view(np.uint8)))
    f32 = rng.normal(0.0, 10.0, 37).astype(np.float32)
    entries.append((T.F32, f32.view(np.uint8)))

    with open(out, "wb") as f:
        f.write(b"KVQF" + struct.pack("<II", 1, len(entries)))
        for qt, data in entries:
            data = np.ascontiguousarray(data, dtype=np.uint8)
            if qt == T.F32:
                vals = data.view(np.float32)
            elif qt == T.F16:
                vals = data.view(np.float16).astype(np.float32)
            else:
                vals = quants.dequantize(data, qt).astype(np.float32).reshape(-1)
            f.write(struct.pack("<III", int(qt), vals.size, data.size))
            f.write(data.tobytes())
            f.write(vals.astype("<f4").tobytes())
    print(f"{out}: {len(entries)} entries")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/quant_dequant.bin")
