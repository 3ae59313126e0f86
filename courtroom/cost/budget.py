"""Budgets (``--max-calls``, ``--max-cost``): no new example or trial starts past the budget.

A :class:`Budget` admits a unit of work (an example, a trial) only when what has been spent, plus
the most that the units in flight and the new one could spend, stays within the limits. The most
a unit could spend comes from the dry run (:mod:`courtroom.cost.estimate`): calls per example
are exact or a maximum; dollars per example are bounded by the sample's largest prompt and
``max_tokens`` per call. Units in flight always finish, so their answers reach the cache and a
resumed run gets them for free. Spending counts requests sent (cache hits are free) and their
dollars. A study's trial guard is in :mod:`courtroom.cost.study_budget`.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from courtroom import _stop
from courtroom._stop import with_flags
from courtroom.errors import ConfigError, CourtroomError
from courtroom.models._requests import OverBudget
from courtroom.models.usage import price_per_token


class BudgetExhausted(CourtroomError):  # noqa: N818 - it is an outcome, not a failure
    """Work stopped at the budget; ``line`` says what was spent, what is left and how to resume."""

    exit_code = 3

    def __init__(self, line: str, budget: Budget | None, left: int, resume: str | None = None) -> None:
        super().__init__(line)
        self.line, self.budget, self.left, self.resume = line, budget, left, resume

    def regroup(self, group: Any, later: int) -> BudgetExhausted:
        """The same stop inside repeat group ``group``, with ``later`` repeats not started."""
        resume = with_flags(f"courtroom run --resume {group}")
        head = self.line.split("; finish with:")[0]
        line = f"{head}" + (f"; {later} later repeat(s) not started" if later else "") + f"; finish with: {resume}"
        return BudgetExhausted(line, self.budget, self.left, resume)


@dataclass(eq=False)  # each unit is itself: two with the same counts are not the same unit
class _Unit:
    """What one admitted unit (an example) has sent so far: requests, and dollars (in flight at their estimate)."""

    calls: int = 0
    cost: float = 0.0


_unit: contextvars.ContextVar[_Unit | None] = contextvars.ContextVar("courtroom_budget_unit", default=None)


@dataclass
class _Ticket:
    unit: _Unit | None
    model: str
    estimate: float


@dataclass
class Budget:
    """Limits on requests sent and dollars, shared by every unit of work of one command.

    Two levels. A unit of work (an example, a trial) starts only if the most it can spend fits
    beside what is spent and reserved (:meth:`admit`). While :meth:`counting`, every request is
    also reserved before it goes out (:meth:`reserve`, called by courtroom's request loop): a
    request that would pass ``--max-calls``, or whose estimated dollars would pass
    ``--max-cost`` beside the requests in flight, is refused, so a limit holds whatever the
    estimates said (retries included). A request's dollars are its prompt tokens plus
    ``max_tokens`` (or, when no completion length is known, the longest completion seen so far:
    the first such request goes alone and its answer sets the estimate).
    """

    max_calls: int | None = None
    max_cost: float | None = None
    prices: Mapping[str, Sequence[float]] | None = None
    unit_calls: int = 0
    """The most requests one unit can send."""
    unit_cost: float | None = None
    """The most dollars one unit can cost (None: use the dearest unit seen so far)."""
    spent_calls: int = 0
    """Requests sent (while counting: reserved as they go out, failed ones and retries included)."""
    spent_cost: float = 0.0
    """Dollars of the requests answered."""
    in_flight: int = 0
    admitted: int = 0
    """Units started so far."""
    stopped: bool = False
    refused_cost: float | None = None
    """The estimated dollars of the request ``--max-cost`` refused (None: none was refused)."""
    prepare_calls: int = 0
    """The most requests the current run's training (``prepare``) can send, from its dry run."""
    prepare_cost: float | None = None
    _seen_cost: float = 0.0
    _counting: int = 0
    _units: list[_Unit] = field(default_factory=list, repr=False)
    _requests: int = 0
    """Requests in flight."""
    _in_flight_cost: float = 0.0
    _completion: dict[str, int] = field(default_factory=dict, repr=False)
    """Model -> the longest completion (tokens) seen: the estimate when no max_tokens is known."""
    _lock: threading.Condition = field(default_factory=threading.Condition, repr=False)

    def __post_init__(self) -> None:
        if self.max_calls is not None and self.max_calls < 0:
            raise ConfigError(f"--max-calls must be >= 0, got {self.max_calls}")
        if self.max_cost is not None and not 0 <= self.max_cost < float("inf"):  # NaN too
            raise ConfigError(f"--max-cost must be a finite number >= 0, got {self.max_cost}")

    @property
    def active(self) -> bool:
        """Whether any limit is set."""
        return self.max_calls is not None or self.max_cost is not None

    def bound(self, unit_calls: int, unit_cost: float | None, models: Sequence[str] = ()) -> Budget:
        """Set the most one unit can spend (from a dry run); a dollar limit needs a price for each model."""
        with self._lock:
            self.unit_calls, self.unit_cost = int(unit_calls), unit_cost
        if self.max_cost is not None:
            unpriced = [m for m in models if m != "local" and self._price(m) is None]
            if unpriced:
                raise ConfigError(
                    f"--max-cost needs a price for {', '.join(sorted(set(unpriced)))}: "
                    "pass --prices FILE (model -> input, output dollars per 1M tokens)"
                )
        return self

    def _price(self, model: str) -> tuple[float, float] | None:
        table = {k: tuple(float(x) for x in v) for k, v in (self.prices or {}).items()}
        return price_per_token(model, table)

    @contextlib.contextmanager
    def counting(self) -> Iterator[Budget]:
        """Count and bound every request sent while inside, as it goes out (see the class docstring)."""
        from courtroom.models._requests import gated

        with self._lock:
            self._counting += 1
        try:
            with gated(self):
                yield self
        finally:
            with self._lock:
                self._counting -= 1

    def admit(self) -> bool:
        """Start one more unit if it cannot take spending past a limit; once refused, always refused.

        When a unit's dollars are unknown, the first unit goes alone: the next waits for its cost.
        """
        with self._lock:
            while self.max_cost is not None and self.unit_cost is None and not self._seen_cost and self.in_flight:
                self._lock.wait(0.1)
                if _stop.stop_requested():
                    return False
            if self.stopped:
                return False
            unit_cost = self.unit_cost if self.unit_cost is not None else self._seen_cost
            if self._counting:
                # Requests of units in flight are already spent; reserve only what they may still send.
                calls = self.spent_calls + sum(max(0, self.unit_calls - u.calls) for u in self._units)
                cost = self.spent_cost + self._in_flight_cost + sum(max(0.0, unit_cost - u.cost) for u in self._units)
            else:
                calls = self.spent_calls + self.in_flight * self.unit_calls
                cost = self.spent_cost + self.in_flight * unit_cost
            over_calls = self.max_calls is not None and calls + self.unit_calls > self.max_calls
            over_cost = self.max_cost is not None and cost + unit_cost > self.max_cost
            if over_calls or over_cost:
                self.stopped = True
                return False
            self.in_flight += 1
            self.admitted += 1
            if self._counting:
                unit = _Unit()
                self._units.append(unit)
                _unit.set(unit)
            return True

    def admit_training(self) -> bool:
        """Start a run's training calls (``prepare``) only if they cannot take spending past a limit."""
        with self._lock:
            if self.stopped:
                return False
            over_calls = self.max_calls is not None and self.spent_calls + self.prepare_calls > self.max_calls
            over_cost = (
                self.max_cost is not None
                and self.prepare_calls > 0
                and (self.prepare_cost is None or self.spent_cost + self.prepare_cost > self.max_cost)
            )
            if over_calls or over_cost:
                self.stopped = True
                return False
            return True

    def settle(self, usage: Mapping[str, Any] | None) -> None:
        """A unit finished: release its slot; add what it sent (``Usage.to_dict()`` form) unless counted live."""
        usage = usage or {}
        unit = _unit.get()
        cost = unit.cost if unit is not None and unit in self._units else self.cost_of(usage)
        with self._lock:
            self.in_flight = max(0, self.in_flight - 1)
            if unit is not None and unit in self._units:
                self._units.remove(unit)
                _unit.set(None)
            else:
                self.spent_calls += int(usage.get("sent", 0))
                self.spent_cost += cost
            self._seen_cost = max(self._seen_cost, cost)
            self._lock.notify_all()

    def reserve(self, lm: Any, call: Any, n: int = 1) -> _Ticket:
        """Reserve one request before it is sent, or refuse it (:class:`OverBudget`).

        ``n``: the samples it asks for (n-sampling, :mod:`courtroom.models.sampling`): one request
        (``--max-calls`` counts requests sent), one prompt and n answers (``--max-cost``).
        """
        model = str(getattr(lm, "model", ""))
        prompt = _prompt_tokens(model, call) if self.max_cost is not None else 0
        max_tokens = (getattr(call, "kwargs", None) or {}).get("max_tokens") or (lm.kwargs or {}).get("max_tokens")
        unit = _unit.get()
        with self._lock:
            while True:
                if self.max_calls is not None and self.spent_calls + 1 > self.max_calls:
                    self.stopped = True
                    raise OverBudget(f"--max-calls {self.max_calls} reached")
                estimate = 0.0
                if self.max_cost is not None:
                    price = self._price(model) or (0.0, 0.0)
                    completion = max_tokens or self._completion.get(model)
                    if completion is None and price != (0.0, 0.0) and self._requests:
                        # Nothing says how long an answer is: this request waits for the one in flight.
                        self._lock.wait(0.1)
                        if _stop.stop_requested():
                            raise _stop.Stopped("stopped while waiting for the budget")
                        continue
                    estimate = prompt * price[0] + n * (completion or 0) * price[1]
                    if self.spent_cost + self._in_flight_cost + estimate > self.max_cost:
                        self.stopped, self.refused_cost = True, estimate
                        raise OverBudget(f"--max-cost {self.max_cost:g} reached")
                break
            self.spent_calls += 1
            self._requests += 1
            self._in_flight_cost += estimate
            if unit is not None:
                unit.calls += 1
                unit.cost += estimate
            return _Ticket(unit, model, estimate)

    def release(self, ticket: _Ticket | None, usage: Mapping[str, Any] | None, *, hit: bool = False) -> None:
        """A reserved request ended: its real dollars replace its estimate (a cache hit gives its call back)."""
        if ticket is None:
            return
        from courtroom.cost.bill import response_counts

        usage = usage or {}
        cost = self.cost_of({"by_model": {ticket.model: response_counts(usage)}}) if usage else 0.0
        with self._lock:
            self._requests -= 1
            self._in_flight_cost -= ticket.estimate
            self.spent_cost += cost
            if hit:
                self.spent_calls -= 1
            if ticket.unit is not None:
                ticket.unit.cost += cost - ticket.estimate
                ticket.unit.calls -= int(hit)
            completion = int(usage.get("completion_tokens") or 0)
            if completion:
                self._completion[ticket.model] = max(self._completion.get(ticket.model, 0), completion)
            self._lock.notify_all()

    def cost_of(self, usage: Mapping[str, Any]) -> float:
        """Dollars of one usage record at the live price (:func:`courtroom.cost.bill.total`).

        A batch's bill is lower, so the limit holds; models without a price count 0 (:meth:`bound`
        refuses those).
        """
        from courtroom.cost.bill import total

        table = {k: tuple(float(x) for x in v) for k, v in (self.prices or {}).items()}
        return total(usage.get("by_model") or {}, table) or 0.0

    def spent_text(self) -> str:
        """``N requests, $X`` (dollars only under a dollar limit)."""
        text = f"{self.spent_calls} request(s)"
        if self.max_cost is not None:
            text += f", ${self.spent_cost:.4f}"
        return text

    def for_run(self, config: Any) -> Budget | None:
        """This budget bounded per example of the run ``config`` (None when no limit is set)."""
        return run_budget(self, config)

    def stopped_run(self, run_dir: Any, left: int) -> BudgetExhausted:
        """The outcome of a run stopped at this budget with ``left`` examples not run."""
        return stopped_run(self, run_dir, left)

    def limit_text(self) -> str:
        """The limits, for messages."""
        parts = []
        if self.max_calls is not None:
            parts.append(f"--max-calls {self.max_calls}")
        if self.max_cost is not None:
            parts.append(f"--max-cost {self.max_cost:g}")
        return " and ".join(parts)


def _prompt_tokens(model: str, call: Any) -> int:
    """Prompt tokens of a request about to be sent (LiteLLM's counter; 4 characters a token if it fails)."""
    messages = getattr(call, "messages", None) or [{"role": "user", "content": str(getattr(call, "prompt", ""))}]
    try:
        import litellm

        return int(litellm.token_counter(model=model, messages=messages))
    except Exception:  # noqa: BLE001 - an estimate: never a reason to fail a request
        return sum(len(str(m.get("content", ""))) for m in messages if isinstance(m, dict)) // 4 + 8


def run_budget(budget: Budget | None, config: Any) -> Budget | None:
    """Bound ``budget`` per example by a dry run of ``config`` (None when no limit is set)."""
    if budget is None or not budget.active:
        return None
    from courtroom.cost.estimate import estimate_run

    est = estimate_run(config, sample=5, prices=budget.prices or config.prices, measure_cache=False)
    if budget.prices is None and config.prices:
        budget.prices = config.prices
    budget.prepare_calls = est.prepare_calls
    budget.prepare_cost = est.cost * est.prepare_calls / est.calls if est.cost is not None and est.calls else None
    return budget.bound(est.max_calls_per_example, est.max_cost_per_example, list(est.models.values()))


def stopped_run(budget: Budget, run_dir: Any, left: int) -> BudgetExhausted:
    """The one-line outcome of a run stopped at its budget."""
    resume = with_flags(f"courtroom run --resume {run_dir}")
    line = (
        f"budget reached ({budget.limit_text()}): spent {budget.spent_text()}; "
        f"{left} example(s) not run; finish with: {resume}"
    )
    return BudgetExhausted(line, budget, left, resume)


@contextlib.contextmanager
def stopped_comparison(out_dir: Any, framework: str, later: Sequence[str]) -> Iterator[None]:
    """Reword a budget stop inside ``compare``: which framework stopped, which never started, how to finish."""
    try:
        yield
    except BudgetExhausted as stop:
        head = stop.line.split("; finish with:")[0].replace("example(s) not run", f"example(s) of {framework} not run")
        rest = f"; not started: {', '.join(later)}" if later else ""
        resume = with_flags(f"courtroom compare --resume {out_dir}")
        raise BudgetExhausted(f"{head}{rest}; finish with: {resume}", stop.budget, stop.left, resume) from None


def check_compile(est: Any, optimizer: str, max_calls: int | None, max_cost: float | None) -> None:
    """A compile runs as one unit: it starts only if its dry-run bound fits the budget.

    Raises :class:`BudgetExhausted` (nothing sent) naming why, when it does not.
    """
    from courtroom.cost.dry_run import PROGRAM_RUNS

    why = None
    if optimizer not in PROGRAM_RUNS:
        why = f"{optimizer} decides its own number of calls (no bound): use bootstrap, bootstrap-rs, labeled or knn"
    elif max_calls is not None and est.calls > max_calls:
        why = f"it could send {est.calls} request(s), over --max-calls {max_calls}"
    elif max_cost is not None and (est.cost is None or est.completion_tokens is None):
        why = "its dollars are unknown (no price or no max_tokens): pass --prices and --max-tokens"
    elif max_cost is not None and est.cost > max_cost:
        why = f"it could cost ${est.cost:.4f}, over --max-cost {max_cost:g}"
    if why:
        line = f"budget: compile not started, {why}; nothing was sent (see --dry-run; lower --train-limit/--dev-limit)"
        raise BudgetExhausted(line, None, 0)


@contextlib.contextmanager
def compiling(budget: Budget | None) -> Iterator[None]:
    """Every request of a compile reserved from ``budget`` before it goes out, as in a run.

    The dry-run bound (:func:`check_compile`) decides whether a compile starts; this holds the
    limit whatever the bound said (retries included). A refused request stops the compile with
    :class:`BudgetExhausted` (nothing is saved; the answers so far are cached for a rerun).
    """
    if budget is None:
        yield
        return
    try:
        with budget.counting():
            yield
    except OverBudget:
        pass
    if budget.stopped:  # refused here, or refused inside an optimizer that kept going without those calls
        line = (
            f"budget reached ({budget.limit_text()}): compile stopped after {budget.spent_text()}; nothing saved; "
            "its answers so far are cached: rerun with a larger budget"
        )
        raise BudgetExhausted(line, budget, 0)
