"""The first requests failing alike (a wrong key, no server, an unknown model) stop a command at once."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from courtroom.models import _breaker
from courtroom.models._requests import WIRE


class _Refusing:
    """A loopback server that answers every chat request with one HTTP error, counting them."""

    def __init__(self, status: int, body: dict) -> None:
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests += 1
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> _Refusing:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


_WRONG_KEY = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
_NO_MODEL = {"error": {"message": "The model `gpt-9` does not exist", "code": "model_not_found"}}


@pytest.mark.parametrize(("status", "body", "says"), [(401, _WRONG_KEY, "API key"), (404, _NO_MODEL, "model name")])
def test_a_wrong_key_or_model_stops_after_the_first_requests(tmp_path, courtroom_cli, status, body, says):
    with _Refusing(status, body) as server:
        proc = courtroom_cli(
            "run", "jot", "--task", "boolean_expressions", "--limit", "30", "--concurrency", "4",
            "--lm", "openai/fake", "--api-base", server.url, cwd=tmp_path,
            env={"OPENAI_API_KEY": "sk-wrong", "COURTROOM_RETRY_WAIT": "0.01"},
        )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
    assert len(lines) == 1 and f"first {_breaker.TRIP_AFTER} requests" in lines[0] and says in lines[0], proc.stderr
    # Before, every one of the 30 cases sent its opening requests (60 or more): now the first few, plus
    # those already in flight when the breaker tripped.
    assert server.requests <= _breaker.TRIP_AFTER + 4, server.requests


def test_a_provider_host_that_cannot_be_reached_stops_in_seconds(tmp_path, courtroom_cli):
    # A key set and --api-base forgotten, on a machine without the provider's network: every request
    # fails to connect (through LiteLLM: a 500 "Connection error." caused by httpx's ConnectError).
    # Before, each of the 40 cases retried with back-off and the run failed after minutes. (".invalid"
    # never resolves; a loopback --api-base with nothing listening is refused earlier, by a probe.)
    before = WIRE.sent
    proc = courtroom_cli(
        "run", "zero-shot", "--task", "boolean_expressions", "--limit", "40", "--concurrency", "2",
        "--lm", "openai/gpt-4o-mini", cwd=tmp_path,
        env={"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "http://courtroom-test.invalid:8080/v1",
             "COURTROOM_RETRY_WAIT": "0.01"},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "--api-base" in proc.stderr and "connection error" in proc.stderr.lower(), proc.stderr
    assert WIRE.sent - before <= _breaker.TRIP_AFTER + 2  # 40 cases x 4 attempts before


def test_one_answer_disarms_it_and_other_failures_never_trip_it():
    from dspy.utils.exceptions import LMAuthError, LMServerError

    breaker = _breaker.Breaker()
    breaker.success()
    for _ in range(10):
        breaker.failure("m", LMAuthError("bad key", status=401))  # after an answer: an example's failure
    breaker.reset()
    for _ in range(10):
        breaker.failure("m", LMServerError("boom", status=500))  # a retry may fix a 500: never trips
    breaker.reset()
    breaker.failure("m", LMAuthError("bad key", status=401))
    breaker.failure("m", LMServerError("boom", status=500))  # not all alike: the server answers
    breaker.failure("m", LMAuthError("bad key", status=401))
    breaker.check()
    breaker.reset()
    breaker.failure("m", LMAuthError("bad key", status=401))
    breaker.failure("m", LMAuthError("bad key", status=401))
    with pytest.raises(_breaker.Unreachable, match="API key"):
        breaker.failure("m", LMAuthError("bad key", status=401))
    with pytest.raises(_breaker.Unreachable):
        breaker.check()  # every thread's next attempt stops too
