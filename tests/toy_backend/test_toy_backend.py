"""The back-end seam: a third back end, written outside src/ (tests/toy_backend), joins through the public plugin
API alone, and every shared layer works on its .pte: lower(), the report (text, Markdown, HTML, JSON against the
schema), `inspect_pte`, `compare` and the host runtime. The host run is held against LiteRT running the
partition's TFLite and against PyTorch's quantized model (within 1 output step)."""

from __future__ import annotations

import re
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import torch
from harness import assert_within_steps, io_quant, model_output_qparams, quantize_np, run_tflite
from toy_backend import KIND, MAGIC, TARGET, install

from executorch_neutron import backends, lower
from executorch_neutron.core.payload import unpack
from executorch_neutron.numerics import compare
from executorch_neutron.pte import inspect_pte
from executorch_neutron.report import load_schema
from executorch_neutron.runtime import run
from executorch_neutron.models.zoo import calibration

SRC = Path(__file__).resolve().parents[2] / "src" / "executorch_neutron"


class ConvRelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


@pytest.fixture(scope="module")
def lowered():
    install()
    torch.manual_seed(0)
    model = ConvRelu().eval()
    inputs = (torch.randn(1, 3, 12, 10),)
    return model, inputs, lower(model, inputs, [inputs] + calibration(inputs, 4), target=TARGET.name)


def test_the_toy_lowers_conv_relu_into_one_partition_of_its_own(lowered):
    _, _, result = lowered
    report = result.report
    assert [p.tag for p in report.partitions] == ["toy_0"] and not report.rejections, str(report)
    assert report.partitions[0].blob.startswith(MAGIC) and report.partitions[0].kind == "toy-reference"
    assert report.npu == "Toy" and report.backend.kind == KIND


def test_every_report_format_renders_the_toys_partition(lowered):
    _, _, result = lowered
    report = result.report
    text, md, html, data = str(report), report.to_markdown(), report.to_html(), report.to_dict()
    jsonschema.validate(data, load_schema())
    assert text.startswith("Toy delegation report (target toy-npu, the toy's limits")
    assert "on the Toy NPU (test double) in 1 partition(s)" in text and "# Toy delegation report" in md
    assert "toy_0" in html and "Toy delegation report" in html
    assert data["partitions"][0]["payload"]["kind"] == "toy-reference" and "estimate" not in data
    assert report.memory is not None and report.memory.blocks  # the memory section reads the toy's .pte too


def test_inspect_pte_shows_the_toys_delegate(lowered):
    _, _, result = lowered
    summary = inspect_pte(result.pte)
    (d,) = summary.delegates
    assert d.backend_id == "ToyBackend" and d.kind == "toy-reference" and d.error is None
    assert d.tflite_ops == {"CONV_2D": 1, "TRANSPOSE": 2} and d.compile_specs["target"] == TARGET.name
    assert "payload toy-reference: 1 input(s), 1 output(s)" in str(summary)


def test_the_host_runtime_runs_the_toys_pte_as_litert_and_pytorch_compute_it(lowered):
    model, inputs, result = lowered
    (out,) = run(result.pte, inputs)
    tflite = unpack(result.report.partitions[0].blob[len(MAGIC):]).tflite
    (scale, zp), = model_output_qparams(result.quantized_model)
    (in_s, in_z), = io_quant(tflite)[0]
    x = quantize_np(inputs[0].numpy(), in_s, in_z)
    (litert,) = run_tflite(tflite, [x])  # the partition takes NCHW and transposes inside (format flags 0)
    ours = quantize_np(out.numpy(), scale, zp)
    assert np.array_equal(ours, litert), "the host run is the partition's TFLite in LiteRT"
    with torch.no_grad():
        reference = quantize_np(result.quantized_model(*inputs).numpy(), scale, zp)
    assert_within_steps(ours, reference, 1, scale)


def test_compare_runs_the_toys_pte(lowered):
    model, inputs, result = lowered
    cmp = compare(model, result=result, samples=[inputs] + calibration(inputs, 2))
    (part,) = cmp.partitions
    assert part.note == "" and part.sqnr_db is not None and part.max_steps <= 1, str(cmp)
    assert part.ops, "per-op comparison of the toy's partition against PyTorch's quantized model"


def test_a_blob_no_back_end_claims_is_an_error():
    install()
    with pytest.raises(backends.UnknownPayloadError, match="recognised by no registered back end"):
        backends.for_blob(b"NOTOURS!" + bytes(64))


def test_nothing_in_src_names_the_toy():
    named = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if re.search(r"\btoy\b", p.read_text(), re.I)]
    assert not named, f"src/ knows the test-only back end: {named}"
