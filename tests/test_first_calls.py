"""A process's first LM calls, started in many threads at once, must not race on lazy imports.

Each check runs in a fresh interpreter: the race exists only before the first import finished.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import warm

RACE = textwrap.dedent(
    """
    import json, sys, threading
    from courtroom.testing._fake_server import FakeServer
    from courtroom.models.cache import configure_cache
    from courtroom.models.lms import resolve_roles
    from courtroom.programs import build_program

    cache, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    configure_cache(cache)
    with FakeServer(latency=0.05) as srv:
        lms = resolve_roles("openai/fake", api_base=srv.url)
        prog = build_program("zero-shot", ["True", "False"], knobs={}, lms=lms)
        errors, gate = [], threading.Barrier(n)

        def call(i):
            gate.wait()
            # Cases 0 and 1 are in the cache (a cache hit unpickles LiteLLM types), the rest are sent.
            case = f"primed {i}" if i < 2 else f"{tag} {i}"
            try:
                prog(case=case)
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:200])

        threads = [threading.Thread(target=call, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    print(json.dumps(errors))
    """
)


def _python(code: str, *args: str, timeout: float = 120, warm_start: bool = False) -> str:
    start = warm.run if warm_start else subprocess.run
    proc = start([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


def test_first_concurrent_calls_all_succeed(tmp_path: Path) -> None:
    # Before the warm-up every one of 9 such processes lost calls (4 to 15 of 16); 3 tries catch it.
    cache = str(tmp_path / "cache")
    # The two cached cases are put there by a warm child: only the processes that race start cold.
    assert json.loads(_python(RACE, cache, "prime", "2", warm_start=True)) == []
    failures = {tag: json.loads(_python(RACE, cache, tag, "16")) for tag in ("a", "b", "c")}
    assert failures == {"a": [], "b": [], "c": []}


IMPORTS = textwrap.dedent(
    """
    import json, sys, threading
    import dspy
    from courtroom.testing._fake_server import FakeServer
    from courtroom.models.cache import configure_cache
    from courtroom.models.lms import resolve_roles
    from courtroom.programs import build_program

    configure_cache(sys.argv[1])
    with FakeServer() as srv:
        lms = resolve_roles("openai/fake", api_base=srv.url)
        prog = build_program("courtroom-llm", ["True", "False"], knobs={"k_precedents": 0}, lms=lms)
        # DSPy's native engine, as for a hosted model:
        native = dspy.LM("openai/fake", api_base=srv.url, api_key="sk-fake", cache=False)
        prog2 = build_program("zero-shot", ["True", "False"], knobs={}, lms=resolve_roles(native))
        before = set(sys.modules)
        worker = threading.Thread(target=lambda: [prog(case="x"), prog(case="x"), prog2(case="x")])
        worker.start()
        worker.join()
    print(json.dumps(sorted(m for m in set(sys.modules) - before if not m.startswith("courtroom."))))
    """
)


def test_building_role_models_leaves_nothing_to_import_on_the_lm_path(tmp_path: Path) -> None:
    # A first call (sent, then a cache hit) from a worker thread imports no module at all.
    assert json.loads(_python(IMPORTS, str(tmp_path / "cache"))) == []


def test_warm_up_sends_nothing_and_is_cheap_the_second_time() -> None:
    code = textwrap.dedent(
        """
        import socket, sys
        connects = []
        real = socket.socket.connect
        socket.socket.connect = lambda self, addr: (connects.append(addr), real(self, addr))[1]
        from courtroom.models import _warmup
        from courtroom.testing import FakeServer
        _warmup.warm_up()
        litellm_after_dspy_path = "litellm" in sys.modules
        lm = FakeServer().lm("openai/warm")  # the server engine: DSPy's native path, no LiteLLM
        _warmup.warm_up([lm])
        # Warmed once: a second warm-up runs no mocked call (a set check), whatever it is given.
        def refuse():
            raise AssertionError("warmed twice")
        _warmup._warm_dspy = _warmup._warm_litellm = refuse
        _warmup.warm_up([lm])
        print(len(connects), litellm_after_dspy_path)
        """
    )
    connects, litellm_imported = _python(code).split()
    assert int(connects) == 0
    assert litellm_imported == "False"  # DSPy's own path is warmed without importing LiteLLM
