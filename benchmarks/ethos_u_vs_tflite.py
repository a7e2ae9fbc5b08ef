"""Ethos-U: our partitions against the NHWC TFLite path a user could take instead, by Vela's estimate.

    .venv/bin/python benchmarks/ethos_u_vs_tflite.py [--models ...] [--targets imx93 ethos-u55-128 ethos-u85-256]
        [--tf-python /work/venv-tf/bin/python]

Per MLPerf Tiny model (examples/cifarnet.py, ds_cnn.py, vww_mobilenet.py and zoo.anomaly_autoencoder; random
weights, synthetic calibration) and Ethos-U target, Vela's cycles, SRAM and off-chip (flash/DRAM) bytes of:
(a) our partition TFLite lowered from the contiguous model (NCHW I/O: TRANSPOSE ops at the boundary), and the
share of the cycles Vela gives those transposes; (a') the same model kept channels-last
(`model.to(memory_format=torch.channels_last)`, channels-last inputs); (b) an independent NHWC int8 TFLite of the
same network: the model rebuilt in Keras with PyTorch's float weights (batch norm folded) and converted by
TensorFlow's TFLiteConverter, full-integer int8 with the same calibration batches as representative dataset
(benchmarks/_tf_reference.py; TensorFlow runs in a separate venv given by --tf-python, default /work/venv-tf; no
venv: the (b) column says so and is left empty). Its scales are TensorFlow's min/max, close to but not ours.
Each TFLite goes through Vela with the target's flags (`vela_call.compile_tflite`). `--write-docs` puts the table
on docs/ethos_u_vs_tflite.md. Prints figures, never asserts.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

MODELS = ("cifarnet", "ds_cnn", "vww_mobilenet", "anomaly_autoencoder")
TARGETS = ("imx93", "ethos-u55-128", "ethos-u85-256")
TF_PYTHON = "/work/venv-tf/bin/python"


def _model(name: str):
    from executorch_neutron import zoo
    from executorch_neutron.loading import load_model

    if name in zoo.MODELS:
        return zoo.MODELS[name]()
    return load_model(f"{ROOT}/examples/{name}.py:factory")[:2]


def _lowered(model, inputs, target: str, channels_last: bool, out_dir: Path):
    """The report of one lowering."""
    from executorch_neutron import lower, zoo

    calib = [inputs] + zoo.calibration(inputs, 4)
    if channels_last:
        model = copy.deepcopy(model).to(memory_format=torch.channels_last)
        fmt = (lambda t: t.to(memory_format=torch.channels_last) if t.dim() == 4 else t)  # noqa: E731
        inputs, calib = tuple(map(fmt, inputs)), [tuple(map(fmt, s)) for s in calib]
    return lower(copy.deepcopy(model), inputs, calib, target=target, intermediates_dir=out_dir).report


def _figures(report) -> dict:
    est = report.vela_estimate
    layers = [la for p in report.partitions if p.vela for la in p.vela["estimate"]["layers"]]
    transpose = sum(la["cycles"] for la in layers if la["op"] == "Transpose")
    return {"partitions": len(report.partitions), "cpu": len(report.rejections), "cycles": est["cycles"],
            "transpose": transpose, "sram": est["sram_bytes"], "off_chip": est["off_chip_bytes"]}


def _vela(tflite: bytes, target: str, name: str) -> dict:
    from executorch_neutron.ethos_u.vela_call import compile_tflite
    from executorch_neutron.target import get_target

    e = compile_tflite(tflite, list(get_target(target).vela_flags), name).estimate
    return {"cycles": e.cycles, "sram": e.sram_bytes, "off_chip": e.off_chip_bytes}


def tf_reference(name: str, python: str) -> bytes:
    """(b): TensorFlow's int8 TFLite of the model, from the same weights and calibration batches as ours."""
    import _tf_reference
    from executorch_neutron import zoo

    model, inputs = _model(name)
    return _tf_reference.build(model, [inputs] + zoo.calibration(inputs, 4), python)


def measure(name: str, target: str, reference: bytes | None) -> dict:
    model, inputs = _model(name)
    with tempfile.TemporaryDirectory() as tmp:
        plain = _lowered(model, inputs, target, False, Path(tmp) / "a")
        cl = _lowered(model, inputs, target, True, Path(tmp) / "cl")
    return {"a": _figures(plain), "cl": _figures(cl), "b": None if reference is None else _vela(reference, target, name)}


def _share(f: dict) -> str:
    return f"{f['transpose']:,} ({100 * f['transpose'] / max(f['cycles'], 1):.1f}%)"


def main(argv=None) -> int:
    import logging

    import _docs

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=list(MODELS))
    p.add_argument("--targets", nargs="+", default=list(TARGETS))
    p.add_argument("--tf-python", default=TF_PYTHON,
                   help="a Python with tensorflow for (b) (never the project's venv); missing: (b) is skipped")
    _docs.add_argument(p)
    args = p.parse_args(argv)
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)

    have_tf = os.access(args.tf_python, os.X_OK)
    if not have_tf:
        print(f"(b) skipped: no TensorFlow interpreter at {args.tf_python} (make one: python3 -m venv /work/venv-tf "
              f"&& /work/venv-tf/bin/pip install tensorflow-cpu, or pass --tf-python)", file=sys.stderr)
    rows = ["| model | target | (a) contiguous: partitions, cycles | (a) transposes | (a') channels-last: "
            "partitions, cycles | (a') transposes | (b) TensorFlow NHWC TFLite: cycles | (a) / (b) | (a') / (b) | "
            "SRAM (a) / (a') / (b) | off-chip (a) / (a') / (b) |", "|---|---|---|---:|---|---:|---:|---:|---:|---|---|"]
    print("\n".join(rows))
    for name in args.models:  # the rows are kept, not captured from stdout: Vela prints there while it compiles
        reference = tf_reference(name, args.tf_python) if have_tf else None
        for target in args.targets:
            r = measure(name, target, reference)
            a, cl, b = r["a"], r["cl"], r["b"]
            ratio = (lambda x: f"{x['cycles'] / b['cycles']:.3f}" if b else "n/a")  # noqa: E731
            bb = (lambda k: f"{b[k]:,}" if b else "n/a")  # noqa: E731
            rows.append(f"| {name} | {target} | {a['partitions']}, {a['cycles']:,} | {_share(a)} | "
                        f"{cl['partitions']}, {cl['cycles']:,} | {_share(cl)} | {bb('cycles')} | "
                        f"{ratio(a)} | {ratio(cl)} | {a['sram']:,} / {cl['sram']:,} / {bb('sram')} | "
                        f"{a['off_chip']:,} / {cl['off_chip']:,} / {bb('off_chip')} |")
            print(rows[-1], flush=True)
    if args.write_docs:
        _docs.write_figures("benchmarks/ethos_u_vs_tflite.py", "ethos_u_vs_tflite",
                            "Ethos-U: our partitions vs TensorFlow's NHWC TFLite through Vela",
                            _docs.as_markdown("\n".join(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
