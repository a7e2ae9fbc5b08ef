"""User tensors to LOAD_INPUT bytes and RESULT bytes back, against numpy's own transposes and byte order (the
documented layout: the program's dtype, its dim order in memory)."""

import numpy as np
import pytest
import torch

from executorch_neutron.board.protocol import TensorSpec
from executorch_neutron.board.tensors import TensorMismatch, from_board, to_board

pytestmark = pytest.mark.fast

X = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5) / 7


def test_float_input_in_channels_last_dim_order():
    spec = TensorSpec(6, (2, 3, 4, 5), (0, 2, 3, 1), X.numel() * 4)
    assert to_board(X, spec, 0) == np.ascontiguousarray(X.numpy().transpose(0, 2, 3, 1)).astype("<f4").tobytes()


def test_contiguous_float_input():
    assert to_board(X, TensorSpec(6, (2, 3, 4, 5), (0, 1, 2, 3), X.numel() * 4), 0) == X.numpy().astype("<f4").tobytes()


def test_int8_input_takes_quantized_values_only():
    spec = TensorSpec(1, (1, 4), (0, 1), 4)
    assert to_board(torch.tensor([[-128.0, -1.0, 0.0, 127.0]]), spec, 0) == bytes([0x80, 0xFF, 0x00, 0x7F])
    for bad in (torch.tensor([[0.5, 0.0, 0.0, 0.0]]), torch.tensor([[128.0, 0.0, 0.0, 0.0]])):
        with pytest.raises(TensorMismatch, match="holds no quantization parameters"):
            to_board(bad, spec, 0)


def test_shape_mismatch_is_refused():
    with pytest.raises(TensorMismatch, match=r"input 0 is \[2, 3, 4, 5\] but the program on the board takes"):
        to_board(X, TensorSpec(6, (1, 3, 4, 5), (0, 1, 2, 3), 240), 0)


def test_channels_last_output_back_to_the_logical_shape():
    nhwc = np.ascontiguousarray(X.numpy().transpose(0, 2, 3, 1)).astype("<f4").tobytes()
    out = from_board(TensorSpec(6, (2, 3, 4, 5), None, len(nhwc)), nhwc, TensorSpec(6, (2, 3, 4, 5), (0, 2, 3, 1),
                                                                                      len(nhwc)), 0)
    assert out.shape == (2, 3, 4, 5) and torch.equal(out, X)
    assert out.is_contiguous(memory_format=torch.channels_last)  # as the host run returns a channels-last output


def test_int8_output():
    out = from_board(TensorSpec(1, (1, 3), None, 3), bytes([0x80, 0x00, 0x7F]), None, 0)
    assert out.dtype == torch.int8 and out.tolist() == [[-128, 0, 127]]


def test_short_output_is_refused():
    with pytest.raises(TensorMismatch, match="sent 3 bytes"):
        from_board(TensorSpec(6, (1, 3), None, 3), b"abc", None, 0)
