"""(b) for benchmarks/ethos_u_vs_tflite.py: the same network as a NHWC int8 TFLite built by TensorFlow's converter.

Two halves, run in two Python environments (the project's venv has no TensorFlow, and must not need it):

- `describe(model, calibration)` (project venv, PyTorch): the module's layers in forward order with batch norm
  folded into the preceding convolution or linear layer (float, eval mode), weights as NHWC/Keras arrays, and the
  calibration batches as NHWC. Only sequential networks of Conv2d / BatchNorm / ReLU / ReLU6 / MaxPool2d /
  AdaptiveAvgPool2d(1) / Linear (a flatten before the first Linear of a 4-D activation) are described: the
  MLPerf Tiny models the benchmark compares. A flatten of an NCHW map (CifarNet) becomes Keras' NHWC flatten with
  the next Linear's input columns permuted to match: the same function, as a Keras user would write it.
- `python benchmarks/_tf_reference.py SPEC.npz OUT.tflite` (a venv with `tensorflow`, e.g. .venv-tf in the checkout): builds
  the Keras model from the description (explicit ZeroPadding2D where PyTorch's padding is not Keras' "same"),
  checks its float output against PyTorch's (stored in the spec) and converts it with `tf.lite.TFLiteConverter`,
  full-integer int8 (int8 input and output) with the calibration batches as the representative dataset. Prints
  the float check; writes the TFLite.

`build(model, calibration, python)` runs both halves and returns the TFLite bytes. TensorFlow's calibration
(min/max over the representative dataset) gives scales close to, not equal to, our PT2E quantizer's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


# ---- project side (PyTorch) ---------------------------------------------------------------------------------------

def _fold(weight, bias, bn):
    """Fold an eval-mode batch norm into the preceding layer's (weight, bias); output channels on axis 0."""
    scale = bn.weight.detach() / (bn.running_var + bn.eps).sqrt()
    shape = (-1,) + (1,) * (weight.dim() - 1)
    b = bias if bias is not None else weight.new_zeros(weight.shape[0])
    return weight * scale.reshape(shape), (b - bn.running_mean) * scale + bn.bias.detach()


def describe(model, calibration: list) -> tuple[list[dict], dict[str, np.ndarray]]:
    """(layers, arrays): the network as the Keras side builds it; arrays hold weights, calibration and the check."""
    import torch
    from torch import nn

    leaves = [m for m in model.modules() if not list(m.children())]
    layers, arrays, rank, shape = [], {}, calibration[0][0].dim(), tuple(calibration[0][0].shape[1:])
    i = 0
    while i < len(leaves):
        m = leaves[i]
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            w, b = m.weight.detach(), (None if m.bias is None else m.bias.detach())
            if i + 1 < len(leaves) and isinstance(leaves[i + 1], (nn.BatchNorm1d, nn.BatchNorm2d)):
                w, b = _fold(w, b, leaves[i + 1])
                i += 1
            b = w.new_zeros(w.shape[0]) if b is None else b
            key = f"layer{len(layers)}"
            if isinstance(m, nn.Conv2d):
                depthwise = m.groups == m.in_channels == m.out_channels and m.groups > 1
                if m.groups != 1 and not depthwise:
                    raise ValueError(f"{m}: only plain and depthwise convolutions are described")
                # Keras: Conv2D kernel [kh, kw, in, out]; DepthwiseConv2D kernel [kh, kw, in, 1]
                arrays[key + "_w"] = w.permute(2, 3, 1, 0).numpy() if not depthwise else w.permute(2, 3, 0, 1).numpy()
                layers.append({"op": "depthwise" if depthwise else "conv", "kernel": list(m.kernel_size),
                               "stride": list(m.stride), "padding": list(m.padding), "in_hw": list(shape[1:]),
                               "filters": m.out_channels})
                h, wd = (((s + 2 * p - k) // st + 1) for s, p, k, st in
                         zip(shape[1:], m.padding, m.kernel_size, m.stride))
                shape = (m.out_channels, h, wd)
            else:
                if rank == 4:  # PyTorch flattens C, H, W; Keras flattens H, W, C: permute the input columns
                    c, h, wd = shape
                    w = w.reshape(-1, c, h, wd).permute(0, 2, 3, 1).reshape(w.shape[0], -1)
                    layers.append({"op": "flatten"})
                    rank, key = 2, f"layer{len(layers)}"
                arrays[key + "_w"] = w.t().numpy()
                layers.append({"op": "dense", "units": m.out_features})
                shape = (m.out_features,)
            arrays[key + "_b"] = b.numpy()
        elif isinstance(m, (nn.ReLU, nn.ReLU6)):
            layers.append({"op": "relu6" if isinstance(m, nn.ReLU6) else "relu"})
        elif isinstance(m, nn.MaxPool2d):
            k, s = (m.kernel_size, m.stride)
            layers.append({"op": "maxpool", "kernel": k, "stride": s})
            shape = (shape[0], shape[1] // s, shape[2] // s)
        elif isinstance(m, nn.AdaptiveAvgPool2d) and m.output_size in (1, (1, 1)):
            layers.append({"op": "gap"})  # Keras' pooled output is [N, C]: the flatten after it is a no-op
            shape, rank = (shape[0],), 2
        else:
            raise ValueError(f"{type(m).__name__} is not described; extend benchmarks/_tf_reference.py")
        i += 1
    nhwc = (lambda t: t.permute(0, 2, 3, 1) if t.dim() == 4 else t)  # noqa: E731
    arrays["calibration"] = np.stack([nhwc(batch[0]).numpy() for batch in calibration])
    with torch.no_grad():
        arrays["torch_output"] = np.stack([model(*batch).numpy() for batch in calibration])
    return layers, arrays


def build(model, calibration: list, python: str) -> bytes:
    """The TFLite TensorFlow makes of `model` (run in the interpreter `python`); raises with the converter's log."""
    layers, arrays = describe(model, calibration)
    with tempfile.TemporaryDirectory(prefix="tf_reference_") as tmp:
        spec, out = Path(tmp) / "spec.npz", Path(tmp) / "model.tflite"
        np.savez(spec, layers=np.array(json.dumps(layers)), **arrays)
        run = subprocess.run([python, __file__, str(spec), str(out)], capture_output=True, text=True)
        if run.returncode != 0 or not out.is_file():
            raise RuntimeError(f"TensorFlow's reference conversion failed ({python}):\n{run.stderr[-3000:]}")
        print(run.stdout.strip().splitlines()[-1], file=sys.stderr)  # the float check (TensorFlow logs before it)
        return out.read_bytes()


# ---- TensorFlow side ----------------------------------------------------------------------------------------------

def _keras_model(layers: list[dict], arrays, input_shape):
    import keras

    x = inp = keras.Input(shape=input_shape, batch_size=1)
    for i, la in enumerate(layers):
        key, op = f"layer{i}", la["op"]
        if op in ("conv", "depthwise"):
            (kh, kw), (sh, sw), (ph, pw), (h, w) = la["kernel"], la["stride"], la["padding"], la["in_hw"]
            # Keras "same" pads (total // 2) before and the rest after; use it where that is PyTorch's padding
            same = all(max((-(-s // st) - 1) * st + k - s, 0) == 2 * p
                       for s, k, st, p in ((h, kh, sh, ph), (w, kw, sw, pw)))
            if not same and (ph or pw):
                x = keras.layers.ZeroPadding2D(((ph, ph), (pw, pw)))(x)
            padding = "same" if same else "valid"
            if op == "conv":
                layer = keras.layers.Conv2D(la["filters"], (kh, kw), (sh, sw), padding=padding)
            else:
                layer = keras.layers.DepthwiseConv2D((kh, kw), (sh, sw), padding=padding)
            x = layer(x)
            layer.set_weights([arrays[key + "_w"], arrays[key + "_b"]])
        elif op == "dense":
            layer = keras.layers.Dense(la["units"])
            x = layer(x)
            layer.set_weights([arrays[key + "_w"], arrays[key + "_b"]])
        elif op == "relu":
            x = keras.layers.ReLU()(x)
        elif op == "relu6":
            x = keras.layers.ReLU(6.0)(x)
        elif op == "maxpool":
            x = keras.layers.MaxPooling2D(la["kernel"], la["stride"])(x)
        elif op == "gap":
            x = keras.layers.GlobalAveragePooling2D()(x)
        elif op == "flatten":
            x = keras.layers.Flatten()(x)
        else:
            raise ValueError(f"unknown layer {op!r}")
    return keras.Model(inp, x)


def convert(spec_path: str, out_path: str) -> None:
    import tensorflow as tf

    spec = np.load(spec_path)
    layers, calibration = json.loads(str(spec["layers"])), spec["calibration"]
    model = _keras_model(layers, spec, calibration.shape[2:])
    keras_out = np.stack([model(x, training=False).numpy() for x in calibration])
    diff = float(np.abs(keras_out - spec["torch_output"]).max())
    scale = float(np.abs(spec["torch_output"]).max())
    if diff > 1e-3 * max(scale, 1.0):
        raise SystemExit(f"the Keras model is not PyTorch's network: float outputs differ by {diff} (max |y| "
                         f"{scale}); fix benchmarks/_tf_reference.py")

    def representative():
        for x in calibration:
            yield [x.astype(np.float32)]

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    Path(out_path).write_bytes(converter.convert())
    print(f"TensorFlow {tf.__version__}: Keras float output within {diff:.2e} of PyTorch's (max |y| {scale:.3g})")


if __name__ == "__main__":
    convert(sys.argv[1], sys.argv[2])
