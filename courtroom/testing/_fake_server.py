"""An OpenAI-compatible chat server on loopback with fixed latency and injected faults (for tests)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from courtroom.testing._fake_batches import Batches
from courtroom.testing._fake_messages import MessageBatches, as_anthropic, chat_body

Responder = Callable[[str, dict[str, Any]], Mapping[str, Any] | str]
FAULTS = ("429", "500", "timeout", "garbage", "truncated")
BATCH_STEPS = ("upload", "create", "status", "download", "list", "cancel")
"""The calls of a batch's life (both batch APIs), by which ``batch_faults`` are injected."""
BATCH_FAULTS = ("500", "429", "drop", "lost", "hold")
"""A batch API call refused with 500 or 429, its connection closed unanswered, done and then answered
500 (``lost``: the batch is created, the file read, but the client sees an error), or done and its
answer held (``hold``: as :meth:`FakeServer.hold` holds every answer, until :meth:`FakeServer.release`;
``held`` is set meanwhile, so a test can kill the client between the provider's work and its answer)."""


def _schema_filler(prompt: str, schema: dict[str, Any]) -> Mapping[str, Any]:
    from courtroom.testing._fakes import answer_for_schema

    return answer_for_schema(schema, {}, "fake server reply")


def _usage(model: str, messages: list[dict[str, Any]], text: str) -> dict[str, int]:
    """Tokens as an OpenAI server counts them: every message of the prompt, by LiteLLM's tokenizer."""
    import litellm

    prompt = int(litellm.token_counter(model=model, messages=messages))
    completion = int(litellm.token_counter(model=model, text=text, count_response_tokens=True))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def fault_prompts(rate: float, kind: str = "garbage", *, seed: int = 0) -> Callable[[str, dict[str, Any]], str | None]:
    """A ``fault_for`` that faults a fixed share of prompts, on every attempt.

    Whether a prompt faults depends only on ``seed`` and the prompt text, never on the order the
    requests arrive in, so the same cases fail in every run (a random draw per request makes
    "some example failed" a matter of thread timing). Pass it as ``FakeServer(fault_for=...)``.
    """
    if kind not in FAULTS:
        raise ValueError(f"unknown fault kind {kind!r}; use {FAULTS}")

    def fault_for(prompt: str, schema: dict[str, Any]) -> str | None:
        digest = hashlib.sha256(f"{seed}|{prompt}".encode()).digest()
        return kind if int.from_bytes(digest[:8], "big") / 2**64 < rate else None

    return fault_for


class _Stamped:
    """The prefixes a provider's cache holds, as one request sees them: only those processed before it arrived.

    ``store`` maps a prefix to the tick its first request was processed at; a request that arrived
    at tick ``arrived`` reads a prefix stamped at or before it (a provider's cache serves a prefix
    only once a first request with it was processed, so requests sent at once all miss), and what
    it writes is stamped ``now``. It offers what :func:`courtroom.cost.prompt_cache.openai_hit` and
    :func:`~courtroom.cost.prompt_cache.anthropic_hit` use of a set: ``in`` and ``update``.
    """

    def __init__(self, store: dict[Any, int], arrived: int, now: int) -> None:
        self.store, self.arrived, self.now = store, arrived, now

    def __contains__(self, key: object) -> bool:
        tick = self.store.get(key)
        return tick is not None and tick <= self.arrived

    def update(self, keys: Any) -> None:
        for key in keys:
            self.store.setdefault(key, self.now)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default 5 drops bursts of connections (SYN retried after 1 s)


class FakeServer:
    """``/v1/chat/completions`` served from ``responder(prompt_text, schema)``.

    Args:
        responder: returns the JSON fields (or raw text) for the last user message and schema.
        latency: seconds each request takes.
        faults: rate per fault kind (``429``, ``500``, ``timeout``, ``garbage``, ``truncated``).
        hang: how long a ``timeout`` fault stalls before answering 504.
        retry_after: seconds the ``Retry-After`` header of a ``429`` asks the client to wait.
        seed: seeds the fault draws.
        fault_for: if given, picks the fault (or None) from the last user message and the schema
            (as ``responder`` gets them) instead of a random draw, to fault one role's call.
        turnaround: seconds a batch (``/v1/batches``) takes from creation to its answers.
        engine: if given, answers instead of ``responder``, as ``engine.reply(model, messages, schema)``:
            a fake's engine (``oracle_lm(...).engine_impl``, ``learnable_lm(...).engine_impl``), the
            role being the model name as sent (``--role judge=openai/judge`` is role ``judge``).
        expire: which batches (1: the first created) expire with only half their lines answered.
        batch_faults: step (:data:`BATCH_STEPS`) -> the faults (:data:`BATCH_FAULTS`) its next calls
            meet, in order, one per call (``{"status": ["500"]}``: the first status check answers
            500, later ones as usual). ``batch_calls`` counts the calls per step; ``held`` is set
            once a ``hold`` fault's call is done and its answer held.
        batch_end: how the n-th batch created ends (None: completed; else one of
            :data:`courtroom.testing._fake_batches.ENDINGS`), e.g. ``lambda n: "missing"``.
        prompt_cache: ``"openai"`` simulates OpenAI's automatic prompt cache: a request whose first
            1,024+ tokens (in 128-token blocks) an earlier request to the same model sent reports
            them as ``usage.prompt_tokens_details.cached_tokens``, as OpenAI does (``counts["cached_tokens"]``
            sums them). None (default): nothing is cached. Independently, an Anthropic request
            (``/v1/messages``) whose system message carries a ``cache_control`` mark is cached as
            Anthropic does: that prefix is written at its first request and read by later ones,
            from 1,024 tokens, reported as ``cache_creation_input_tokens`` and
            ``cache_read_input_tokens`` (``counts["cache_write_tokens"]``, ``["cache_read_tokens"]``).
            Both caches follow the providers' documented rule: a prefix is served only to a request
            that arrived after the first request with it was processed (requests sent at once all
            miss, and all write); the lines of one batch are processed together, so a batch reads
            what earlier batches wrote, never its own lines'. A ``cache_control`` mark with
            ``"ttl": "1h"`` (Anthropic's 1-hour cache) reports its writes as
            ``usage.cache_creation.ephemeral_1h_input_tokens`` (``counts["cache_write_1h_tokens"]``).
        report_usage: if given, rewrites each answer's usage before it is sent (a provider that
            reports a negative, missing or excessive count); ``bills`` keeps the true one.

    A chat body's ``n`` (OpenAI's: n samples of one prompt) is answered with n choices, each drawn as a
    request of its own would be; the prompt is billed once (``billed``), and ``served`` lists each
    answer.

    ``/v1/messages`` (Anthropic's Messages API) is answered by the same logic: the body is read as
    the chat body it stands for and the answer is sent back as Anthropic's ``message``.

    The server also speaks OpenAI's Files and Batches API (:mod:`courtroom.testing._fake_batches`,
    held in ``batches``) and Anthropic's Message Batches (:mod:`courtroom.testing._fake_messages`,
    held in ``messages``; their batches are listed in ``batches.created`` too): each batch line is
    answered as the same request sent live would be (responder, faults, ``served``, ``billed``),
    and counted in ``counts["batch_lines"]``.

    ``counts`` holds ``requests`` plus one count per outcome; ``served`` lists, for each request
    answered successfully, its whole message list as JSON (system prompt included, so two roles
    with the same inputs differ): a repeated entry means a successful call was sent twice.
    ``options`` lists each request's options (every body field but the messages), in arrival order.
    ``max_in_flight`` is the most requests that were open at once. ``models`` counts requests per
    model name as sent (``openai/judge-m`` arrives as ``judge-m``), and ``routed`` lists
    ``(model, prompt)`` for each successful answer (mixed-model panels are checked with them).
    ``billed`` lists ``(model, prompt_tokens, completion_tokens)`` for every answer with a body
    (garbage and cut-off answers included: a provider bills them): what the requests cost.
    ``bills`` holds the same answers with what a provider bills each for, as a dict: ``model``,
    ``prompt_tokens`` (every prompt token, cache reads and writes included), ``cache_read_tokens``,
    ``cache_write_tokens``, ``completion_tokens``, ``batch`` (a batch line) and ``api``
    (``openai`` or ``anthropic``: whose rule applies; a Messages body read as a chat body is
    ``anthropic``).
    ``sent`` counts every request answered (live or in a batch, faults included) by its message list.
    ``arrivals`` lists, per live request, the requests processed before it arrived (:meth:`tick`):
    requests that went out together share one value, so the distinct values count a run's waves.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency: float = 0.0,
        faults: Mapping[str, float] | None = None,
        hang: float = 3.0,
        retry_after: float = 0.0,
        seed: int = 0,
        fault_for: Callable[[str, dict[str, Any]], str | None] | None = None,
        turnaround: float = 0.0,
        expire: Collection[int] = (),
        engine: Any = None,
        batch_faults: Mapping[str, Sequence[str]] | None = None,
        batch_end: Callable[[int], str | None] | None = None,
        prompt_cache: str | None = None,
        report_usage: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        unknown = set(faults or {}) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; use {FAULTS}")
        if prompt_cache not in (None, "openai"):
            raise ValueError(f"unknown prompt_cache {prompt_cache!r}; use 'openai' or None")
        self.prompt_cache = prompt_cache
        self._prefixes: dict[str, dict[Any, int]] = {}
        self._tick = 0  # requests processed so far: a prefix is stamped with its first request's tick
        self.arrivals: list[int] = []
        self._arrival = threading.local()  # the tick the request this thread answers arrived at
        self.responder = responder or _schema_filler
        self.engine = engine
        self.latency = latency
        self.faults = dict(faults or {})
        self.hang = hang
        self.retry_after = retry_after
        self.billed: list[tuple[str, int, int]] = []
        self.bills: list[dict[str, Any]] = []
        self.report_usage = report_usage
        self.fault_for = fault_for
        self.counts: Counter[str] = Counter()
        self.models: Counter[str] = Counter()
        self.served: list[str] = []
        self.options: list[dict[str, Any]] = []
        self.routed: list[tuple[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.sent: Counter[str] = Counter()
        for step, kinds in (batch_faults or {}).items():
            if step not in BATCH_STEPS or set(kinds) - set(BATCH_FAULTS):
                raise ValueError(f"batch_faults: {step}: {list(kinds)}; steps {BATCH_STEPS}, faults {BATCH_FAULTS}")
        self.batch_faults = {step: list(kinds) for step, kinds in (batch_faults or {}).items()}
        self.batch_calls: Counter[str] = Counter()
        self.held = threading.Event()
        self.batches = Batches(self._batch_line, turnaround, expire, batch_end)
        self.batches.arriving = self.arriving
        self.messages = MessageBatches(self.batches, lambda: self.url)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._gate = threading.Event()
        self._gate.set()
        self._httpd = _Server(("127.0.0.1", 0), self._handler())
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL for ``api_base`` (ends in ``/v1``)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def lm(self, model: str = "openai/fake", *, timeout: float = 30.0, **kwargs: Any) -> Any:
        """A ``dspy.LM`` pointed at this server as ``--api-base`` points one (JSON schema sent OpenAI-style)."""
        from courtroom.models._server_engine import server_engines
        from courtroom.testing._fakes import FakeLM

        kwargs.setdefault("num_retries", 0)
        lm = FakeLM(model, **server_engines(self.url, "sk-fake", timeout), **kwargs)
        lm.api_base = self.url
        return lm

    def start(self) -> FakeServer:
        """Serve in a background thread."""
        # The tokenizer loads lazily on first use: load it here, so no handler thread imports it
        # while the client's threads make their first calls (the import race `_warmup` prevents).
        _usage("fake", [{"role": "user", "content": "warm-up"}], "warm-up")
        # Polled every 0.05 s for shutdown (the default 0.5 s made every stop() wait about 0.5 s).
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def hold(self) -> None:
        """Hold every answer, open or to come, until :meth:`release` (after its ``latency``).

        A test that must find requests in flight (to stop a run while it waits for them) holds
        them, so no answer can arrive at the wrong moment, however slow the machine.
        """
        self._gate.clear()

    def release(self) -> None:
        """Let the held answers go, and answer again as usual."""
        self._gate.set()

    def stop(self) -> None:
        """Stop serving and close the socket (held answers are let go)."""
        self._gate.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _draw_fault(self) -> str | None:
        with self._lock:
            x = self._rng.random()
        acc = 0.0
        for kind in FAULTS:
            acc += self.faults.get(kind, 0.0)
            if x < acc:
                return kind
        return None

    def _batch_fault(self, method: str, path: str) -> str | None:
        """Count one batch API call by its step; the fault it meets, if any."""
        parts = path.split("?")[0].rstrip("/").split("/")[2:]  # after '', 'v1'
        if parts[:1] == ["messages"]:
            parts = ["batches", *parts[2:]]  # Message Batches: the same steps
        if method == "POST":
            step = {"files": "upload", "batches": "create"}.get(parts[0]) if len(parts) == 1 else "cancel"
        elif parts == ["batches"]:
            step = "list"
        else:
            step = "status" if parts[0] == "batches" and len(parts) == 2 else "download"
        with self._lock:
            self.batch_calls[step or "?"] += 1
            queue = self.batch_faults.get(step or "", [])
            return queue.pop(0) if queue else None

    def tick(self) -> int:
        """Requests processed so far: a request that arrives now reads what they cached."""
        with self._lock:
            return self._tick

    @contextlib.contextmanager
    def arriving(self) -> Iterator[None]:
        """While inside, the requests this thread answers arrived now (:meth:`tick`).

        They read what was processed before, not one another's writes (a batch's lines, one live request).
        """
        before = getattr(self._arrival, "tick", None)
        self._arrival.tick = self.tick()
        try:
            yield
        finally:
            self._arrival.tick = before

    def _batch_line(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            self.counts["batch_lines"] += 1
            self.models[str(body.get("model"))] += 1
        return self.reply(body, batch=True)

    def _seen(self, name: str, stamp: tuple[int, int]) -> _Stamped:
        """The cache ``name`` as a request sees it (``stamp``: the ticks it arrived and was processed at)."""
        return _Stamped(self._prefixes.setdefault(name, {}), *stamp)

    def _cached_prefix(self, model: str, messages: Any, stamp: tuple[int, int]) -> int:
        """OpenAI's automatic prompt cache: the cached prefix of this request's tokens.

        The longest prefix, in 128-token blocks and from 1,024 tokens, that an earlier request to
        ``model`` sent and that was processed before this one arrived (cl100k tokens of the
        message list as JSON: the system message first, as sent).
        """
        from litellm.litellm_core_utils.default_encoding import encoding

        tokens = encoding.encode(json.dumps(messages), disallowed_special=())
        digest, ends, hit = hashlib.sha256(), [], 0
        with self._lock:
            seen = self._seen(model, stamp)
            for end in range(128, len(tokens) + 1, 128):
                digest.update(b"".join(t.to_bytes(4, "little") for t in tokens[end - 128 : end]))
                key = digest.copy().digest()
                ends.append(key)
                if end >= 1024 and key in seen:
                    hit = end
            seen.update(ends)
        return hit

    ANTHROPIC_MIN = 1024
    """Anthropic's minimum cacheable prefix (Claude Sonnet 4.5's; Haiku 4.5's is 4,096)."""

    def _anthropic_cache(
        self, model: str, messages: Any, prompt: int, marks: Any, stamp: tuple[int, int]
    ) -> tuple[int, int]:
        """Anthropic's cache at the request's breakpoints (``marks``: marked messages): (tokens read, written).

        Each prefix up to a mark is cached from :data:`ANTHROPIC_MIN` tokens; the longest one an
        earlier request to ``model`` cached before this one arrived is read, the rest of the
        longest cacheable one written
        (:func:`courtroom.cost.prompt_cache.anthropic_hit`, the dry run's and the price bench's rule).
        """
        from litellm.litellm_core_utils.default_encoding import encoding

        from courtroom.cost.prompt_cache import anthropic_hit

        contents = [str(m.get("content") or "") for m in messages]
        prefixes = []
        for i in sorted(int(i) for i in marks):
            size = min(prompt, len(encoding.encode("".join(contents[: i + 1]), disallowed_special=())))
            prefixes.append((model + "\0" + "\0".join(contents[: i + 1]), size))
        with self._lock:
            return anthropic_hit(prefixes, self._seen("anthropic", stamp), self.ANTHROPIC_MIN)

    def reply(self, body: Mapping[str, Any], *, batch: bool = False) -> tuple[int, dict[str, Any], dict[str, str]]:
        """The answer to one chat request ``body``: HTTP status, JSON body and headers.

        The chat endpoint and every line of a batch are answered here, so a batch line gets the
        same answer, faults and counts as the same request sent live. Its prompt caches read
        what was processed before it arrived (:meth:`arriving`; outside one: now).
        """
        arrived = getattr(self._arrival, "tick", None)
        with self._lock:
            self._tick += 1  # this request's writes are stamped with it
            stamp = (self._tick - 1 if arrived is None else arrived, self._tick)
        messages = body.get("messages") or [{}]
        prompt = str(messages[-1].get("content") or "")
        fmt = body.get("response_format") or {}
        schema = fmt.get("schema") or (fmt.get("json_schema") or {}).get("schema") or {}
        fault = self.fault_for(prompt, schema) if self.fault_for else self._draw_fault()
        with self._lock:
            self.counts[fault or "ok"] += 1
            self.sent[json.dumps(messages, sort_keys=True)] += 1
        if fault == "429":
            headers = {"retry-after": f"{self.retry_after:g}"}
            return 429, {"error": {"message": "rate limited", "type": "rate_limit"}}, headers
        if fault == "500":
            return 500, {"error": {"message": "injected server error"}}, {}
        if fault == "timeout":
            return 504, {"error": {"message": "injected timeout"}}, {}
        n = max(1, int(body.get("n") or 1))  # OpenAI's n: n samples of this prompt, the prompt billed once
        texts = []
        for _ in range(n):
            if self.engine is not None:
                answer = self.engine.reply(str(body.get("model")), messages, dict(schema))
            else:
                answer = self.responder(prompt, dict(schema))
            text = answer if isinstance(answer, str) else json.dumps(dict(answer))
            if fault == "garbage":
                text = "I refuse to answer in JSON. %%% <<>>"
            elif fault == "truncated":
                text = text[: max(1, len(text) // 2)]
            elif fault is None:
                with self._lock:
                    self.served.append(json.dumps(messages, sort_keys=True))
                    self.routed.append((str(body.get("model")), prompt))
            texts.append(text)
        usage: dict[str, Any] = dict(_usage(body.get("model", "fake"), messages, texts[0]))
        usage["completion_tokens"] = sum(_usage(body.get("model", "fake"), [], t)["completion_tokens"] for t in texts)
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if self.prompt_cache == "openai":
            cached = min(usage["prompt_tokens"], self._cached_prefix(str(body.get("model")), messages, stamp))
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
            with self._lock:
                self.counts["cached_tokens"] += cached
        if body.get("cache_marks"):
            marks = body["cache_marks"]
            model = str(body.get("model"))
            read, write = self._anthropic_cache(model, messages, usage["prompt_tokens"], marks, stamp)
            usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"] = read, write
            hour = body.get("cache_ttl") == "1h"
            usage["cache_creation"] = {"ephemeral_5m_input_tokens": 0 if hour else write,
                                       "ephemeral_1h_input_tokens": write if hour else 0}  # fmt: skip
            with self._lock:
                self.counts["cache_read_tokens"] += read
                self.counts["cache_write_tokens"] += write
                self.counts["cache_write_1h_tokens"] += write if hour else 0
        details = usage.get("prompt_tokens_details") or {}
        bill = {
            "model": str(body.get("model")),
            "prompt_tokens": usage["prompt_tokens"],
            "cache_read_tokens": usage.get("cache_read_input_tokens", details.get("cached_tokens", 0)),
            "cache_write_tokens": usage.get("cache_creation_input_tokens", 0),
            "cache_write_1h_tokens": (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0),
            "completion_tokens": usage["completion_tokens"],
            "batch": batch,
            "api": str(body.get("_api") or "openai"),
        }
        with self._lock:
            self.billed.append((str(body.get("model")), usage["prompt_tokens"], usage["completion_tokens"]))
            self.bills.append(bill)
            number = self.counts["requests"] + self.counts["batch_lines"]
        if self.report_usage is not None:
            usage = self.report_usage(usage)
        return (
            200,
            {
                "id": f"fake-{number}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [
                    {
                        "index": i,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "length" if fault == "truncated" else "stop",
                    }
                    for i, text in enumerate(texts)
                ],
                "usage": usage,
            },
            {},
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any, headers: Mapping[str, str] | str | None = None) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                kind = headers if isinstance(headers, str) else "application/json"
                headers = {} if isinstance(headers, str) else headers
                # No longer in flight once the answer is ready: a client reading it can send its next
                # request before this thread runs again, and must not count as two open requests.
                self._close_request()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout); nothing to answer

            def _batch_api(self, method: str, answer: Callable[[], Any]) -> None:
                fault = server._batch_fault(method, self.path)
                if fault == "drop":
                    self.close_connection = True  # closed with no answer: the client sees a broken connection
                    return
                if fault in ("500", "429"):
                    return self._send(int(fault), {"error": {"message": f"injected {fault}"}}, {})
                result = answer()
                if fault == "hold":  # done at the provider; the answer waits (a client killed meanwhile never sees it)
                    server.hold()
                    server.held.set()
                    server._gate.wait()
                if fault == "lost":
                    return self._send(500, {"error": {"message": "injected 500 after the work was done"}}, {})
                self._send(*result)

            def do_GET(self) -> None:
                if self.path.startswith("/v1/messages/batches"):
                    return self._batch_api("GET", lambda: server.messages.handle("GET", self.path, self.headers, b""))
                if self.path.startswith(("/v1/files", "/v1/batches")):
                    return self._batch_api("GET", lambda: server.batches.get(self.path))
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.startswith("/v1/messages/batches"):
                    answer = lambda: server.messages.handle("POST", self.path, self.headers, raw)  # noqa: E731
                    return self._batch_api("POST", answer)
                if self.path.startswith(("/v1/files", "/v1/batches")):
                    kind = self.headers.get("Content-Type", "")
                    return self._batch_api("POST", lambda: server.batches.post(self.path, kind, raw))
                body = json.loads(raw or b"{}")
                anthropic = self.path.startswith("/v1/messages")  # Anthropic's Messages API, live
                if anthropic:
                    body = chat_body(body)
                with server._lock:
                    server.counts["requests"] += 1
                    server.models[str(body.get("model"))] += 1
                    server.options.append({k: v for k, v in body.items() if k != "messages" and not k.startswith("_")})
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                self._open = True
                try:
                    with server.arriving():  # its prompt reads what was processed before it came
                        with server._lock:
                            server.arrivals.append(server._arrival.tick)
                        self._answer(body, anthropic)
                finally:
                    self._close_request()

            def _close_request(self) -> None:
                if getattr(self, "_open", False):
                    self._open = False
                    with server._lock:
                        server.in_flight -= 1

            def _answer(self, body: dict[str, Any], anthropic: bool) -> None:
                if server.latency:
                    time.sleep(server.latency)
                server._gate.wait()
                status, reply, headers = server.reply(body)
                if status == 504:
                    time.sleep(server.hang)
                self._send(status, as_anthropic(status, reply) if anthropic else reply, headers)

        return Handler
