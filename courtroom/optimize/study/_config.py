"""What defines a study: :class:`StudyConfig`, the objectives it may maximise, and Optuna's import.

The config is stored on the study as user attributes (:meth:`StudyConfig.identity` is what a
continued study must match). Both :mod:`courtroom.optimize.study` (creating and running studies)
and :mod:`courtroom.optimize.study._trials` (each trial, which the study module imports) use these, so the
trials never import the study module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from courtroom.errors import ConfigError
from courtroom.eval.status import DEFAULT_FAIL_ON_ERROR
from courtroom.optimize.study.spaces import Param, default_params

OBJECTIVES = {"accuracy": "accuracy", "f1": "macro_f1"}


@dataclass
class StudyConfig:
    """Everything that defines a study (stored on the study as user attributes)."""

    framework: str
    task: str = "boolean_expressions"
    trials: int = 20
    dev: int = 20
    train: int = 20
    data: str = "auto"
    seed: int = 0
    storage: str | None = None
    study_name: str | None = None
    workers: int = 1
    objective: str = "accuracy"
    cost_objective: bool = False
    cost: str = "calls"
    """Cost per example: ``calls``, ``tokens`` or ``dollars`` (priced by :mod:`courtroom.cost.bill`:
    LiteLLM's table, ``prices`` winning); a study across designs defaults to tokens or dollars."""
    prices: dict[str, list[float]] | None = None
    """``--prices``: the user's price table (model -> input, output dollars per 1M tokens)."""
    space: dict[str, str] = field(default_factory=dict)
    """Search-space overrides: name -> ``LOW:HIGH`` or ``a,b``."""
    knobs: dict[str, Any] = field(default_factory=dict)
    """Knobs every trial runs with that the space does not search (a ``--preset``'s and ``--set``'s)."""
    preset: str | None = None
    """The paper preset the study runs (its knobs are in ``space`` and ``knobs``; its role temperatures apply)."""
    models: list[str] = field(default_factory=list)
    """Model names to choose from per role (several: a per-role model choice is searched)."""
    roles: dict[str, str] = field(default_factory=dict)
    search_temperature: bool = False
    temperature: float | None = None
    max_tokens: int | None = None
    api_base: str | None = None
    timeout: float | None = None
    """Seconds per LM request (None: the model's default)."""
    n_sampling: bool | None = None
    """``--n-sampling`` (:mod:`courtroom.models.sampling`; None: ``$COURTROOM_N_SAMPLING``); answers do not change."""
    prompt_layout: str | None = None
    """``--prompt-layout`` (:mod:`courtroom.models._layout`; None: ``$COURTROOM_PROMPT_LAYOUT``)."""
    concurrency: int = 4
    batch: bool = False
    """``--batch``: each trial's scoring (and the chosen trials' test scoring) goes through the provider's
    batch API (:mod:`courtroom.models.batch`); a trial's compile stays live. Answers do not depend on it."""
    chunks: int = 4
    """Blocks of dev cases per trial: the race (or the pruner) looks after each but the last."""
    prune: bool = True
    pruner: str = "race"
    """How a trial is stopped early: ``race`` (paired with the incumbent on the same dev cases,
    :mod:`courtroom.optimize.study.race`) or ``median`` (Optuna's median pruner)."""
    race_calls: int | None = None
    """A cap on the LM requests the study sends, trials and the race's extra cases for the configurations
    still tied with the best together, earlier sessions included (:mod:`courtroom.cost.race_cap`; None:
    no cap, the extra cases spend what the race's stops saved; :mod:`courtroom.optimize.study.extend`)."""
    prefer: str | None = None
    """Which configuration of the set tied with the best is exported and tested: ``best`` or ``cheapest``
    (None: cheapest with a cost objective, else best; :mod:`courtroom.optimize.study.tied`)."""
    fail_on_error: float = DEFAULT_FAIL_ON_ERROR
    """A trial whose failed examples exceed this fraction stops the study (:class:`TooManyFailures`)."""
    dataset: dict[str, Any] | None = None
    """:func:`courtroom.data.tasks.custom_task` arguments for the user's own dataset."""
    splits: dict[str, Any] | None = None
    """Split sizes and splits given as their own files (:func:`courtroom.data.tasks.load_splits`)."""
    spec: dict[str, Any] | None = None
    """The experiment spec the study came from, as recorded on it."""

    @property
    def name(self) -> str:
        """The study name (default ``{framework}-{task}``, in characters a folder name may hold)."""
        return self.study_name or _portable(f"{self.framework}-{self.task}")

    def paper_defaults(self, space: Sequence[Param]) -> list[dict[str, Any]]:
        """The trials enqueued when the study is created: the paper's configuration."""
        return [default_params(self.framework, space)]

    def fixed_for(self, framework: str) -> tuple[dict[str, Any], str | None]:
        """(knobs held outside the space, preset) of ``framework``'s trials."""
        return dict(self.knobs), self.preset

    def identity(self) -> dict[str, Any]:
        """What a continued study must match: everything that changes a trial's answers or score."""
        return _jsonable(
            {
                "framework": self.framework,
                "task": self.task,
                "objective": self.objective,
                "cost_objective": self.cost_objective,
                "--data": self.data,
                "--dataset": self.dataset,
                "--split-sizes": self.splits,
                "--seed": self.seed,
                "--train-limit": self.train,
                "--dev-limit": self.dev,
                "--lm": list(self.models),
                "--role": dict(self.roles),
                "--temperature": self.temperature,
                "--max-tokens": self.max_tokens,
                "--search-temperature": self.search_temperature,
                "--space": dict(self.space),
                "--set": dict(self.knobs),
                "--preset": self.preset,
            }
            # A cost in another unit than calls (priced, or tokens) must stay that unit when continued.
            | ({"cost": self.cost} if self.cost != "calls" else {})
        )


def _optuna() -> Any:
    try:
        import optuna
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ConfigError("studies need optuna: pip install 'optuna>=5,<6'") from exc
    # ERROR: a failed trial is shown (and counted) by the study command; Optuna would add a traceback.
    from courtroom.reporting.logs import optuna_level

    optuna.logging.set_verbosity(optuna_level())
    return optuna


def _portable(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")


def _jsonable(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value, default=str))
