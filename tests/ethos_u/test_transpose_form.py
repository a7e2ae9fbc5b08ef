"""`transpose_form`: how a contiguous model's NCHW<->NHWC transposes are written for Vela.

"collapsed" (the U55's default: Vela runs it in one pass where it splits the rank-4 TRANSPOSE in two) moves the
same bytes as "4d" (the default elsewhere). References: numpy's rank-4 transpose for the rank-3 form, LiteRT's
interpreter for the operators of the partition TFLite, PyTorch's quantized model (convert_pt2e) for the numbers,
ExecuTorch's `arm_vela.vela_compile` for the payload bytes.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import torch
from torch import nn

from executorch_neutron import lower
from executorch_neutron.compile_spec import NeutronCompileSpec
from executorch_neutron.runtime import run
from executorch_neutron.tflite.layout import NCHW_TO_NHWC, NHWC_TO_NCHW, collapsed_transpose
from executorch_neutron.models.zoo import calibration
from harness import assert_within_steps, model_output_qparams, quantize_np


@pytest.mark.fast
@pytest.mark.parametrize("perm", [NCHW_TO_NHWC, NHWC_TO_NCHW])
@pytest.mark.parametrize("shape", [(1, 3, 11, 7), (2, 5, 4, 6), (1, 1, 9, 2)])
def test_collapsed_transpose_moves_what_the_rank4_transpose_moves(shape, perm):
    x = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    shape3, perm3 = collapsed_transpose(shape, perm)
    expected = np.transpose(x, perm)
    np.testing.assert_array_equal(np.transpose(x.reshape(shape3), perm3).reshape(expected.shape), expected)


@pytest.mark.fast
def test_other_permutations_are_not_collapsed():
    assert collapsed_transpose((1, 3, 4, 5), (0, 1, 3, 2)) is None
    assert collapsed_transpose((3, 4, 5), (0, 2, 1)) is None


@pytest.mark.fast
def test_defaults_per_target_and_refusals():
    assert NeutronCompileSpec(target="ethos-u55-128").target_info.transpose_form == "collapsed"
    assert NeutronCompileSpec(target="ethos-u85-256").target_info.transpose_form == "4d"
    assert NeutronCompileSpec(target="imx93", transpose_form="collapsed").target_info.transpose_form == "collapsed"
    with pytest.raises(ValueError, match="unknown transpose_form 'nchw'"):
        NeutronCompileSpec(target="imx93", transpose_form="nchw")
    with pytest.raises(ValueError, match="Ethos-U targets only"):
        NeutronCompileSpec(target="imxrt700", transpose_form="4d")


def _transpose_ranks(tflite: bytes) -> list[int]:
    """The input rank of every TRANSPOSE, as LiteRT lists the operators."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_content=tflite)
    shapes = {t["index"]: t["shape"] for t in it.get_tensor_details()}
    return [len(shapes[op["inputs"][0]]) for op in it._get_ops_details() if op["op_name"] == "TRANSPOSE"]  # noqa: SLF001


def test_both_forms_give_the_same_numbers_and_arm_vela_payload(tmp_path):
    from executorch.backends.arm.arm_vela import vela_compile

    torch.manual_seed(0)  # 4-D in and out: a transpose at each end
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 5, 1)).eval()
    inputs = (torch.randn(1, 3, 11, 7),)
    calib = [inputs] + calibration(inputs, 4)
    outputs = {}
    for form in ("collapsed", "4d"):
        result = lower(model, inputs, calib, target="ethos-u55-128", transpose_form=form,
                       intermediates_dir=tmp_path / form)
        part = result.report.partitions[0]
        assert len(result.report.partitions) == 1 and not result.report.rejections, str(result.report)
        tflite = (tmp_path / form / f"{part.tag}.tflite").read_bytes()
        assert _transpose_ranks(tflite) == ([3, 3] if form == "collapsed" else [4, 4])
        with contextlib.redirect_stdout(io.StringIO()):
            assert part.blob == vela_compile(tflite, list(result.report.partitions[0].backend["vela_flags"])).processed_bytes
        host = run(result.pte, inputs)[0].numpy()
        with torch.no_grad():
            ref = result.quantized_model(*inputs).numpy()
        scale, zp = model_output_qparams(result.quantized_model)[0]
        outputs[form] = quantize_np(host, scale, zp)
        assert_within_steps(outputs[form], quantize_np(ref, scale, zp), 1, scale)
    np.testing.assert_array_equal(outputs["collapsed"], outputs["4d"])


@pytest.mark.fast
def test_cli_passes_transpose_form_and_leaves_the_default_to_the_target():
    from executorch_neutron.cli import _spec_options, build_parser

    def options(*extra):
        return _spec_options(build_parser().parse_args(["compile", "m.py:f", "-o", "m.pte", "--target", "ethos-u55-128",
                                                        *extra]))

    assert options()["transpose_form"] is None
    assert NeutronCompileSpec(target="ethos-u55-128", **options("--transpose-form", "4d")).target_info.transpose_form \
        == "4d"
