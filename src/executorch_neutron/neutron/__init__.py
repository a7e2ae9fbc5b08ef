"""The Neutron back end: what turns a partition's int8 TFLite (from the shared front end: quantizer/, passes/,
ops/, convert/, tflite/) into the payload NXP's device runtime reads.

- `backend.py`: `NeutronBackend.preprocess` (glue); its class name is the delegate id.
- `npu/`: the NPU compile step: eIQ Neutron SDK adapter (child process), NeutronGraph extraction, profiling map
  from the converter's console, and the host-reference path when the SDK is absent.
- The delegate blob it writes, `header | microcode | weights | kernels`, is `core/payload.py`: the same header and
  host-reference form carry every back end's reference TFLite to the host runtime.
- `constraints.py` (numbers in `limits.py`): Neutron's hardware and SDK limits as registry constraints, added by
  `register()` (backends.register_limits), and the constraint profiles (`documented` / `sdk-current`), Neutron's
  operator tables, selected by the compile spec.

Its siblings in the layer list (ARCHITECTURE.md) are `neutron.npu`, `neutron.backend` and `neutron.constraints`;
this file imports none, so importing the package neither loads the compile step nor changes the registry.
"""
