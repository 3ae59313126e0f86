"""Every option of the experiment spec, declared once, and the decorator that gives commands theirs.

:data:`OPTIONS` is the one table: each option's flag, type, help, panel and the commands that
take it (with that command's default where it differs). :func:`experiment` stacks the options of
one command on its function (as inspect_ai's ``common_options`` does) and hands the function one
:class:`~courtroom.spec.Experiment` built from them, so no command declares or forwards an
option by hand. The same option means the same thing in every command that takes it.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from courtroom.cli import _config_file
from courtroom.cli._names import check_names
from courtroom.cli._values import parse_sets, parse_value
from courtroom.errors import ConfigError
from courtroom.spec import Experiment
from courtroom.spec._sections import check_url

DATA_PANEL = "Data"
MODELS_PANEL = "Models"
FRAMEWORK_PANEL = "Framework"
OUTPUT_PANEL = "Output"
EXECUTION_PANEL = "Execution"
BUDGET_PANEL = "Budget and cost"
STUDY_PANEL = "Study"

ALL = ("run", "compare", "compile", "study")
"""The four experiment commands."""
SCORED = (*ALL, "score")
"""The commands that read labelled data (``score``: a saved program on it) and take the budget options."""


@dataclass
class Option:
    """One option: its flag(s), type, help, panel, and the commands that take it (with their defaults)."""

    name: str
    flags: tuple[str, ...]
    type: Any
    help: str
    panel: str
    commands: dict[str, Any]
    """Command -> its default."""
    extra: dict[str, Any] = field(default_factory=dict)
    """More ``typer.Option`` settings (min, max, metavar, show_default, ...)."""
    argument: bool = False


def _o(name: str, flags: str, type_: Any, help_: str, panel: str, commands: Any, **extra: Any) -> Option:
    cmds = commands if isinstance(commands, dict) else dict.fromkeys(commands)
    return Option(name, tuple(flags.split()), type_, help_, panel, cmds, extra)


STR, INT, FLOAT, LIST, BOOL = str | None, int | None, float | None, list[str] | None, bool | None
SPEC_COMMANDS = (*ALL, "predict", "score")

OPTIONS: list[Option] = [
    # Data
    _o("task", "--task", STR, "Registered task (see `courtroom tasks`).", DATA_PANEL, SCORED,
       show_default="boolean_expressions"),
    _o("data", "--data", str, "Where a registered task's rows come from: auto | generate | hub | PATH.", DATA_PANEL,
       dict.fromkeys(SCORED, "auto")),
    _o("dataset", "--dataset", STR, "Your own data instead of --task: a CSV, JSONL, JSON or Parquet file, a Hub id, "
       "or a task file (YAML) naming the fields and labels.", DATA_PANEL, SCORED, metavar="FILE|HUB_ID"),
    _o("text_field", "--text-field", STR, "--dataset (predict: --input) field(s) that make the case text, "
       "comma-separated.", DATA_PANEL, (*SCORED, "predict")),
    _o("label_field", "--label-field", STR, "--dataset (predict: --input) field holding the label.", DATA_PANEL,
       (*SCORED, "predict")),
    _o("labels", "--labels", STR, "--dataset label space, comma-separated (integer labels index it).", DATA_PANEL,
       SCORED),
    _o("dataset_config", "--dataset-config", STR, "Hub config name of --dataset.", DATA_PANEL, SCORED),
    _o("hub_split", "--hub-split", str, "Hub split of --dataset re-split into train/dev/test.", DATA_PANEL,
       dict.fromkeys(SCORED, "train")),
    _o("train_data", "--train-data", STR, "The train split as its own file (or, with a Hub --dataset, its split "
       "name).", DATA_PANEL, SCORED, metavar="FILE|SPLIT"),
    _o("dev_data", "--dev-data", STR, "The dev split as its own file (or Hub split name).", DATA_PANEL, SCORED,
       metavar="FILE|SPLIT"),
    _o("test_data", "--test-data", STR, "The test split as its own file (or Hub split name).", DATA_PANEL, SCORED,
       metavar="FILE|SPLIT"),
    _o("split_sizes", "--split-sizes", STR, "Seeded split sizes TRAIN,DEV,TEST: fractions (0.6,0.2,0.2) or counts "
       "(24,8,8).", DATA_PANEL, SCORED, show_default="0.2,0.2,0.6"),
    _o("seed", "--seed", int, "Seed for data generation, splits and sampling.", DATA_PANEL, dict.fromkeys(SCORED, 0)),
    _o("split", "--split", str, "The split evaluated: train | dev | test.", DATA_PANEL,
       {"run": "test", "compare": "test", "score": "test"}),
    _o("limit", "--limit", INT, "Evaluation examples: the first N of the split.", DATA_PANEL,
       ("run", "compare", "score"),
       min=1, show_default="all"),
    _o("train_limit", "--train-limit", INT, "Training examples: fit precedents, the reliability assistant, demos "
       "(or compile) on at most N.", DATA_PANEL, {"run": None, "compare": None, "compile": 20, "study": 20}, min=1,
       show_default="all"),
    _o("dev_limit", "--dev-limit", INT, "Dev examples: scored before and after compiling, or by each study trial.",
       DATA_PANEL, {"compile": 20, "study": 20}, min=1),
    _o("test_limit", "--test-limit", INT, "Held-out test examples: compile scores the starting and the optimized "
       "program on the first N (default 50); a study scores its chosen trial (or every Pareto point) on them, "
       "beside the dev score that chose it (default: the dev size; off under --max-calls/--max-cost unless given). "
       "0: none.", DATA_PANEL, ("compile", "study"), min=0, show_default="compile: 50; study: --dev-limit"),
    _o("exclude_seen", "--exclude-seen", bool, "Leave out the cases whose text is also in the program's train or "
       "dev split (without it they are scored, with a warning, and counted in the summary).", DATA_PANEL,
       {"score": False}),
    # Models
    _o("lm", "--lm", LIST, "Default model for every role (a dspy.LM string, or 'local'); in a study, repeat it to "
       "let the study choose a model per role.", MODELS_PANEL, SPEC_COMMANDS, show_default="local"),
    _o("role", "--role", LIST, "ROLE=MODEL override (MODEL may be a panel a,b); repeatable.", MODELS_PANEL,
       SPEC_COMMANDS),
    _o("temperature", "--temperature", FLOAT, "Sampling temperature for all models (0-2).", MODELS_PANEL,
       SPEC_COMMANDS, min=0.0, max=2.0, show_default="the framework's"),
    _o("max_tokens", "--max-tokens", INT, "Max tokens per model answer.", MODELS_PANEL, SPEC_COMMANDS, min=1),
    _o("api_base", "--api-base", STR, "Base URL of an OpenAI-compatible server (http or https).", MODELS_PANEL,
       SPEC_COMMANDS, metavar="URL"),
    _o("timeout", "--timeout", FLOAT, "Seconds one LM request may take before it is retried, then failed.",
       MODELS_PANEL, SPEC_COMMANDS, show_default="30; 300 for local"),
    _o("n_sampling", "--n-sampling/--no-n-sampling", BOOL, "k samples of one prompt in one request (n) where the "
       "model takes it: the prompt is billed once.", EXECUTION_PANEL, SPEC_COMMANDS,
       show_default="on; env: $COURTROOM_N_SAMPLING"),
    _o("prompt_layout", "--prompt-layout", STR, "Prompts for a provider's cache: classic (DSPy's) | cache (a case's "
       "requests start alike) | auto (per case, the cheaper by the provider's prices).", EXECUTION_PANEL,
       SPEC_COMMANDS, metavar="classic|cache|auto",
       show_default="auto; classic with --preset; env: $COURTROOM_PROMPT_LAYOUT"),
    _o("prompt_lm", "--prompt-lm", STR, "Model for the optimizer's own proposals.", MODELS_PANEL, ("compile",),
       show_default="the judge's model"),
    _o("search_temperature", "--search-temperature", bool, "Also search each role's temperature in [0, 1].",
       MODELS_PANEL, {"study": False}),
    # Framework
    _o("frameworks", "--frameworks", STR, "Several designs, comma-separated (study: or all; the design is then a "
       "searched parameter).", FRAMEWORK_PANEL, ("compare", "study")),
    _o("preset", "--preset", LIST, "A paper's configuration in one word (see `courtroom frameworks`); compare: one "
       "per framework it names. --set and --space win.", FRAMEWORK_PANEL, ALL),
    _o("sets", "--set", LIST, "Framework knob KEY=VALUE (compare: also FRAMEWORK.KEY=VALUE; study: the same in "
       "every trial); repeatable.", FRAMEWORK_PANEL, ("run", "compare", "compile", "study")),
    _o("loops", "--loops", INT, "JoT rounds (the knob n_loops; study: fixed in every trial).", FRAMEWORK_PANEL,
       ("run", "compare", "compile", "study"), min=1),
    _o("suite", "--suite", STR, "Run a paper's comparison table (see `courtroom frameworks`) instead.",
       FRAMEWORK_PANEL, ("compare",)),
    _o("suite_tasks", "--suite-tasks", STR, "With --suite: only these of its tasks, comma-separated.",
       FRAMEWORK_PANEL, ("compare",)),
    _o("debias", "--debias", STR, "swap: run each case again with the sides exchanged and report position "
       "consistency; swap-vote: also make the verdict the two orders' agreement.", FRAMEWORK_PANEL,
       ("run", "compare")),
    _o("optimizer", "--optimizer", str, "DSPy optimizer: labeled | bootstrap | bootstrap-rs | knn | mipro | copro | "
       "gepa.", FRAMEWORK_PANEL, {"compile": "bootstrap"}),
    _o("compile_with", "--compile", STR, "Compile each trial's program on the train split with this optimizer "
       "(labeled, bootstrap, mipro, ...).", FRAMEWORK_PANEL, ("study",)),
    _o("opt", "--opt", LIST, "Optimizer setting KEY=VALUE (e.g. max_bootstrapped_demos=2); repeatable.",
       FRAMEWORK_PANEL, ("compile", "study")),
    _o("metric", "--metric", STR, "What each case scores: a DSPy metric(example, prediction, trace=None) by name "
       "(accuracy, or an installed package's) or MODULE:FUNCTION; accuracy is then its mean.", FRAMEWORK_PANEL,
       SCORED, metavar="NAME|MODULE:FUNCTION", show_default="accuracy"),
    _o("keep_better", "--keep-better", bool, "Save the starting program instead when the optimized one scores "
       "lower on dev.", FRAMEWORK_PANEL, {"compile": False}),
    _o("matched_baselines", "--matched-baselines/--no-matched-baselines", bool, "Add a majority-vote row per "
       "framework at the same calls (or tokens) per example.", BUDGET_PANEL, {"compare": True, "score": True}),
    _o("baseline", "--baseline", str, "Majority-vote baseline: self-consistency | parallel-vote.", BUDGET_PANEL,
       {"compare": "self-consistency", "score": "self-consistency"}),
    _o("match", "--match", str, "What the matched baseline matches: calls | tokens.", BUDGET_PANEL,
       {"compare": "calls", "score": "calls"}),
    # Study
    _o("space", "--space", LIST, "Narrow a parameter: NAME=LOW:HIGH or NAME=a,b; repeatable.", STUDY_PANEL,
       ("study",)),
    _o("objective", "--objective", str, "accuracy | f1", STUDY_PANEL, {"study": "accuracy"}),
    _o("cost_objective", "--cost-objective", bool, "Also minimise the cost per example (NSGA-II; reports the Pareto "
       "front).", STUDY_PANEL, {"study": False}),
    _o("cost_unit", "--cost-unit", STR, "calls | tokens | dollars.", STUDY_PANEL, ("study",),
       show_default="tokens; dollars with --prices"),
    _o("trials", "--trials", int, "Trials the study holds when done, counting earlier runs and other workers (a "
       "continued study runs what it still owes; 0: only create the study).", STUDY_PANEL,
       {"study": 20}, min=0),
    _o("storage", "--storage", STR, "sqlite:///FILE.db, journal:FILE, or postgresql://...", STUDY_PANEL,
       ("study",), show_default="sqlite:///courtroom-studies.db"),
    _o("study_name", "--study-name", STR, "Name of the study in --storage.", STUDY_PANEL, ("study",),
       show_default="FRAMEWORK-TASK, or designs-TASK"),
    _o("workers", "--workers", int, "Trials run at once in this process.", STUDY_PANEL, {"study": 1}, min=1),
    _o("no_prune", "--no-prune", bool, "Evaluate every trial fully.", STUDY_PANEL, {"study": False}),
    _o("pruner", "--pruner", str, "How a trial stops early: race (paired with the best so far on the same dev cases) "
       "| median (Optuna's median pruner).", STUDY_PANEL, {"study": "race"}, metavar="race|median"),
    _o("prefer", "--prefer", STR, "Which of the configurations tied with the best is exported and tested: best | "
       "cheapest.", STUDY_PANEL, ("study",), show_default="cheapest with --cost-objective, else best",
       metavar="best|cheapest"),
    _o("race_calls", "--race-calls", INT, "A cap on the LM requests the study's trials and the race's extra dev "
       "cases send together, earlier sessions included: what the trials leave buys the configurations still tied "
       "with the best more cases beyond --dev-limit (default: no cap; the extra cases spend what the race's stops "
       "saved).", STUDY_PANEL, ("study",), min=1),
    _o("show_repeats", "--show-repeats", bool, "List the trials that repeated or continued a configuration too.",
       STUDY_PANEL, {"study": False}),
    # Output
    _o("out", "-o --out", STR, "Where results go.", OUTPUT_PANEL, {"run": "runs", "compare": "comparisons",
       "compile": "program.json", "study": None, "predict": None, "score": "runs"}),
    _o("show", "--show", INT, "Print the transcript of example i afterwards.", OUTPUT_PANEL, ("run",), min=0),
    _o("ambiguity_k", "--ambiguity-k", int, "courtroom-llm: hear each case K times and print the ambiguity split "
       "(0: off).", OUTPUT_PANEL, {"run": 0, "compare": 0}, min=0),
    _o("theta", "--theta", float, "Ambiguous if D_rate <= theta.", OUTPUT_PANEL, {"run": 0.5, "compare": 0.5},
       min=0.0, max=1.0),
    _o("format", "--format", str, "What stdout gets: table (the key columns, at the terminal's width) | md | csv "
       "| json (the whole table; other lines go to stderr).", OUTPUT_PANEL,
       dict.fromkeys(("run", "compare", "compile", "study", "score", "show", "runs"), "table"),
       metavar="table|md|csv|json"),
    _o("track", "--track", STR, "Also log the results to MLflow: a tracking server (http://HOST:5000) or store "
       "(sqlite:///mlflow.db); env: $MLFLOW_TRACKING_URI. Needs courtroom[mlflow].", OUTPUT_PANEL, SCORED,
       metavar="URI"),
    _o("trace", "--trace", bool, "With --track: record every module and LM call as an MLflow trace (DSPy autolog).",
       OUTPUT_PANEL, dict.fromkeys(SCORED, False)),
    _o("export_best", "--export-best", STR, "Write the best config (or, with --compile, the best program).",
       OUTPUT_PANEL, ("study",)),
    # Execution
    _o("concurrency", "--concurrency", INT, "LM requests in flight at once, in all (examples, trials, cases).",
       EXECUTION_PANEL, SPEC_COMMANDS, min=1, show_default="4; on --resume, the run's"),
    _o("batch", "--batch", bool, "Send requests through the provider's batch API: about half price, answers "
       "in minutes to hours; each round of every case is one batch (compile's optimizers stay live).",
       EXECUTION_PANEL, dict.fromkeys(SCORED, False)),
    _o("cancel_batches", "--cancel-batches", bool, "With --resume: cancel the batches the folder has in flight "
       "at the provider, then stop.", EXECUTION_PANEL, {"run": False, "compare": False}),
    _o("repeats", "--repeats", int, "Runs per framework; report mean, sd and 95% CI.", EXECUTION_PANEL,
       {"run": 1, "compare": 1, "score": 1}, min=1),
    _o("fail_on_error", "--fail-on-error", FLOAT, "Exit non-zero when more than this fraction of examples "
       "(predict: cases) failed (1: never).", EXECUTION_PANEL, SPEC_COMMANDS, show_default="0.1"),
    # Budget
    _o("dry_run", "--dry-run", bool, "Print the LM calls, tokens and dollars this would spend; send nothing.",
       BUDGET_PANEL, dict.fromkeys(SCORED, False)),
    _o("max_calls", "--max-calls", INT, "Start no new example (or trial) that could take this command's LM requests "
       "past N (with --resume: N more, what earlier sessions sent not subtracted).",
       BUDGET_PANEL, SCORED, metavar="N"),
    _o("max_cost", "--max-cost", FLOAT, "Start no new example (or trial) that could take this command's spending "
       "past DOLLARS (with --resume: DOLLARS more).",
       BUDGET_PANEL, SCORED, metavar="DOLLARS"),
    _o("prices", "--prices", STR, "Price table (JSON or CSV): model -> input, output dollars per 1M tokens.",
       BUDGET_PANEL, SCORED, metavar="FILE"),
]  # fmt: skip

CONFIG = Annotated[
    str | None,
    typer.Option(
        "--config",
        metavar="FILE",
        is_eager=True,
        expose_value=False,
        callback=_config_file.load,
        help="Options from a YAML, TOML or JSON file (keys: the flags' names, e.g. limit: 20); flags win.",
    ),
]
"""``--config`` of the commands without an experiment spec (show, runs, report)."""


def _plain(help_: str) -> str:
    """Help text shown as written: rich would read ``courtroom[mlflow]`` as markup and drop ``[mlflow]``."""
    from rich.markup import escape

    return escape(help_)


def _format_option() -> Any:
    option = next(o for o in OPTIONS if o.name == "format")
    return typer.Option(*option.flags, help=_plain(option.help), rich_help_panel=option.panel, **option.extra)


FORMAT = Annotated[str, _format_option()]
"""``--format`` of the commands without an experiment spec (show, runs), from its one entry in :data:`OPTIONS`."""

REPORT_OUT = Annotated[Path, typer.Option("-o", "--out", help="The HTML file to write.")]
"""``--out`` of ``courtroom report`` (a file, as for compile and predict): the same flag, the same meaning."""

OUT_HELP = {
    "run": "Folder that receives the run folder.",
    "compare": "Folder that receives the comparison folder.",
    "compile": "Program file to write.",
    "study": "Report folder.",
    "predict": "Write JSONL results to this file.",
    "score": "Folder that receives the score folder.",
}
OUT_DEFAULT = {"study": "studies/NAME", "predict": "stdout"}
PREDICT_HELP = {"lm": "Model for every role instead of the program's saved models (a dspy.LM string, or 'local')."}
"""``predict``'s help where it differs from the other commands': the program file names its models."""

BY_NAME = {o.name: o for o in OPTIONS}

SCORE_DEFAULTS = {"task": "the data the program was compiled on", "lm": "the program's saved models",
                  "split_sizes": "the program's; a new --dataset: 0,0,1 (every row)"}  # fmt: skip
"""What ``score`` takes when an option is left out: the program's own, not every command's default."""


def _annotated(option: Option, command: str) -> Any:
    extra = dict(option.extra)
    if option.commands[command] is not None:
        extra.pop("show_default", None)  # the real default is shown
    help_ = OUT_HELP[command] if option.name == "out" else option.help
    if option.name == "out" and command in OUT_DEFAULT:
        extra["show_default"] = OUT_DEFAULT[command]
    if option.name == "task" and command == "compile":
        extra["show_default"] = "the recipe's, else boolean_expressions"
    if command == "score" and option.name in SCORE_DEFAULTS:
        extra["show_default"] = SCORE_DEFAULTS[option.name]
    if command == "predict" and option.name in PREDICT_HELP:  # predict runs on the program's saved models
        help_, extra["show_default"] = PREDICT_HELP[option.name], "the program's models"
    info = typer.Option(*option.flags, help=_plain(help_), rich_help_panel=option.panel, **extra)
    return Annotated[option.type, info]


def _config_option(command: str) -> inspect.Parameter:
    callback = _config_file.recipe_or_load if command == "compile" else _config_file.load
    help_ = "Options from a YAML, TOML or JSON file (keys: the flags' names, e.g. limit: 20); flags win."
    if command == "compile":
        help_ = "best.json from `courtroom study --export-best`, or " + help_[0].lower() + help_[1:]
    info = typer.Option("--config", metavar="FILE", is_eager=True, callback=callback, help=help_)
    return inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[STR, info])


def experiment(command: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command its options from :data:`OPTIONS` and call it with ``spec=Experiment``.

    The decorated function declares only what is its own (arguments, ``--resume``, ...) and a
    ``spec`` parameter; the options of the table are added to its signature for typer, gathered
    after parsing, built into one :class:`Experiment` and validated before the function runs.
    """

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        hints = typing.get_type_hints(func, include_extras=True)
        own = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in inspect.signature(func).parameters.values()
            if p.name != "spec"
        ]
        mine = [o for o in OPTIONS if command in o.commands]
        added = [
            inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.commands[command],
                              annotation=_annotated(o, command))
            for o in mine
        ]  # fmt: skip
        positional = [p for p in own if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        keyword = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own if p not in positional]
        context = inspect.Parameter("spec_ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
        params = [context, *positional, _config_option(command), *added, *keyword]
        if command == "compile":
            params = [p for p in params if not (p.name == "config" and p in own)]
        names = {o.name for o in mine}

        @functools.wraps(func)
        def wrapper(**kwargs: Any) -> Any:
            ctx = kwargs.pop("spec_ctx")
            values = {n: kwargs.pop(n) for n in names}
            recipe = kwargs.pop("config", None)
            given = {n for n in names if _given(ctx, n)}
            listed = kwargs.get("listed_frameworks")  # compare's FRAMEWORKS by position, as compare("jot,cot")
            if listed is not None:
                if getattr(ctx.get_parameter_source("frameworks"), "name", None) == "COMMANDLINE":  # --config's yield
                    raise ConfigError(f"frameworks given twice ({listed} and --frameworks): give them once")
                values["frameworks"], given = listed, given | {"frameworks"}
            spec = from_flags(command, values, given, framework=kwargs.get("framework"))
            check_names(spec)  # before anything imports DSPy: a typo costs no start-up
            if "config" in inspect.signature(func).parameters:
                kwargs["config"] = recipe
            return func(spec=spec, **kwargs)

        del wrapper.__wrapped__  # typer reads the signature below, not the function's own
        wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate


def _given(ctx: Any, name: str) -> bool:
    """Given on the command line or in --config (typer vendors click: compare the source by name)."""
    return getattr(ctx.get_parameter_source(name), "name", None) in ("COMMANDLINE", "DEFAULT_MAP", "ENVIRONMENT")


def from_flags(
    command: str, values: dict[str, Any], given: set[str] | None = None, framework: str | None = None
) -> Experiment:
    """The :class:`Experiment` of a command's parsed flags (``values`` by option name), validated."""
    v = dict(values)
    flat: dict[str, Any] = {}
    direct = ("task", "dataset", "label_field", "dataset_config", "hub_split", "train_data", "dev_data", "test_data",
              "seed", "split", "limit", "train_limit", "dev_limit", "temperature", "max_tokens", "api_base",
              "timeout", "n_sampling", "prompt_layout", "prompt_lm", "search_temperature", "suite", "debias",
              "optimizer", "matched_baselines",
              "baseline", "match", "objective", "cost_objective", "cost_unit", "trials", "storage", "study_name",
              "workers", "out", "show", "format", "ambiguity_k", "theta", "export_best", "concurrency", "repeats",
              "batch", "cancel_batches", "fail_on_error", "dry_run", "max_calls", "max_cost", "prices",
              "test_limit", "keep_better", "track", "trace", "exclude_seen", "pruner", "prefer",
              "race_calls", "show_repeats", "metric")  # fmt: skip
    for key in direct:
        if key in v:
            flat[key] = v[key]
    if "data" in v:
        flat["source"] = v["data"]
    for key in ("text_field", "labels", "frameworks", "suite_tasks"):
        if v.get(key) is not None:
            flat[key] = [x.strip() for x in str(v[key]).split(",") if x.strip()]
    if v.get("lm"):
        flat["lm"] = list(v["lm"])
    if v.get("role"):
        flat["roles"] = parse_roles(v["role"])
    if v.get("preset"):
        flat["presets"] = list(v["preset"])
    knobs = raw_sets(v.get("sets"))
    if v.get("loops") is not None:
        knobs["n_loops"] = v["loops"]
    if knobs:
        flat["knobs"] = knobs
    if v.get("opt"):
        flat["optimizer_settings"] = raw_sets(v["opt"], flag="--opt")
    if v.get("compile_with") is not None:
        flat["optimizer"] = v["compile_with"]
    if v.get("space"):
        flat["space"] = parse_space(v["space"])
    if "no_prune" in v:
        flat["prune"] = not v["no_prune"]
    if v.get("split_sizes") is not None:
        flat["split_sizes"] = parse_sizes(v["split_sizes"])
    if framework is not None:
        flat["framework"] = framework
    if v.get("api_base") is not None:
        try:
            check_url(v["api_base"])
        except ConfigError as exc:
            raise typer.BadParameter(str(exc).split(": ", 1)[1], param_hint="'--api-base'") from None
    spec = Experiment.build(command, **flat)
    renamed = {"data": "source", "role": "roles", "preset": "presets", "sets": "knobs", "loops": "knobs",
               "opt": "optimizer_settings", "compile_with": "optimizer", "no_prune": "prune"}  # fmt: skip
    spec.given = frozenset(renamed.get(n, n) for n in (given or set())) | ({"framework"} if framework else set())
    return spec.validate()


def parse_roles(items: list[str]) -> dict[str, str]:
    """``ROLE=MODEL`` strings to a dict (role names are checked against the framework later)."""
    out = {}
    for item in items:
        role, sep, model = item.partition("=")
        if not sep or not role.strip() or not model.strip():
            raise ConfigError(f"malformed --role {item!r}: write ROLE=MODEL, e.g. judge=openai/gpt-4o")
        out[role.strip()] = model.strip()
    return out


def raw_sets(items: list[str] | None, flag: str = "--set") -> dict[str, Any]:
    """``KEY=VALUE`` strings to a dict of texts: typed once the framework's (or optimizer's) defaults are known."""
    example = {"--set": "--set n_judges=5", "--opt": "--opt max_bootstrapped_demos=2"}[flag]
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"malformed {flag} {item!r}: write KEY=VALUE, e.g. {example}")
        out[key.strip()] = value.strip()
    return out


def parse_space(items: list[str]) -> dict[str, str]:
    """``NAME=LOW:HIGH`` or ``NAME=a,b`` strings to a dict."""
    out = {}
    for item in items:
        name, sep, spec = item.partition("=")
        if not sep or not name.strip() or not spec.strip():
            raise ConfigError(f"malformed --space {item!r}: write NAME=LOW:HIGH or NAME=a,b (e.g. n_loops=1:3)")
        out[name.strip()] = spec.strip()
    return out


def parse_sizes(text: str) -> list[float]:
    """``--split-sizes 24,8,8`` or ``0.6,0.2,0.2`` to numbers (checked by the spec)."""
    try:
        return [float(x) for x in str(text).split(",")]
    except ValueError:
        raise ConfigError(
            f"--split-sizes {text!r}: write TRAIN,DEV,TEST as fractions (0.6,0.2,0.2) or counts (24,8,8)"
        ) from None


__all__ = ["OPTIONS", "Option", "experiment", "from_flags", "parse_sets", "parse_value"]
