"""The bad-input and fault catalogue: case -> what the user does, the exit code and the message they get.

tests/test_bad_input_catalogue.py runs every case (crash-prone ones in a child process) and checks the exit code
and the message fragment; README.md's "Troubleshooting" section is generated from this table
(`python tests/bad_input_catalogue.py` prints it) and a test fails when the two disagree.

A case is a CLI command (`argv`, run as `python -m executorch_neutron ...`) or a Python snippet (`script`, run as
`python -c ...`; an uncaught exception exits 1). `{d}` is the directory holding the files of `catalogue_files()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    problem: str  # README: what the user did
    fix: str  # README: what to do
    code: int  # expected exit code
    fragment: str  # expected in stdout+stderr
    argv: tuple[str, ...] = ()
    script: str = ""
    env: dict = field(default_factory=dict)  # extra environment ({d} expanded)
    child: bool = False  # run in a child process even for a CLI command (crash-prone, environment, signals)


RUN = ("run", "{d}/base.pte", "--input", "{d}/x.npy")
COMPILE = ("compile", "--random-calibration", "-o", "{d}/out.pte")
API_RUN = ("import numpy, torch; from executorch_neutron.runtime import run; "
           "x = torch.from_numpy(numpy.load('{d}/x.npy')); ")

CASES: dict[str, Case] = {
    # --- crashes of the past: now a refusal with a message (always in a child process) -------------------------
    "quantize_arg_out_of_range": Case(
        "`run` a .pte whose CPU quantize op has a corrupted quant_max", "re-export the .pte", 2,
        "quant_max 68719476863", argv=("run", "{d}/bad_qmax.pte", "--input", "{d}/x.npy"), child=True),
    "operator_name_not_utf8_api": Case(
        "`runtime.run(bytes, ...)` on a .pte whose operator name is not UTF-8", "re-export the .pte", 1,
        "InvalidProgram: invalid .pte: ExecuTorch's deserializer refuses it",
        script=API_RUN + "run(open('{d}/bad_utf8.pte', 'rb').read(), [x])"),
    "truncated_host_library": Case(
        "the cached host library is truncated (interrupted build or copy)", "nothing: it is rebuilt", 0,
        "is damaged or unverified", child=True,
        script=("import os; from executorch_neutron.runtime import build; lib = build.library_path(); "
                "os.truncate(lib, lib.stat().st_size // 2); " + API_RUN + "run('{d}/base.pte', [x]); print('ran')"),
        env={"EXECUTORCH_NEUTRON_CACHE_DIR": "{d}/cache_truncated"}),
    "run_from_threads": Case(
        "`runtime.run` from several threads, then interpreter exit", "nothing: calls are serialized", 0,
        "4 threads ok",
        script=(API_RUN + "import threading; data = open('{d}/base.pte', 'rb').read(); "
                "ts = [threading.Thread(target=lambda: [run(data, [x]) for _ in range(3)]) for _ in range(4)]; "
                "[t.start() for t in ts]; [t.join() for t in ts]; print('4 threads ok')")),
    # --- silently wrong or lost before ------------------------------------------------------------------------
    "payload_changed": Case(
        "`run` a .pte whose host-reference payload was changed", "re-export the .pte", 2, "checksum mismatch",
        argv=("run", "{d}/bad_payload.pte", "--input", "{d}/x.npy")),
    "nan_input": Case(
        "`run` with NaN/Inf in an input", "clean the input (the outputs are meaningless)", 0,
        "input 0 holds NaN values", argv=("run", "{d}/base.pte", "--input", "{d}/nan.npy")),
    "nan_calibration": Case(
        "NaN/Inf in a calibration file", "clean or drop that sample", 2, "calibration file {d}/nancal/1.npy",
        argv=("compile", "{d}/model.py:factory", "--calibration", "{d}/nancal", "-o", "{d}/out.pte")),
    "buffer_mutation": Case(
        "a model whose forward() updates a buffer (a counter)", "keep that state outside the model", 2,
        "updates buffer(s) calls", argv=("compile", "{d}/model.py:counter") + COMPILE[1:]),
    "zero_dim_tensor": Case(
        "0-d (scalar) tensors between NPU operators", "nothing: those ops stay on the CPU with a reason", 0,
        "0-d (scalar) tensor", argv=("compile", "{d}/model.py:scalar", "--allow-cpu-only") + COMPILE[1:]),
    "conv3d": Case(
        "a Conv3d model (the host runtime has no 3-D convolution)", "use Conv2d", 0,
        "3-D convolution (Conv3d) left on the CPU",
        argv=("compile", "{d}/model.py:conv3d", "--allow-cpu-only") + COMPILE[1:]),
    # --- unclear messages before ------------------------------------------------------------------------------
    "factory_returns_string": Case(
        "the factory returns `(model, \"str\")`", "return (module, example_inputs[, calibration])", 2,
        "item 1 (example inputs) is str", argv=("compile", "{d}/model.py:returns_str") + COMPILE[1:]),
    "factory_items_swapped": Case(
        "the factory returns `(inputs, model)`", "return (module, example_inputs[, calibration])", 2,
        "are the items swapped?", argv=("compile", "{d}/model.py:swapped") + COMPILE[1:]),
    "factory_bad_calibration": Case(
        "the factory's third item is not a list of samples", "a list of tensors or tuples of tensors", 2,
        "item 2 (calibration samples) is int", argv=("compile", "{d}/model.py:bad_calibration", "-o",
                                                     "{d}/out.pte")),
    "inputs_do_not_fit": Case(
        "example inputs that do not fit the model", "inputs with the shapes forward() takes", 2,
        "do not fit the model", argv=("compile", "{d}/model.py:wrong_inputs") + COMPILE[1:]),
    "garbage_pt2": Case(
        "a `.pt2` that is not a torch.export program", "torch.export.save(torch.export.export(model, inputs), f)",
        2, "cannot load {d}/garbage.pt2 as a torch.export program", argv=("compile", "{d}/garbage.pt2") + COMPILE[1:]),
    "int64_random_calibration": Case(
        "int64 (index) inputs with `--random-calibration`", "nothing: random data follows the input dtypes", 0,
        "wrote {d}/out.pte", argv=("compile", "{d}/model.py:embedding", "--allow-cpu-only") + COMPILE[1:]),
    "corrupt_npy": Case(
        "a corrupt `.npy` input", "write it again with numpy.save", 2, "cannot read {d}/corrupt.npy",
        argv=("run", "{d}/base.pte", "--input", "{d}/corrupt.npy")),
    "unknown_operator_name": Case(
        "`--operators-not-to-delegate` with an unknown name", "use a name from the list in the message", 2,
        "unknown operator 'aten.frobnicate'; valid names",
        argv=("compile", "{d}/model.py:factory", "--operators-not-to-delegate", "aten.frobnicate") + COMPILE[1:]),
    "aten_operator_name": Case(
        "`--operators-not-to-delegate aten.conv2d.default` (an ATen name)", "nothing: mapped to its edge form", 0,
        "excluded by operators_not_to_delegate",
        argv=("compile", "{d}/model.py:factory", "--allow-cpu-only", "--operators-not-to-delegate",
              "aten.conv2d.default") + COMPILE[1:]),
    "interrupted": Case(
        "Ctrl-C", "nothing: files being written keep their previous content", 130, "error: interrupted",
        argv=("compile", "{d}/model.py:interrupt") + COMPILE[1:], child=True),
    "cxx_build_fails": Case(
        "the C++ build of the host library fails", "fix the compiler ($CXX) or the cache directory", 1,
        "fake.cpp:1:1: error: boom", argv=RUN, child=True,
        env={"CXX": "{d}/failing-cxx", "EXECUTORCH_NEUTRON_CACHE_DIR": "{d}/cache_failing"}),
    "cache_dir_is_a_file": Case(
        "`$EXECUTORCH_NEUTRON_CACHE_DIR` is a file or read-only", "point it at a writable directory", 1,
        "point $EXECUTORCH_NEUTRON_CACHE_DIR at a writable directory", argv=RUN, child=True,
        env={"EXECUTORCH_NEUTRON_CACHE_DIR": "{d}/x.npy"}),
    "cache_dir_read_only": Case(
        "`$EXECUTORCH_NEUTRON_CACHE_DIR` is a read-only directory", "point it at a writable directory", 1,
        "point $EXECUTORCH_NEUTRON_CACHE_DIR at a writable directory", argv=RUN, child=True,
        env={"EXECUTORCH_NEUTRON_CACHE_DIR": "/sys/kernel"}),  # sysfs: not writable, even for root (tests run as root)
    "lower_from_two_threads": Case(
        "`lower()` from two threads at once", "nothing: the calls are serialized", 0, "2 lowered",
        script=("import sys, threading, torch; sys.path.insert(0, '{d}'); import model; "
                "from executorch_neutron import lower; out = []; "
                "f = lambda: out.append(lower(*model.factory(), reference=True)); "
                "ts = [threading.Thread(target=f) for _ in range(2)]; [t.start() for t in ts]; "
                "[t.join() for t in ts]; print(len(out), 'lowered')")),
}

MODELS = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x):
        return self.b(torch.floor(torch.relu(self.a(x)) * 4.0))


def factory():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(1, 3, 6, 5),)


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x):
        self.calls.add_(1)
        return self.conv(x) + self.calls


class Scalar(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        y = self.conv(x)
        return y.mean() * 2.0 + y.amax()


class Embedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.e, self.l = nn.Embedding(10, 8), nn.Linear(8, 4)

    def forward(self, idx):
        return self.l(self.e(idx))


def counter():
    return Counter(), (torch.randn(1, 3, 6, 5),)


def scalar():
    return Scalar().eval(), (torch.randn(1, 3, 8, 7),)


def conv3d():
    return nn.Sequential(nn.Conv3d(2, 4, 3), nn.ReLU()).eval(), (torch.randn(1, 2, 5, 6, 7),)


def embedding():
    return Embedding().eval(), (torch.tensor([[1, 5, 9]]),)


def returns_str():
    return Net().eval(), "str"


def swapped():
    return (torch.randn(1, 3, 6, 5),), Net().eval()


def bad_calibration():
    return Net().eval(), (torch.randn(1, 3, 6, 5),), 5


def wrong_inputs():
    return Net().eval(), (torch.randn(1, 5, 6, 5),)


def interrupt():
    raise KeyboardInterrupt
'''


def catalogue_files(d) -> None:
    """Write the files the cases use into directory `d` (a pathlib.Path): model.py, base.pte, x.npy, damaged
    copies of base.pte, NaN and corrupt inputs, a garbage .pt2, a failing compiler."""
    import sys

    import numpy as np
    import torch
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary

    from executorch_neutron import lower

    (d / "model.py").write_text(MODELS)
    sys.path.insert(0, str(d))
    try:
        import model
    finally:
        sys.path.pop(0)
    net, inputs = model.factory()
    pte = lower(net, inputs, [inputs], reference=True).pte
    (d / "base.pte").write_bytes(pte)
    np.save(d / "x.npy", inputs[0].numpy())
    nan = inputs[0].clone()
    nan[0, 0, 0, 0] = float("nan")
    np.save(d / "nan.npy", nan.numpy())
    (d / "nancal").mkdir()
    np.save(d / "nancal" / "0.npy", inputs[0].numpy())
    np.save(d / "nancal" / "1.npy", nan.numpy())
    (d / "corrupt.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    (d / "garbage.pt2").write_bytes(b"PK\x03\x04 not a zip archive at all")
    cxx = d / "failing-cxx"
    cxx.write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo fake 1.0; exit 0; }\n"
                   "echo 'fake.cpp:1:1: error: boom' >&2\nexit 1\n")
    cxx.chmod(0o755)

    pf = deserialize_pte_binary(pte)
    plan = pf.program.execution_plan[0]
    quantize = next(i for i in plan.chains[0].instructions if type(i.instr_args).__name__ == "KernelCall"
                    and "quantize_per_tensor" in plan.operators[i.instr_args.op_index].name)
    plan.values[quantize.instr_args.args[4]].val.int_val = 68719476863  # quant_max
    (d / "bad_qmax.pte").write_bytes(bytes(serialize_pte_binary(pf)))
    at = pte.find(b"aten::floor")
    (d / "bad_utf8.pte").write_bytes(pte[:at] + b"\xff" + pte[at + 1:])
    blob = bytes(deserialize_pte_binary(pte).program.backend_delegate_data[0].data)
    at = pte.find(blob) + len(blob) // 2  # the middle of the first payload's TFLite
    (d / "bad_payload.pte").write_bytes(pte[:at] + bytes([pte[at] ^ 0x01]) + pte[at + 1:])
    assert torch.is_tensor(inputs[0])


def markdown() -> str:
    """README's troubleshooting table."""
    lines = ["| what happened | exit code | message contains | what to do |", "|---|---|---|---|"]
    for case in CASES.values():
        fragment = case.fragment.replace("{d}/", "").replace("|", "\\|")
        lines.append(f"| {case.problem} | {case.code} | `{fragment}` | {case.fix} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
