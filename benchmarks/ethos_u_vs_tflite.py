"""Ethos-U: our partitions against the NHWC TFLite path a user could take instead, by Vela's estimate.

    .venv/bin/python benchmarks/ethos_u_vs_tflite.py [--models ...] [--targets imx93 ethos-u55-128 ethos-u85-256]
        [--tf-python .venv-tf/bin/python]

Per MLPerf Tiny model (examples/cifarnet.py, ds_cnn.py, vww_mobilenet.py and zoo.anomaly_autoencoder; random
weights, synthetic calibration) and Ethos-U target, Vela's cycles, SRAM and off-chip (flash/DRAM) bytes of:
(a) our partition TFLite lowered from the contiguous model (NCHW I/O: TRANSPOSE ops at the boundary), and the
share of the cycles Vela gives those transposes; (a') the same model kept channels-last
(`model.to(memory_format=torch.channels_last)`, channels-last inputs); (b) an independent NHWC int8 TFLite of the
same network: the model rebuilt in Keras with PyTorch's float weights (batch norm folded) and converted by
TensorFlow's TFLiteConverter, full-integer int8 with the same calibration batches as representative dataset
(benchmarks/_tf_reference.py; TensorFlow runs in a separate venv given by --tf-python, default .venv-tf in the checkout; no
venv: the (b) column says so and is left empty). Its scales are TensorFlow's min/max, close to but not ours.
Each TFLite goes through Vela with the target's flags (`vela_call.compile_tflite`). `--write-docs` puts the table
on docs/ethos_u_vs_tflite.md. Prints figures, never asserts.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

MODELS = ("cifarnet", "ds_cnn", "vww_mobilenet", "anomaly_autoencoder")
TARGETS = ("imx93", "imx93:Shared_Sram", "ethos-u55-128", "ethos-u85-256")
TF_PYTHON = str(ROOT / ".venv-tf" / "bin" / "python")


def _model(name: str):
    from executorch_neutron.models import zoo
    from executorch_neutron.models.loading import load_model

    if name in zoo.MODELS:
        return zoo.MODELS[name]()
    return load_model(f"{ROOT}/examples/{name}.py:factory")[:2]


def _lowered(model, inputs, target: str, channels_last: bool, out_dir: Path, **options):
    """The report of one lowering (`options`: NeutronCompileSpec fields)."""
    from executorch_neutron import lower
    from executorch_neutron.models import zoo

    calib = [inputs] + zoo.calibration(inputs, 4)
    if channels_last:
        model = copy.deepcopy(model).to(memory_format=torch.channels_last)
        fmt = (lambda t: t.to(memory_format=torch.channels_last) if t.dim() == 4 else t)  # noqa: E731
        inputs, calib = tuple(map(fmt, inputs)), [tuple(map(fmt, s)) for s in calib]
    return lower(copy.deepcopy(model), inputs, calib, target=target, intermediates_dir=out_dir, **options).report


def _figures(report) -> dict:
    est = report.estimate
    layers = [la for p in report.partitions if p.estimate for la in p.estimate["layers"]]
    transpose = sum(la["cycles"] for la in layers if la["op"] == "Transpose")
    return {"partitions": len(report.partitions), "cpu": len(report.rejections), "cycles": est["cycles"],
            "transpose": transpose, "sram": est["sram_bytes"], "off_chip": est["off_chip_bytes"]}


def _cpu_transpose_bytes(report) -> int:
    """Bytes a CPU reads and writes to transpose the partitions' rank-4 int8 I/O (NCHW<->NHWC) itself."""
    from executorch_neutron.tflite.layout import NCHW_TO_NHWC, is_memory_preserving

    shapes = [s for p in report.partitions for s in (*p.input_shapes, *p.output_shapes)]
    return sum(2 * math.prod(s) for s in shapes if len(s) == 4 and not is_memory_preserving(s, NCHW_TO_NHWC))


def _vela(tflite: bytes, flags, name: str) -> dict:
    from executorch_neutron.ethos_u.vela_call import compile_tflite

    e = compile_tflite(tflite, list(flags), name).estimate
    return {"cycles": e.cycles, "sram": e.sram_bytes, "off_chip": e.off_chip_bytes}


def tf_reference(name: str, python: str) -> bytes:
    """(b): TensorFlow's int8 TFLite of the model, from the same weights and calibration batches as ours."""
    import _tf_reference
    from executorch_neutron.models import zoo

    model, inputs = _model(name)
    return _tf_reference.build(model, [inputs] + zoo.calibration(inputs, 4), python)


def measure(name: str, target: str, reference: bytes | None) -> dict:
    """Figures of (a), (a'), (b) and of (a) with the other transpose form; `target` may name a Vela memory mode
    after a colon (imx93:Shared_Sram)."""
    from executorch_neutron.compile_spec import NeutronCompileSpec

    target, _, memory_mode = target.partition(":")
    options = {"memory_mode": memory_mode} if memory_mode else {}
    default = NeutronCompileSpec(target=target, **options).target_info.transpose_form
    other = next(f for f in ("4d", "collapsed") if f != default)
    model, inputs = _model(name)
    with tempfile.TemporaryDirectory() as tmp:
        plain = _lowered(model, inputs, target, False, Path(tmp) / "a", **options)
        cl = _lowered(model, inputs, target, True, Path(tmp) / "cl", **options)
        cpu_bytes = _cpu_transpose_bytes(plain)
        alt = _lowered(model, inputs, target, False, Path(tmp) / "alt", transpose_form=other, **options) \
            if cpu_bytes else None
    forms = {default: _figures(plain), **({other: _figures(alt)} if alt else {})}
    return {"a": forms[default], "cl": _figures(cl), "forms": forms, "default": default, "cpu_bytes": cpu_bytes,
            "b": None if reference is None else _vela(reference, plain.vela_flags, name)}


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
        print(f"(b) skipped: no TensorFlow interpreter at {args.tf_python} (make one: python3 -m venv .venv-tf "
              f"&& .venv-tf/bin/pip install tensorflow-cpu, or pass --tf-python)", file=sys.stderr)
    rows = ["| model | target | (a) contiguous: partitions, cycles | (a) transposes | (a') channels-last: "
            "partitions, cycles | (a') transposes | (b) TensorFlow NHWC TFLite: cycles | (a) / (b) | (a') / (b) | "
            "SRAM (a) / (a') / (b) | off-chip (a) / (a') / (b) |", "|---|---|---|---:|---|---:|---:|---:|---:|---|---|"]
    places = ["| model | target | (i) in the partition, rank-4 TRANSPOSE (\"4d\"): cycles (transposes) | (i') in the "
              "partition, rank-3 (\"collapsed\"): cycles (transposes) | (ii) on the CPU: NPU cycles (= (a')), bytes "
              "the CPU moves | default |", "|---|---|---|---|---|---|"]
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
            if r["cpu_bytes"]:
                f4, fc = r["forms"]["4d"], r["forms"]["collapsed"]
                places.append(f"| {name} | {target} | {f4['cycles']:,} ({f4['transpose']:,}) | "
                              f"{fc['cycles']:,} ({fc['transpose']:,}) | {cl['cycles']:,}, {r['cpu_bytes']:,} B | "
                              f"{r['default']} |")
    print("\n".join(places))
    if args.write_docs:
        script = "benchmarks/ethos_u_vs_tflite.py"
        title = "Ethos-U: our partitions vs TensorFlow's NHWC TFLite through Vela"
        _docs.write_figures(script, "ethos_u_vs_tflite", title, _docs.as_markdown("\n".join(rows)))
        _docs.write_figures(script, "ethos_u_vs_tflite", title, _docs.as_markdown("\n".join(places)),
                            cmd=_docs.command(script) + "  # transpose placements")
    return 0


if __name__ == "__main__":
    sys.exit(main())
