"""Robustness driver (run as a SUBPROCESS by test_robustness.py, so a crash fails the test, not pytest).

`python fuzz_payloads.py PTE_DIR COUNT SEED` takes the stand-in .pte files in PTE_DIR, replaces their delegate
blobs with mutated payloads (truncated, random bytes, flipped header bytes, flipped preamble bytes, corrupted
TFLite, hostile size fields, ...) and executes each through `executorch_neutron.runtime.run`. Every run must
either succeed or raise NeutronRuntimeError. Prints one JSON line: counts per kind and outcome, plus anything
unexpected.
"""

from __future__ import annotations

import json
import random
import struct
import sys
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pte_tools import replace_blobs  # noqa: E402

from executorch_neutron.runtime import NeutronRuntimeError, run  # noqa: E402

BASES = ["add_bias", "two_in_two_out", "int8_add", "flat_2d"]


def _flip(blob: bytes, rng: random.Random, lo: int, hi: int, n: int) -> bytes:
    b = bytearray(blob)
    hi = min(hi, len(b))
    for _ in range(n):
        if hi > lo:
            b[rng.randrange(lo, hi)] ^= rng.randrange(1, 256)
    return bytes(b)


def _set_word(blob: bytes, at: int, value: int) -> bytes:
    b = bytearray(blob)
    struct.pack_into("<I", b, at, value & 0xFFFFFFFF)
    return bytes(b)


MUTATIONS = {
    "truncate": lambda b, r: b[:r.randrange(0, len(b))],
    "random_bytes": lambda b, r: r.randbytes(r.randrange(0, 2 * len(b))),
    "flip_header": lambda b, r: _flip(b, r, 0, 16, r.randint(1, 3)),
    "flip_preamble": lambda b, r: _flip(b, r, 16, 32, r.randint(1, 2)),
    "flip_tflite": lambda b, r: _flip(b, r, 32, len(b), r.randint(1, 8)),
    "scramble_tflite": lambda b, r: b[:32] + r.randbytes(len(b) - 32),
    "huge_tflite_size": lambda b, r: _set_word(b, 24, r.choice([len(b), 2**31, 2**32 - 1, r.randrange(2**32)])),
    "zero_tflite_size": lambda b, r: _set_word(b, 24, 0),
    "microcode_magic": lambda b, r: _set_word(b, 16, 0x64434D6E),
    "header_counts": lambda b, r: bytes([r.randrange(256), r.randrange(256), r.randrange(256)]) + b[3:],
    "append_junk": lambda b, r: b + r.randbytes(r.randrange(1, 64)),
}


def main(pte_dir: Path, count: int, seed: int) -> None:
    rng = random.Random(seed)
    bases = {name: ((pte_dir / f"{name}.pte").read_bytes(), torch.load(pte_dir / f"{name}.pt")["inputs"])
             for name in BASES}
    outcomes: Counter = Counter()
    unexpected = []
    kinds = sorted(MUTATIONS)
    for k in range(count):
        kind = kinds[k % len(kinds)]
        name = BASES[(k // len(kinds)) % len(BASES)]
        pte, inputs = bases[name]
        mutated = replace_blobs(pte, lambda i, blob: MUTATIONS[kind](blob, rng))
        try:
            run(mutated, inputs)
            outcomes[f"{kind}:ran"] += 1
        except NeutronRuntimeError as exc:
            outcomes[f"{kind}:error"] += 1
            if not str(exc).strip():
                unexpected.append(f"{kind}/{name}: empty error message")
        except Exception as exc:  # noqa: BLE001
            unexpected.append(f"{kind}/{name}: {type(exc).__name__}: {exc}")
    print(json.dumps({"total": sum(outcomes.values()) + len(unexpected), "outcomes": dict(sorted(outcomes.items())),
                      "unexpected": unexpected}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
