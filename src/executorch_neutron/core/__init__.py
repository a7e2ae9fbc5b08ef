"""Small shared helpers every layer may use: reading an ExportedProgram the same way everywhere (`exported`),
quantize/dequantize nodes (`qdq`), one-line messages (`messages`), progress events (`progress`), atomic file
writes (`atomic`), silencing noisy imports (`_quiet`), the debug handle map shape (`debug_handles`), the
delegate blob format every host run reads (`payload`) and names for `torch.return_types` (`return_types`). Nothing here knows a back end or a stage above it."""
