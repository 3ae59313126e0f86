"""Run folders: ``{created}_{framework}_{task}_{id}/`` with meta.json, results.jsonl, summary.json/.md.

:func:`run` is what ``courtroom run`` calls: load the task, build the program, evaluate, and
write the folder as results arrive (one JSONL line per example, flushed). What defines a run is
:class:`~courtroom.runner.config.RunConfig` and the summary's text is
:mod:`courtroom.runner.summaries`; their names are importable from here too.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import os
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from courtroom import _clock, _stop
from courtroom._files import JsonLines, write_atomic, write_json
from courtroom._lock import FolderLock
from courtroom._versions import versions
from courtroom.analysis.bias import check_debias, debiased
from courtroom.data.tasks import load_splits
from courtroom.errors import ModelError
from courtroom.eval.harness import ExampleResult, evaluate
from courtroom.eval.metrics import price_aliases, user_prices
from courtroom.eval.status import status
from courtroom.eval.tally import Tally
from courtroom.models._concurrency import bounded_requests
from courtroom.models._requests import WIRE, since
from courtroom.models.cache import configure_cache, without_base_url
from courtroom.models.context import check_context
from courtroom.models.lms import RoleLMs, check_keys, resolve_roles
from courtroom.models.usage import metered, preparing
from courtroom.programs import CourtroomProgram, get_framework
from courtroom.runner.config import RunConfig
from courtroom.runner.salting import salted_roles
from courtroom.runner.sessions import (
    RequestLog,
    earlier_wall,
    end_session,
    line_count,
    requests_recorded,
    session,
    spend_summary,
)
from courtroom.runner.stored import StoredResults, load_run, positions
from courtroom.runner.summaries import calls_rows, learned_rows, summary_markdown, summary_rows, tokens_text

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOutcome:
    """What a finished run produced (``courtroom.run``, ``courtroom run``)."""

    run_dir: Path
    """The run folder: ``meta.json``, ``results.jsonl``, ``summary.json`` and ``summary.md``."""
    summary: dict[str, Any]
    """The run's figures, as ``summary.json``: ``n``, ``accuracy``, ``macro_f1``, ``failures``, ``calls``,
    ``sent``, ``cached``, ``tokens``, ``cost`` (dollars, None without a price), ``wall_seconds``, ..."""
    results: Sequence[ExampleResult]
    """Each example's outcome, in input order: the lines of ``results.jsonl``, read from the folder
    at each use (:class:`~courtroom.runner.stored.StoredResults`), never held by the run, so its memory
    stays bounded however many cases it has; ``list(outcome.results)`` keeps a copy."""
    analyses: dict[str, Any] = field(default_factory=dict)
    """Analyses run after the evaluation (``flips``: the flip matrix, for a framework with first answers;
    ``ambiguity``: the ambiguity split's rows)."""


def check_reachable(lms: RoleLMs, timeout: float = 3.0) -> None:
    """Fail fast, in one line, when a model server with an ``api_base`` does not accept connections."""
    for lm in lms.models():
        base = getattr(lm, "api_base", None) or (getattr(lm, "kwargs", None) or {}).get("api_base")
        if not base:
            continue
        url = urlparse(base)
        host, port = url.hostname or "127.0.0.1", url.port or (443 if url.scheme == "https" else 80)
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as exc:
            raise ModelError(
                f"cannot reach the model server at {url.scheme}://{host}:{port} ({exc.strerror or exc}): "
                "start it or fix --api-base"
            ) from exc


def _batch_base(config: RunConfig) -> str | None:
    """The models' base URL: ``--api-base``, or in batch mode OpenAI's or Anthropic's (others refused here)."""
    if not config.batch:
        return config.api_base
    from courtroom.models.batch import check_names
    from courtroom.models.panels import split_models

    named = [config.lm or os.environ.get("COURTROOM_LM", "local"), *config.roles.values()]
    return check_names([m for value in named for m in split_models(str(value))], config.api_base)


def new_run_dir(out: str | Path, framework: str, task: str) -> Path:
    """A fresh folder named ``{created}_{framework}_{task}_{id}``."""
    created = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    # Only portable characters: a custom dataset's task name (`custom:my`) has a colon.
    task = re.sub(r"[^A-Za-z0-9._-]+", "-", task).strip("-") or "task"
    path = Path(out) / f"{created}_{framework}_{task}_{uuid.uuid4().hex[:6]}"
    path.mkdir(parents=True, exist_ok=False)
    return path


@dataclass
class RunSetup:
    """A run ready to execute: its config, program, role models, task and examples.

    :func:`run` builds one for a new folder and :func:`courtroom.runner.resume.resume` for an
    existing one; both then call :meth:`prepare` and :meth:`execute`.
    """

    config: RunConfig
    program: CourtroomProgram
    lms: RoleLMs
    task: Any
    examples: list[Any]
    source: str
    wire: dict[str, Any] = field(default_factory=WIRE.snapshot)
    """The process's request tally when the setup was built: this session's spend is counted from it."""
    began: float = field(default_factory=time.perf_counter)
    """When building began (``perf_counter``): the summary's set-up time counts from it."""
    seen: dict[str, int] | None = None
    """A scored program's cases also in its train or dev split (:attr:`courtroom.data.tasks.TaskData.seen`)."""
    requests: RequestLog | None = None
    """The session's request record while it runs (:meth:`recording`)."""

    @classmethod
    def build(cls, config: RunConfig, lms: RoleLMs | None = None) -> RunSetup:
        """Load the data, build the role models and the program (``lms`` replaces the named models)."""
        began = time.perf_counter()
        configure_cache()
        framework = get_framework(config.framework)
        check_debias(config.debias, config.framework)
        data = config.load()
        from courtroom.programs.presets import role_specs, sampling_temperatures

        temperatures = sampling_temperatures(framework, config.preset)
        if lms is None:
            # Without --temperature, roles the framework samples run at its (or the preset's) temperature.
            roles = role_specs(config.roles, config.lm, temperatures) if config.temperature is None else config.roles
            lms = resolve_roles(
                config.lm,
                roles,
                valid_roles=framework.roles,
                temperature=config.temperature,
                max_tokens=config.max_tokens,
                api_base=_batch_base(config),
                timeout=config.timeout,
                n_sampling=config.n_sampling,
                prompt_layout=config.prompt_layout,
            )
        if config.batch:
            from courtroom.models.batch import check_batchable

            check_batchable(lms.models())  # before the folder is made or anything is sent
        config.prices = price_aliases(config.prices, lms)  # `local`, as typed, priced as its server's model
        if config.repeat:
            lms = salted_roles(lms, config.repeat)
        knobs = dict(config.knobs)
        if "seed" in framework.knobs():
            knobs.setdefault("seed", config.seed)  # e.g. Courtroom-LLM's random assignment follows the run's seed
        program = replace(config, knobs=knobs).build_program(data.task.labels, data.task.positions, lms)
        program.temperatures.update(temperatures)
        warning = program.sampling_warning()
        if warning:
            logger.warning(warning)
        check_keys(lms)
        check_context(lms.models(), ((str(ex.id), ex.case) for ex in data.examples))
        check_reachable(lms)
        return cls(config, program, lms, data.task, data.examples, data.source, began=began, seen=data.seen)

    @contextlib.contextmanager
    def recording(self, run_dir: Path) -> Iterator[RequestLog]:
        """This session's requests, from its preparation on, in ``run_dir``'s ``requests.jsonl``.

        What a kill leaves for the folder's spend (:class:`~courtroom.runner.sessions.RequestLog`);
        nested uses (``execute`` inside the caller's) share the outer one.
        """
        if self.requests is not None:
            yield self.requests
            return
        with requests_recorded(run_dir) as self.requests:
            try:
                yield self.requests
            finally:
                self.requests = None

    def batching(self, run_dir: Path) -> Any:
        """Batch mode for this run's requests (``config.batch``), recorded in ``run_dir``; else nothing."""
        if not self.config.batch:
            return contextlib.nullcontext()
        from courtroom.models.batch import batching

        return batching(run_dir, self.lms.models())

    @property
    def learns(self) -> bool:
        """Whether the program fits anything on the train split (``prepare``; a saved program was fitted)."""
        return self.config.program is None and type(self.program).prepare is not CourtroomProgram.prepare

    def prepare(self, budget: Any = None) -> dict[str, Any]:
        """``program.prepare(train split)``, bounded and metered like the evaluation: its usage and train ids."""
        if not self.learns:
            return {}
        config = self.config
        train = load_splits(
            config.task, data=config.data, seed=config.seed, dataset=config.dataset, splits=config.splits
        )[1]["train"]
        train = train[: config.train_limit] if config.train_limit else train
        with (
            metered() as meter,
            preparing(),
            bounded_requests(config.concurrency),
            budget.counting() if budget is not None else contextlib.nullcontext(),
        ):
            self.program.prepare(train)
        return {"train_ids": [ex.id for ex in train], "usage": meter.usage.to_dict()}

    def execute(
        self,
        run_dir: Path,
        done: list[ExampleResult],
        progress: Callable[[ExampleResult], None] | None = None,
        on_start: Callable[[int], None] | None = None,
        retry: tuple[CourtroomProgram, set[str]] | None = None,
        budget: Any = None,
    ) -> RunOutcome:
        """Evaluate the examples without a result in ``done`` into ``run_dir``; write the summary.

        ``retry`` is a program and the ids it reruns (``--retry-failed``). With a ``budget``
        (:mod:`courtroom.cost.budget`) that stops the run, no summary is written (the folder
        stays resumable) and :class:`~courtroom.cost.budget.BudgetExhausted` is raised.
        """
        config = self.config
        finished = {r.id for r in done}
        retry_program, retry_ids = retry if retry else (self.program, set())
        todo = [ex for ex in self.examples if ex.id not in finished and ex.id not in retry_ids]
        again = [ex for ex in self.examples if ex.id in retry_ids]
        # The summary's counts, as each result arrives: no result is held (results.jsonl has them).
        place = {ex.id: n for n, ex in enumerate(self.examples)}
        tally = Tally(self.task.labels)
        for r in done:
            if r.id in place and r.id not in retry_ids:
                tally.add(r, place[r.id])
        if on_start:
            on_start(len(self.examples))
        for r in done:
            if progress:
                progress(r)
        earlier = earlier_wall(run_dir)
        start = time.perf_counter()
        arrived = [0]
        with (
            JsonLines(run_dir / "results.jsonl") as sink,
            _stop.saving_to(run_dir),
            budget.counting() if budget is not None else contextlib.nullcontext(),
            self.recording(run_dir) as requests,
        ):
            session(run_dir, "start", line=line_count(sink.path), requests=requests.start)

            def record(res: ExampleResult) -> None:
                sink.append(res.to_dict())
                tally.add(res, place[res.id])
                arrived[0] += res.id not in retry_ids
                if progress:
                    progress(res)

            try:
                # A swapped twin is made here, after prepare(), so it keeps what was fitted.
                program = debiased(self.program, config.debias)
                n = config.concurrency
                evaluate(program, todo, concurrency=n, on_result=record, budget=budget, keep=False)
                if again:
                    retried = debiased(retry_program, config.debias)
                    evaluate(retried, again, concurrency=n, on_result=record, budget=budget, keep=False)
            finally:
                if end_session(run_dir, since(self.wire)):
                    requests.end()  # the end line holds them now
        if budget is not None and budget.stopped:
            raise budget.stopped_run(run_dir, len(todo) - arrived[0])
        now = time.perf_counter()
        summary = tally.summary(earlier + now - start, config.prices)
        summary["timing"] = {
            "start_up": _clock.start_up(self.began),
            "setup": round(start - self.began, 3),
            "examples": round(now - start, 3),
        }
        summary.update(spend_summary(run_dir, since(self.wire), config.prices))
        if config.batch:
            summary.update(_batch_spend(run_dir, summary, config.prices))
        if summary["cost"] is None and not summary["sent"] and summary.get("cached_cost") is not None:
            summary["cost"] = 0.0  # every answer from the cache: nothing billed (its live price beside it)
        summary.update(status(len(tally.failed), tally.count, config.fail_on_error, tally.errors()))
        learned = self.program.prepare_report()
        if learned:
            summary["learned"] = learned
        if self.seen is not None:
            summary["seen"] = self.seen
        write_json(run_dir / "summary.json", summary)
        write_atomic(run_dir / "summary.md", summary_markdown(summary, f"{config.framework} on {self.task.name}"))
        return RunOutcome(run_dir, summary, StoredResults(run_dir))


def _batch_spend(run_dir: Path, summary: Mapping[str, Any], prices: Any) -> dict[str, Any]:
    """A batch run's dollars at the batch price (``cost``), beside the live price, and its batches."""
    from courtroom.models.batch import recorded
    from courtroom.models.usage import Usage
    from courtroom.runner.sessions import folder_spend

    by_model = {k: dict(v) for k, v in (folder_spend(run_dir).get("by_model") or {}).items()}
    return {
        "cost": Usage(by_model=by_model).cost(user_prices(by_model, prices), batch=True),
        "live_cost": summary.get("cost"),
        "batches": len(recorded(run_dir)),
    }


def run(
    config: RunConfig,
    *,
    progress: Callable[[ExampleResult], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    lms: RoleLMs | None = None,
    run_dir: Path | None = None,
    budget: Any = None,
) -> RunOutcome:
    """Evaluate a framework on a task and write the run folder.

    ``lms`` (a ready role map, e.g. fakes) replaces the models named in ``config``; ``run_dir``
    (a new folder) replaces the generated ``{created}_{framework}_{task}_{id}`` name. A
    ``budget`` (:class:`courtroom.cost.budget.Budget`) stops starting examples at its limits.
    """
    budget = budget.for_run(config) if budget is not None else None
    setup = RunSetup.build(config, lms)
    if run_dir is None:
        run_dir = new_run_dir(config.out, config.framework, setup.task.name.replace("/", "-"))
    else:
        run_dir.mkdir(parents=True, exist_ok=False)
    with FolderLock(run_dir, what="run folder"), _stop.saving_to(run_dir):
        return _start(setup, config, run_dir, progress, on_start, budget)


def _start(
    setup: RunSetup,
    config: RunConfig,
    run_dir: Path,
    progress: Callable[[ExampleResult], None] | None,
    on_start: Callable[[int], None] | None,
    budget: Any,
) -> RunOutcome:
    cls = type(setup.program)
    write_meta(
        run_dir,
        config,
        framework_config=setup.program.config(),
        models=setup.lms.names(cls.roles),
        temperatures={r: setup.program.temperature_of(r) for r in cls.roles},
        task={
            "name": setup.task.name,
            "labels": list(setup.task.labels),
            "positions": setup.program.positions,
            "split": config.split,
            "source": setup.source,
        }
        | ({"seen": setup.seen} if setup.seen is not None else {}),
        example_ids=[ex.id for ex in setup.examples],
    )
    if budget is not None and setup.learns and not budget.admit_training():
        raise budget.stopped_run(run_dir, len(setup.examples))  # nothing sent: the folder resumes
    with setup.batching(run_dir), setup.recording(run_dir):
        prepare_usage = setup.prepare(budget)
        if prepare_usage:
            write_json(run_dir / "prepare.json", prepare_usage)  # the budget counted its requests as they went out
        return setup.execute(run_dir, [], progress, on_start, budget=budget)


def write_meta(
    run_dir: Path,
    config: RunConfig,
    *,
    framework_config: Mapping[str, Any],
    models: Mapping[str, Any],
    task: Mapping[str, Any],
    example_ids: list[str],
    temperatures: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Write a run folder's ``meta.json``: the one writer (runs, compile's dev runs), never a base URL."""
    meta = {
        "created": _dt.datetime.now().isoformat(timespec="seconds"),
        "config": without_base_url({k: v for k, v in asdict(config).items() if k != "spec"}),
        "spec": config.spec,
        "framework_config": dict(framework_config),
        "models": dict(models),
        "preset": config.preset,
        "temperatures": dict(temperatures or {}),
        "task": dict(task),
        "seed": config.seed,
        "example_ids": list(example_ids),
        "versions": versions(),
        **dict(extra or {}),
    }
    write_json(run_dir / "meta.json", meta)


__all__ = [
    "RunConfig",
    "RunOutcome",
    "RunSetup",
    "calls_rows",
    "check_reachable",
    "learned_rows",
    "load_run",
    "new_run_dir",
    "positions",
    "run",
    "summary_markdown",
    "summary_rows",
    "tokens_text",
    "write_meta",
]
