"""Ethos-U: our partitions against the NHWC TFLite path a user could take instead, by Vela's estimate.

    .venv/bin/python benchmarks/ethos_u_vs_tflite.py [--models ...] [--targets imx93 ethos-u55-128 ethos-u85-256]

Per MLPerf Tiny model (examples/cifarnet.py, ds_cnn.py, vww_mobilenet.py and zoo.anomaly_autoencoder; random
weights, synthetic calibration) and Ethos-U target, Vela's cycles, SRAM and off-chip (flash/DRAM) bytes of:
(a) our partition TFLite lowered from the contiguous model (NCHW I/O: TRANSPOSE ops at the boundary), and the
share of the cycles Vela gives those transposes; (a') the same model kept channels-last
(`model.to(memory_format=torch.channels_last)`, channels-last inputs); (b) a NHWC int8 TFLite of the same
network with the same scales, built by our converter from the channels-last graph as one whole-model TFLite (the
TFLite of (a') when that is one partition) and compiled by Vela alone with the same flags
(`vela_call.compile_tflite`), outside the lowering. `--write-docs` puts the table on docs/ethos_u_vs_tflite.md.
Prints figures, never asserts.
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

MODELS = ("cifarnet", "ds_cnn", "vww_mobilenet", "anomaly_autoencoder")
TARGETS = ("imx93", "ethos-u55-128", "ethos-u85-256")


def _model(name: str):
    from executorch_neutron import zoo
    from executorch_neutron.loading import load_model

    if name in zoo.MODELS:
        return zoo.MODELS[name]()
    return load_model(f"{ROOT}/examples/{name}.py:factory")[:2]


def _lowered(model, inputs, target: str, channels_last: bool, out_dir: Path):
    """(report, the partition TFLites) of one lowering."""
    from executorch_neutron import lower, zoo

    calib = [inputs] + zoo.calibration(inputs, 4)
    if channels_last:
        model = copy.deepcopy(model).to(memory_format=torch.channels_last)
        fmt = (lambda t: t.to(memory_format=torch.channels_last) if t.dim() == 4 else t)  # noqa: E731
        inputs, calib = tuple(map(fmt, inputs)), [tuple(map(fmt, s)) for s in calib]
    result = lower(copy.deepcopy(model), inputs, calib, target=target, intermediates_dir=out_dir)
    return result.report, [(out_dir / f"{p.tag}.tflite").read_bytes() for p in result.report.partitions]


def _figures(report) -> dict:
    est = report.vela_estimate
    layers = [la for p in report.partitions if p.vela for la in p.vela["estimate"]["layers"]]
    transpose = sum(la["cycles"] for la in layers if la["op"] == "Transpose")
    return {"partitions": len(report.partitions), "cpu": len(report.rejections), "cycles": est["cycles"],
            "transpose": transpose, "sram": est["sram_bytes"], "off_chip": est["off_chip_bytes"]}


def measure(name: str, target: str) -> dict:
    from executorch_neutron.ethos_u.vela_call import compile_tflite
    from executorch_neutron.target import get_target

    model, inputs = _model(name)
    with tempfile.TemporaryDirectory() as tmp:
        plain, _ = _lowered(model, inputs, target, False, Path(tmp) / "a")
        cl, cl_tflites = _lowered(model, inputs, target, True, Path(tmp) / "cl")
    # (b): the whole network as one NHWC TFLite (the channels-last lowering's, when it is one partition) through Vela
    whole = cl_tflites[0] if len(cl_tflites) == 1 else None
    b = None
    if whole is not None:
        e = compile_tflite(whole, list(cl.vela_flags or get_target(target).vela_flags), name).estimate
        b = {"cycles": e.cycles, "sram": e.sram_bytes, "off_chip": e.off_chip_bytes}
    return {"a": _figures(plain), "cl": _figures(cl), "b": b}


def _share(f: dict) -> str:
    return f"{f['transpose']:,} ({100 * f['transpose'] / max(f['cycles'], 1):.1f}%)"


def main(argv=None) -> int:
    import logging

    import _docs

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=list(MODELS))
    p.add_argument("--targets", nargs="+", default=list(TARGETS))
    _docs.add_argument(p)
    args = p.parse_args(argv)
    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)

    rows = ["| model | target | (a) contiguous: partitions, cycles | (a) transposes | (a') channels-last: "
            "partitions, cycles | (a') transposes | (b) NHWC TFLite: cycles | (a) / (b) | (a') / (b) | "
            "SRAM (a) / (a') / (b) | off-chip (a) / (a') / (b) |", "|---|---|---|---:|---|---:|---:|---:|---:|---|---|"]
    print("\n".join(rows))
    for name in args.models:  # the rows are kept, not captured from stdout: Vela prints there while it compiles
        for target in args.targets:
            r = measure(name, target)
            a, cl, b = r["a"], r["cl"], r["b"] or {"cycles": 0, "sram": 0, "off_chip": 0}
            rows.append(f"| {name} | {target} | {a['partitions']}, {a['cycles']:,} | {_share(a)} | "
                        f"{cl['partitions']}, {cl['cycles']:,} | {_share(cl)} | {b['cycles']:,} | "
                        f"{a['cycles'] / max(b['cycles'], 1):.3f} | {cl['cycles'] / max(b['cycles'], 1):.3f} | "
                        f"{a['sram']:,} / {cl['sram']:,} / {b['sram']:,} | "
                        f"{a['off_chip']:,} / {cl['off_chip']:,} / {b['off_chip']:,} |")
            print(rows[-1], flush=True)
    if args.write_docs:
        _docs.write_figures("benchmarks/ethos_u_vs_tflite.py", "ethos_u_vs_tflite",
                            "Ethos-U: our partitions vs a NHWC TFLite through Vela",
                            _docs.as_markdown("\n".join(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
