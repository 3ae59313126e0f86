"""The embedded local model: SmolLM2-135M served by llama.cpp on loopback (SPEC §9)."""

from courtroom.local._server import LocalServer, find_weights, local_lm, shared_server

__all__ = ["LocalServer", "find_weights", "local_lm", "shared_server"]
