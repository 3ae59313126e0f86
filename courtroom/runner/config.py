"""What defines a run: :class:`RunConfig`, stored in the run folder's meta.json and read back by ``--resume``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from courtroom.data.tasks import TaskData, load_task
from courtroom.errors import ConfigError
from courtroom.eval.status import DEFAULT_FAIL_ON_ERROR

if TYPE_CHECKING:
    from courtroom.programs import CourtroomProgram
    from courtroom.spec import Experiment


@dataclass
class RunConfig:
    """Everything that defines a run (stored in meta.json, and read back by ``--resume``)."""

    framework: str
    task: str
    data: str = "auto"
    split: str = "test"
    limit: int | None = None
    seed: int = 0
    knobs: dict[str, Any] = field(default_factory=dict)
    lm: str | None = None
    roles: dict[str, str] = field(default_factory=dict)
    temperature: float | None = None
    max_tokens: int | None = None
    api_base: str | None = None
    concurrency: int = 4
    out: str = "runs"
    dataset: dict[str, Any] | None = None
    """:func:`courtroom.data.tasks.custom_task` arguments for a dataset outside the registry."""
    prices: dict[str, list[float]] | None = None
    """Model -> [input, output] dollars per 1M tokens, for models LiteLLM has no price for."""
    repeat: int = 0
    """Which repeat this is: repeats above 0 sample fresh answers (see :mod:`courtroom.runner.repeats`)."""
    train_limit: int | None = None
    """Use at most this many training cases for ``program.prepare`` (precedents, reliability model)."""
    preset: str | None = None
    """The paper preset the knobs came from (:mod:`courtroom.programs.presets`); sets sampling temperatures."""
    timeout: float | None = None
    """Seconds per LM request (None: 30, or 300 for ``local``); answers do not depend on it."""
    fail_on_error: float = DEFAULT_FAIL_ON_ERROR
    """The run fails (``summary["status"] == "failed"``) when more than this fraction of examples failed."""
    debias: str | None = None
    """``swap`` or ``swap-vote``: run each case again with the sides exchanged (:mod:`courtroom.analysis.bias`)."""
    splits: dict[str, Any] | None = None
    """Split sizes and splits given as their own files (:func:`courtroom.data.tasks.load_splits`)."""
    batch: bool = False
    """Requests go through the provider's batch API (:mod:`courtroom.models.batch`); answers do not depend on it."""
    n_sampling: bool | None = None
    """``--n-sampling``: k samples of one prompt in one request (:mod:`courtroom.models.sampling`); answers do not
    depend on it. None: ``$COURTROOM_N_SAMPLING``."""
    prompt_layout: str | None = None
    """``--prompt-layout`` (:mod:`courtroom.models._layout`). None: ``$COURTROOM_PROMPT_LAYOUT``."""
    spec: dict[str, Any] | None = None
    """The experiment spec the run came from (:meth:`courtroom.spec.Experiment.to_dict`), as recorded."""
    program: dict[str, Any] | None = None
    """A saved program that runs instead of building ``framework`` (``courtroom score``): its ``path``
    and ``checksum`` (a resume refuses a file changed since). Nothing is fitted: it was compiled."""

    @classmethod
    def from_spec(
        cls,
        spec: Experiment,
        framework: str | None = None,
        *,
        knobs: Mapping[str, Any] | None = None,
        preset: str | None = None,
        roles: Mapping[str, str] | None = None,
    ) -> RunConfig:
        """The run of ``framework`` (default: the spec's) that ``spec`` describes; the one place the two meet."""
        d, m = spec.data, spec.models
        return cls(
            framework=str(framework or spec.design.framework),
            task=d.task_name,
            data=d.source,
            split=d.split,
            limit=d.limit,
            seed=d.seed,
            knobs=dict(spec.design.knobs if knobs is None else knobs),
            lm=m.default,
            roles=dict(m.roles if roles is None else roles),
            temperature=m.temperature,
            max_tokens=m.max_tokens,
            api_base=m.api_base,
            concurrency=spec.execution.concurrency or 4,
            out=str(spec.output.out or "runs"),
            dataset=d.custom(),
            prices=spec.budget.table(),
            train_limit=d.train_limit,
            preset=spec.design.preset if preset is None else preset,
            timeout=m.timeout,
            fail_on_error=spec.execution.threshold,
            debias=spec.design.debias,
            splits=d.splits(),
            batch=spec.execution.batch,
            n_sampling=m.n_sampling,
            prompt_layout=m.prompt_layout,
            spec=spec.to_dict(),
        )

    def build_program(self, labels: Sequence[str], positions: Sequence[str] | None, lms: Any) -> CourtroomProgram:
        """The run's program on ``lms``: ``framework`` built with ``knobs``, or the saved :attr:`program`."""
        if self.program is None:
            from courtroom.programs import build_program

            return build_program(self.framework, labels, positions, knobs=self.knobs, lms=lms)
        from courtroom.saving import load_program, read_program_file

        path = self.program["path"]
        _, meta = read_program_file(path)
        if self.program.get("checksum") not in (None, meta.get("checksum")):
            raise ConfigError(f"{path} changed since this run started: restore it, or score the new file afresh")
        program = load_program(path, lms=lms)
        missing = [label for label in labels if label not in program.labels]
        if missing:
            raise ConfigError(
                f"{path} answers with labels {', '.join(program.labels)}; the data's {', '.join(missing)} "
                "is not among them: pass --labels in the program's label space"
            )
        return program

    def load(self, limit_flag: str = "--limit", short: str = "error") -> TaskData:
        """The examples the run evaluates (``limit_flag``, ``short``: see :func:`load_task`)."""
        return load_task(
            self.task,
            data=self.data,
            split=self.split,
            limit=self.limit,
            seed=self.seed,
            dataset=self.dataset,
            splits=self.splits,
            limit_flag=limit_flag,
            short=short,
        )
