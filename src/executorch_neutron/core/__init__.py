"""Small shared helpers every layer may use: reading an ExportedProgram the same way everywhere (`exported`),
quantize/dequantize nodes (`qdq`), one-line messages (`messages`), progress events (`progress`), atomic file
writes (`atomic`) and silencing noisy imports (`_quiet`). Nothing here knows a back end or a stage above it."""
