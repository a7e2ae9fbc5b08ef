"""The Neutron back end: what turns a partition's int8 TFLite (from the shared front end: quantizer/, passes/,
ops/, convert/, tflite/) into the payload NXP's device runtime reads.

- `backend.py`: `NeutronBackend.preprocess` (glue); its class name is the delegate id.
- `npu/`: the NPU compile step: eIQ Neutron SDK adapter (child process), NeutronGraph extraction, profiling map
  from the converter's console, and the host-reference path when the SDK is absent.
- The delegate blob it writes, `header | microcode | weights | kernels`, is `core/payload.py`: the same header and
  host-reference form carry every back end's reference TFLite to the host runtime.

The constraint profiles (`documented` / `sdk-current`) are tags on the operator registry's constraints (ops/)
selected by the compile spec. Its siblings in the layer list (ARCHITECTURE.md) are `neutron.npu` and
`neutron.backend`; this file imports neither, so importing the package does not load the compile step.
"""
