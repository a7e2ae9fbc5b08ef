"""The device payload header of a 3-input / 3-output partition whose NeutronGraph node lists its operands permuted.

Runs the NPU compile step with the eIQ Neutron SDK test double (tests/npu/fake_neutron_sdk.py) standing in for NXP's
converter: the node's real inputs are graph inputs (2, 0, 1) and its real outputs graph outputs (1, 2, 0). Prints
every header byte with its field name (the delegate payload contract in payload/format.py) and where each value comes from,
so a reader can check the bytes against the contract by eye. The partition's delegate call has 4 input arguments;
argument 1 is not used by the partition. No pass/fail.

    python benchmarks/payload_header.py [--write-docs]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "npu"))
sys.path.insert(0, str(ROOT / "tests" / "runtime"))

import fake_neutron_sdk as fake  # noqa: E402
from tflite_fixtures import GraphBuilder  # noqa: E402

from executorch_neutron.compile_spec import NeutronCompileSpec  # noqa: E402
from executorch_neutron.neutron.npu import compile_partition  # noqa: E402
from executorch_neutron.core.payload import Header, unpack  # noqa: E402

NODE_INPUTS, NODE_OUTPUTS = (2, 0, 1), (1, 2, 0)
# the partition TFLite's graph order: graph input p is delegate argument INPUT_ARGS[p], with format flag IN_FLAGS[p]
INPUT_ARGS, IN_FLAGS, OUT_FLAGS = (0, 2, 3), (1, 0, 0), (0, 1, 0)


def three_by_three() -> bytes:
    g = GraphBuilder()
    ins = [g.tensor([1, 2 + i, 3 + 2 * i], np.int8, f"in_{i}", scale=0.1) for i in range(3)]
    outs = []
    for j, src in enumerate(ins):
        out = g.tensor(g.tensors[src].shape, np.int8, f"out_{j}", scale=0.1)
        g.op("relu", [src], [out])
        outs.append(out)
    return g.finish(ins, outs)


def main() -> None:
    import argparse

    import _docs

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _docs.add_argument(p)
    args = p.parse_args()
    with _docs.figures(args, "benchmarks/payload_header.py", "payload_header",
                       "The device payload header, byte by byte"):
        _print_header()


def _print_header() -> None:
    graph_header = Header(n_args=4, input_formats=IN_FLAGS, output_formats=OUT_FLAGS, input_args=INPUT_ARGS,
                          output_args=(0, 1, 2))
    with tempfile.TemporaryDirectory() as tmp:
        fake.install(Path(tmp))
        sys.path.insert(0, tmp)
        os.environ.update(FAKE_NEUTRON_MODE="ok", FAKE_NEUTRON_INPUT_ORDER=",".join(map(str, NODE_INPUTS)),
                          FAKE_NEUTRON_OUTPUT_ORDER=",".join(map(str, NODE_OUTPUTS)))
        compiled = compile_partition(three_by_three(), graph_header, NeutronCompileSpec(), "neutron_0")
    blob = compiled.blob
    header = unpack(blob).header
    print(f"payload kind {compiled.kind}, {len(blob)} bytes; SDK test double with node inputs = graph inputs "
          f"{list(NODE_INPUTS)}, node outputs = graph outputs {list(NODE_OUTPUTS)}")
    print(f"partition graph order: inputs -> delegate arguments {list(INPUT_ARGS)} (argument 1 unused), input "
          f"format flags {list(IN_FLAGS)}, output format flags {list(OUT_FLAGS)}")
    rows = [("number of Neutron inputs", ""), ("number of Neutron outputs", ""),
            ("number of input arguments of the delegate call", "")]
    for i, p in enumerate(NODE_INPUTS):
        rows.append((f"format flag, Neutron input {i}", f"node input {i} = graph input {p} 'in_{p}'"))
    for j, p in enumerate(NODE_OUTPUTS):
        rows.append((f"format flag, Neutron output {j}", f"node output {j} = graph output {p} 'out_{p}'"))
    for i, p in enumerate(NODE_INPUTS):
        rows.append((f"delegate argument of Neutron input {i}", f"graph input {p} is argument {INPUT_ARGS[p]}"))
    for j, p in enumerate(NODE_OUTPUTS):
        rows.append((f"delegate output of Neutron output {j}", f"graph output {p}; the runtime adds n_args = 4"))
    rows.append(("payload version", "0: scratch output only"))
    print(f"{'byte':>4}  {'hex':>4}  {'value':>5}  field")
    for k, (field, source) in enumerate(rows):
        print(f"{k:>4}  0x{blob[k]:02X}  {blob[k]:>5}  {field}" + (f"  ({source})" if source else ""))
    pad = -len(rows) % 16
    print(f"{len(rows)}..{len(rows) + pad - 1}: zero padding: {blob[len(rows):len(rows) + pad].hex(' ')}" if pad
          else f"no padding: the {len(rows)}-byte header ends at a 16-byte boundary")
    print(f"header as a whole: {blob[:16].hex(' ')}")
    print(f"parsed back: {header}")
    words = np.frombuffer(blob[16:48], dtype="<u4")
    print(f"microcode at byte 16: word 0 = 0x{words[0]:08X} (magic), word 6 = {words[6]} (microcode bytes), "
          f"word 7 = {words[7]} (weights bytes)")


if __name__ == "__main__":
    main()
