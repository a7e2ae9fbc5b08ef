"""Image classification: the CifarNet-style CNN bundled as `executorch_neutron.models.zoo.cifarnet` (input 1x3x32x32).

    python examples/cifarnet.py
    executorch-neutron compile examples/cifarnet.py:factory --random-calibration -o out/cifarnet.pte

Three 5x5 convolutions (32, 32, 64 channels) with ReLU and 2x2 max pooling, then a 10-way classifier.
"""

from executorch_neutron.models import zoo


def factory(seed: int = 0):
    """(module, example_inputs) for `executorch-neutron compile examples/cifarnet.py:factory`."""
    return zoo.cifarnet(seed)


if __name__ == "__main__":
    from _common import run_example

    raise SystemExit(run_example("cifarnet", factory))
