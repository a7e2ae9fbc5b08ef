"""The Neutron back end: what turns a partition's int8 TFLite (from the shared front end: quantizer/, passes/,
ops/, convert/, tflite/) into the payload NXP's device runtime reads.

- `backend.py`: `NeutronBackend.preprocess` (glue); its class name is the delegate id.
- `npu/`: the NPU compile step: eIQ Neutron SDK adapter (child process), NeutronGraph extraction, profiling map
  from the converter's console, and the host-reference path when the SDK is absent.
- `payload/`: the delegate blob format `header | microcode | weights | kernels` (also the host-reference form
  the host runtime runs in LiteRT, which the Ethos-U back end reuses for its reference TFLite).

The constraint profiles (`documented` / `sdk-current`) are tags on the operator registry's constraints (ops/)
selected by the compile spec. Its siblings in the layer list (ARCHITECTURE.md) are `neutron.payload`,
`neutron.npu` and `neutron.backend`; this file imports none of them, so importing the blob format does not load
the compile step.
"""
