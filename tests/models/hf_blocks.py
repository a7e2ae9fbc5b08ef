"""Hugging Face transformers models with random weights that say something: the logits-returning wrapper and the
re-initialization both tests/models/test_hf_transformers.py and benchmarks/_real_models.py use.

transformers initializes weights with std 0.02 and some classifiers and tokens with zeros. Through a dozen layers
that gives near-constant logits, or exactly zero ones: MobileViT's from a small config were 0.0 for every input
(activations 1e-2, 1e-12, 1e-24, 1e-36, then 0 from stage to stage), so every SQNR of them was inf and compared
nothing.
"""

from __future__ import annotations

import torch


class Logits(torch.nn.Module):
    """A transformers model returning its logits tensor (the models return a ModelOutput; ExecuTorch takes tensors)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *x):
        return self.model(*x).logits


def random_weights(model: torch.nn.Module) -> torch.nn.Module:
    """The model with PyTorch's default initialization of its linear and convolution layers and unit-normal tokens
    and position embeddings."""
    for module in model.modules():
        if isinstance(module, (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d)):
            module.reset_parameters()
    for name, p in model.named_parameters():
        if name.endswith(("_token", "position_embeddings")) and p.dim() >= 2:
            torch.nn.init.normal_(p)
    return model


def varied(outputs) -> bool:
    """Whether float outputs (a stack over samples) vary at all: an SQNR of constant outputs compares nothing."""
    return bool(torch.as_tensor(outputs).std() > 0)
