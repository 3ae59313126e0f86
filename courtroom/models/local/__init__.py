"""The embedded local model: SmolLM2-135M served by llama.cpp on loopback (SPEC §9)."""

from courtroom.models.local._lm import LlamaCppLM, local_lm
from courtroom.models.local._server import LocalServer, find_weights, shared_server

__all__ = ["LlamaCppLM", "LocalServer", "find_weights", "local_lm", "shared_server"]
