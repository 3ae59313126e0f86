"""The progress display the long commands (and their Python functions) draw on stderr.

On a terminal it is a rich bar per task, counting examples *and* LM calls, with an ETA, so a
slow multi-call example does not sit at ``0/3``. Elsewhere (CI, ``nohup``, a notebook cell,
a pipe) it prints plain lines, never a redrawn bar: one per task when it enters a new stage
(a compile's phase, a study's trial), one every ``every`` seconds while its counts move (and
every 30 s for the running task even when they do not), and a last one at the end.
With ``enabled=False`` it draws nothing.

LM calls are counted for the length of the display by a listener of the request bound that
every model courtroom calls carries (:func:`courtroom.models._concurrency.counting_calls`), in every
thread. Calls that prepare a
program on the train split (:func:`courtroom.models.usage.preparing`) are shown apart from the
examples' calls, as the run summary shows them.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from dspy.utils.callback import BaseCallback
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["CallCounter", "ProgressDisplay", "Tracker"]


class CallCounter(BaseCallback):
    """Counts finished LM calls and the requests they sent.

    A cached answer is a call (the program made it) that sent nothing; a retried one sent several
    requests (:data:`courtroom.models._requests.WIRE` counts them).
    """

    def __init__(self) -> None:  # noqa: D107
        from courtroom.models._requests import WIRE

        self.calls = 0
        self.active: Tracker | None = None
        """The task whose examples are running (tasks run one after another: a comparison's rows)."""
        self._lock = threading.Lock()
        self._wire = WIRE
        self._seen = WIRE.sent
        self._seen_tokens = WIRE.snapshot()["by_model"]

    def on_lm_end(self, call_id: str, outputs: Any, exception: Exception | None = None) -> None:  # noqa: D102
        from courtroom.models.usage import in_preparation

        prep = in_preparation()
        with self._lock:
            self.calls += 1
            now = self._wire.sent
            if self.active is not None and prep:
                # Fitting the program on train (demos, precedents): counted apart, as the run summary does.
                self.active.prepared += 1
                self.active.prepared_sent += now - self._seen
            elif self.active is not None:
                self.active.own_calls += 1
                self.active.sent += now - self._seen
            self._seen = now
            tokens = self._wire.snapshot()["by_model"]
            if self.active is not None and self.active.unit != "examples" and not prep:
                # No example results to read tokens from (an optimizer, a study's trials): the wire's.
                self.active._spent({"by_model": _added(self._seen_tokens, tokens)})
            self._seen_tokens = tokens


def _added(before: dict[str, dict[str, int]], now: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The tokens per model the wire counted between two snapshots."""
    return {
        model: {k: v - int(before.get(model, {}).get(k, 0)) for k, v in counts.items()} for model, counts in now.items()
    }


@dataclass
class Tracker:
    """One task of a display: examples done out of ``total``, failures, accuracy, LM calls."""

    name: str
    display: ProgressDisplay
    total: int | None = None
    done: int = 0
    failed: int = 0
    correct: int = 0
    own_calls: int = 0
    """LM calls made while this task was the active one (see :meth:`start`)."""
    sent: int = 0
    """Requests those calls sent: fewer with cache hits, more with retries."""
    prepared: int = 0
    """LM calls that prepared the program on the train split (not counted in :attr:`calls`)."""
    prepared_sent: int = 0
    """Requests those preparing calls sent."""
    tokens: int = 0
    """Tokens of the calls its finished examples sent (cache hits spend none)."""
    cost: float | None = None
    """Dollars of those calls, where a model has a price (LiteLLM's or the display's ``prices``)."""
    note: str = ""
    handle: Any = None
    started: float = 0.0
    printed: Any = None
    unit: str | None = "examples"
    """What ``done`` counts (``None``: nothing, only LM calls and the note)."""
    printed_at: float = 0.0
    stage: str = ""
    """The note of the last stage line printed (plain lines only)."""
    finished: float = 0.0
    """When its last example finished (``time.monotonic``; 0: not yet): its elapsed time stops there."""

    def start(self, n: int) -> None:
        """``n`` more examples are to be evaluated (called again by each repeat)."""
        self.total = (self.total or 0) + n
        self.display.counter.active = self  # calls from now on are this task's, until another starts
        self.display._refresh(self)

    def result(self, res: Any) -> None:
        """One example finished (an :class:`~courtroom.eval.harness.ExampleResult`)."""
        self.done += 1
        self.failed += res.prediction is None
        self.correct += bool(res.correct)
        self._spent(res.usage)
        self.display._refresh(self)
        if self.total and self.done >= self.total and not self.finished:
            self.finished = time.monotonic()
            self.display._ended(self)

    def _spent(self, usage: Any) -> None:
        from courtroom.cost.bill import dollars
        from courtroom.eval.metrics import user_prices

        by_model = (usage or {}).get("by_model") or {}
        prices = user_prices(by_model, self.display.prices)
        for model, counts in by_model.items():
            self.tokens += counts.get("prompt_tokens", 0) + counts.get("completion_tokens", 0)
            cost = dollars(model, counts, prices, batch=self.display.batch_price)
            if cost is not None:
                self.cost = (self.cost or 0.0) + cost

    def spending(self) -> list[str]:
        """What its examples spent so far: tokens, and dollars where priced (said: at batch price)."""
        if not self.tokens:
            return []
        if self.cost is None:
            return [f"{self.tokens:,} tokens"]
        return [
            f"{self.tokens:,} tokens",
            f"${self.cost:.4f}" + (" at batch price" if self.display.batch_price else ""),
        ]

    def advance(self) -> None:
        """One unit done that is not an example (a study trial)."""
        self.done += 1
        self.display._refresh(self)

    def status(self, note: str, stage: bool = True) -> None:
        """A short phase note (e.g. ``dev before``, ``optimizing``); ``stage=False``: a detail of the current stage.

        Off a terminal, a new stage gets its line at once; a detail waits for the next periodic line.
        """
        self.note = note
        if not stage:
            self.stage = note
        self.display._refresh(self)

    @property
    def calls(self) -> int:
        """LM calls of this task's examples: made from when it was tracked (or last started) until another was."""
        return self.own_calls

    def calls_text(self, label: str = "{} LM calls") -> list[str]:
        """The examples' LM calls (and requests sent), then those that prepared the program, labelled apart."""
        parts = [label.format(self.calls) + (f" ({self.sent} sent)" if self.sent != self.calls else "")]
        if self.prepared:
            sent = f" ({self.prepared_sent} sent)" if self.prepared_sent != self.prepared else ""
            parts.append(f"{self.prepared} preparing on train{sent}")
        return parts

    def line(self) -> str:
        """The plain-text form of the task's state."""
        elapsed = (self.finished or time.monotonic()) - self.started
        parts = [self.note] if self.note else []
        if self.unit:
            parts.append(f"{self.done}/{self.total if self.total is not None else '?'} {self.unit}")
        parts += self.calls_text()
        parts += self.spending()
        if self.done and self.unit == "examples":
            parts.append(f"acc {self.correct / self.done:.2f}")
        if self.failed:
            parts.append(f"failed {self.failed}")
        if self.done and self.total and self.unit:
            left = elapsed / self.done * (self.total - self.done)
            parts.append(f"ETA {left:.0f}s")
        return f"[{elapsed:5.0f}s] {self.name}: " + ", ".join(parts)


class ProgressDisplay:
    """A transient progress display (see the module docstring).

    Args:
        enabled: draw anything at all.
        console: where to draw (default: stderr).
        every: seconds between plain lines when the console is not a terminal.
        interactive: force the bar (True) or plain lines (False); default: whether it is a terminal.
        prices: the user's price table (model -> input, output dollars per 1M tokens), for the
            dollars spent so far shown next to the tokens (LiteLLM's prices otherwise).
        batch: the requests go through the provider's batch API: its dollars are at batch price.
    """

    def __init__(
        self,
        enabled: bool = True,
        *,
        console: Console | None = None,
        every: float = 5.0,
        interactive: bool | None = None,
        prices: Any = None,
        batch: bool = False,
    ) -> None:
        self.enabled = enabled
        self.prices = prices
        self.batch_price = batch
        self.console = console or Console(stderr=True)
        if console is None and not self.console.is_terminal:  # plain lines: the width every other line has
            from courtroom.reporting.tables import terminal_width

            self.console.width = terminal_width()
        # COURTROOM_PROGRESS_EVERY=SECONDS sets the plain lines' period (logs, CI).
        from courtroom._env import env_seconds

        self.every = env_seconds("COURTROOM_PROGRESS_EVERY", every, strict=False)
        self.heartbeat = 30.0
        """Seconds after which the running task's plain line is printed again, though nothing moved."""
        self.interactive = self.console.is_terminal if interactive is None else interactive
        self.counter = CallCounter()
        self.trackers: list[Tracker] = []
        self._bar: Progress | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._print_lock = threading.Lock()
        self._context: Any = None
        self._listening: Any = None
        self._batches: dict[str, Any] = {}
        """Batch id -> its bar task (terminal) or the status last printed (plain lines)."""

    def __enter__(self) -> ProgressDisplay:
        from courtroom.cost.bill import forget_warnings
        from courtroom.reporting.logs import quiet_dspy

        forget_warnings()  # a command is one run: a provider's bad usage is said once in it

        quiet_dspy()  # DSPy's own lines would bury the display (the command line's choice; --debug keeps them)
        from courtroom.models._concurrency import counting_calls

        self._context = counting_calls(self.counter)  # every model courtroom calls carries the request bound
        self._context.__enter__()
        if self.enabled and self.interactive:
            self._bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[status]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self._bar.__enter__()
        if self.enabled:
            self._thread = threading.Thread(target=self._lines, daemon=True, name="courtroom-progress")
            self._thread.start()
            from courtroom.models.batch import listening

            self._listening = listening(self.batch)
            self._listening.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._listening is not None:
            self._listening.__exit__(*exc)
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            if self._bar is None and exc[0] is None:  # an error stays one line
                self._print_lines()
        if self._bar is not None:
            self._bar.__exit__(*exc)
        self._context.__exit__(*exc)

    def track(self, name: str, total: int | None = None, unit: str | None = "examples") -> Tracker:
        """A new task on the display; ``unit`` names what it counts (None: only LM calls)."""
        tracker = Tracker(name, self, total, started=time.monotonic(), unit=unit)
        self.counter.active = tracker  # the calls from now on are its own, until another task starts
        if self._bar is not None:
            tracker.handle = self._bar.add_task(name, total=total, status="starting")
        self.trackers.append(tracker)
        return tracker

    def batch(self, batch: Any) -> None:
        """One line per batch (``--batch``): its round, requests, the provider's status, lines done, elapsed.

        On a terminal the line updates in place; elsewhere a line is printed when the status changes.
        """
        total = len(batch.keys)
        text = f"{total} requests, {batch.status}"
        with self._print_lock:
            if self._bar is not None:
                handle = self._batches.get(batch.id)
                if handle is None:
                    handle = self._batches[batch.id] = self._bar.add_task(
                        f"batch r{batch.round}", total=total, status=text
                    )
                self._bar.update(handle, completed=batch.done, status=text)
                return
            if self._batches.get(batch.id) == batch.status:
                return
            self._batches[batch.id] = batch.status
            elapsed = time.monotonic() - batch.started
            self._say(f"[{elapsed:5.0f}s] batch r{batch.round} {batch.id}: {text}, {batch.done}/{total} done")

    def _refresh(self, t: Tracker) -> None:
        if self._bar is None and self.enabled and self._thread is not None and t.note != t.stage:
            t.stage = t.note  # a new stage (a phase, a trial) gets its line at once, not at the next tick
            self._print_line(t)
        if self._bar is None or t.handle is None:
            return
        bits = [t.note] if t.note else []
        bits += t.calls_text("calls {}")
        bits += t.spending()
        if t.done and t.unit == "examples":
            bits.append(f"acc {t.correct / t.done:.2f}")
        if t.failed:
            bits.append(f"failed {t.failed}")
        self._bar.update(t.handle, total=t.total, completed=t.done, status="  ".join(bits))

    def _ended(self, t: Tracker) -> None:
        """A task's last example finished: off a terminal its final line comes now, in the order tasks end."""
        if self._bar is None and self.enabled and self._thread is not None:
            self._print_line(t)

    def _print_lines(self) -> None:
        now = time.monotonic()
        for t in list(self.trackers):
            # The running task gets a line at least every `heartbeat` s, even while one slow call holds it.
            waiting = t is self.counter.active and now - t.printed_at >= self.heartbeat
            if (t.done, t.calls, t.prepared, t.note, t.total) != t.printed or waiting:
                self._print_line(t)

    def _print_line(self, t: Tracker) -> None:
        with self._print_lock:
            self._say(t.line())
            t.printed = (t.done, t.calls, t.prepared, t.note, t.total)
            t.printed_at = time.monotonic()

    def _say(self, line: str) -> None:
        """A plain line, cut at spaces to the console's width (continuation lines indented)."""
        from courtroom.reporting.tables import wrapped

        for piece in wrapped(line, self.console.width):
            self.console.print(piece, markup=False, highlight=False, soft_wrap=True)

    def _lines(self) -> None:
        # The bar's LM-call counts move between results too; plain lines come every `every` s.
        while not self._stop.wait(0.5 if self._bar is not None else self.every):
            if self._bar is not None:
                for t in self.trackers:
                    self._refresh(t)
            else:
                self._print_lines()
