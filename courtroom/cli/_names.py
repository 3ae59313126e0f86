"""The names a command line may use, checked before DSPy loads: a typo is refused in a blink.

The registries stay the truth (:data:`courtroom.programs.FRAMEWORKS`,
:data:`courtroom.programs.presets.PRESETS`, the tasks of :mod:`courtroom.data.catalog`), but
importing the frameworks' registry imports DSPy. A command line cannot register names of its own,
so in a CLI process the registries hold the built-in names below (tests/test_cli.py checks that
they agree) and those installed packages declare. The errors read as the registries' own.
"""

from __future__ import annotations

from courtroom.errors import ConfigError
from courtroom.spec import Experiment

FRAMEWORKS = (
    "jot",
    "courtroom-llm",
    "debate-feedback",
    "zero-shot",
    "few-shot",
    "cot",
    "self-consistency",
    "khan-debate",
    "parallel-vote",
    "reflexion",
    "settle",
)
"""The built-in frameworks and baselines, as :data:`courtroom.programs.FRAMEWORKS` names them."""

PRESETS = ("jot-paper", "courtroom-llm-early", "courtroom-llm-final", "debate-feedback-paper")
"""The paper presets, as :data:`courtroom.programs.presets.PRESETS` names them."""


def check_names(spec: Experiment) -> None:
    """Refuse an unknown framework, task or preset with the registry's own one-line error.

    A name an installed package declares (:mod:`courtroom._plugins`) is known too: its entry point
    is read, not imported, here.
    """
    design = spec.design
    for name in [design.framework, *design.frameworks]:
        if name is not None and name != "all" and name not in FRAMEWORKS:
            from courtroom import _plugins  # only for a name not built in: start-up reads no package metadata

            valid = sorted({*FRAMEWORKS, *_plugins.names("frameworks")})
            if name not in valid:
                raise ConfigError(f"unknown framework {name!r}: valid frameworks are {', '.join(valid)}")
    for name in design.presets:
        if name not in PRESETS:
            raise ConfigError(f"unknown preset {name!r}: valid presets are {', '.join(PRESETS)}")
    task = spec.data.task
    if task is not None and not spec.data.dataset:
        from courtroom.data.catalog import BUILTIN_TASKS

        tasks = {t.name for t in BUILTIN_TASKS}
        if task not in tasks:
            from courtroom import _plugins

            tasks |= set(_plugins.names("tasks"))
        if task not in tasks:
            raise ConfigError(f"unknown task {task!r}: valid tasks are {', '.join(sorted(tasks))}")
    metric = spec.design.metric
    if metric is not None and ":" not in metric and metric != "accuracy":  # MODULE:FUNCTION imports later
        from courtroom import _plugins

        installed = _plugins.names("metrics")
        if metric not in installed:
            raise ConfigError(
                f"unknown metric {metric!r}: use one of {', '.join(sorted({'accuracy', *installed}))}, "
                "or --metric MODULE:FUNCTION for your own"
            )
