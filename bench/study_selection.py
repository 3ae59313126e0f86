"""How often a study's choice holds the true optimum, and what it costs: today's rule against racing.

Five spaces whose truth is known, on cached oracle fakes (``courtroom.testing.oracle_lm``, every
answer right with a set probability, independently per call) and generated boolean expressions:

* ``vote``: parallel-vote, ``n_models`` 1..5 of one model right with p = 0.7. A majority of n votes
  (a tie broken by the first vote) is right with a probability known in closed form: 0.700, 0.700,
  0.784, 0.784, 0.837. The optimum is n = 5; n = 1 and 2 are 0.137 below it. Configurations share
  calls (n = 5 asks n = 4's four votes again: the cache answers them).
* ``models``: parallel-vote with one vote, the model chosen among five whose answers are right with
  0.60, 0.65, 0.70, 0.75 and 0.80. No two configurations share a call. The optimum is the 0.80 model.
* ``learnable``: a study across designs, zero-shot or few-shot (labelled demos), each on one of three
  learnable oracles (``courtroom.testing.learnable_lm``) right with 0.70, 0.75 and 0.60 alone and
  0.80, 0.65 and 0.78 with demos in the prompt. No two configurations share a call. The optimum
  is few-shot on the first (0.80); few-shot on the third (0.78) and zero-shot on the second (0.75)
  are close.
* ``spread``: the learnable space with the spread of real instruction variants, some clearly bad:
  0.70, 0.60 and 0.50 alone, 0.80, 0.76 and 0.55 with demos. The optimum (0.80) has one close
  rival (0.76) and one at 0.10 below; the other three are 0.20 or more below.
* ``flat``: parallel-vote with one or two votes of one of three models, each right with 0.7: six
  configurations, every one right with 0.7 (two votes that disagree fall back to the first); one
  vote costs half as many calls. Studied with a cost objective: the cheapest should be exported.

A dev *budget* in LM calls sets the dev split: ``budget / calls per dev case over the whole space``
(5, 5, 6 and 6), so both rules see the same cases and every configuration can be scored on all of them.
Each seed draws new cases, new oracle draws and a new sampler; each rule runs its own study with
its own cache. Per rule and budget, over the seeds:

* **holds optimum**: the share of studies whose set holds the true optimum (today's rule: the one
  chosen trial; racing: the set tied with the best), with its 95% Wilson interval;
* **excludes n=1,2** (vote): the share whose set holds neither configuration 0.137 below the optimum;
* **holds all** (flat): the share whose set holds every configuration;
* **size**: the set's mean size; **regret**: the optimum's true accuracy minus the exported
  configuration's (mean, with a 95% t interval); **cheapest** (flat): the share exporting a one-vote
  configuration; **calls**: LM requests sent per study (mean; the votes of one prompt go as one
  request with ``n`` where the model takes it, so they are fewer than the budget's calls).

Today's rule is the median pruner and the trial with the best dev score (a cost objective: the
highest-scoring point of the Pareto front); racing is ``--pruner race`` and the tied set
(``courtroom.optimize.study.tied``), exporting the best (flat: the cheapest) of it, the set given
the reserve cases (the pool after the dev cases) its stops paid for
(``courtroom.optimize.study.extend``). **race=** is racing at today's requests, seed by seed: it
starts on ``--start`` (0.25) of the dev cases and spends what its trials leave of the requests
today's rule sent on that seed (``race_calls``) on reserve cases for the set; below each budget a
line gives race= minus today's regret, paired by seed, with its 95% t interval.

Run: ``.venv/bin/python bench/study_selection.py [--budgets 100 400 1600] [--seeds 20]
[--spaces vote models flat learnable spread] [--start 0.25]``.
"""

from __future__ import annotations

import argparse
import atexit
import math
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

LABELS = ["True", "False"]
RULES = ("today", "race")


def majority(n: int, p: float, tie: float = 0.5) -> float:
    """P(a majority of n independent votes, each right with p, is right); a tie is right with ``tie``."""
    win = sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(n // 2 + 1, n + 1))
    if n % 2 == 0:
        win += math.comb(n, n // 2) * (p * (1 - p)) ** (n // 2) * tie
    return win


@dataclass
class Space:
    """A space with a known truth: its study's knobs, its models, and each configuration's true accuracy."""

    name: str
    per_case: int
    """LM calls per dev case over every configuration (what the cache does not answer twice)."""
    space: dict[str, str]
    accuracy: dict[str, float] = field(default_factory=dict)
    """Model name -> its answers' accuracy (one model: ``default``)."""
    cost_objective: bool = False
    demos: dict[str, float] = field(default_factory=dict)
    """Learnable models: model name -> its accuracy with demos in its prompt (few-shot); a study across designs."""

    def truth(self, config: dict[str, Any]) -> float:
        """The true accuracy of ``config`` (a trial's parameters; a study across designs: with ``design``)."""
        n = int(config.get("n_models", 1))
        model = str(config.get("model:classifier", "default")).split("-s")[0]
        if self.demos:
            return self.demos[model] if config.get("design") == "few-shot" else self.accuracy[model]
        p = self.accuracy[model]
        return majority(n, p)  # a tie is broken by the first vote: right half the time


SPACES = {
    "vote": Space("vote", 5, {"n_models": "1:5"}, {"default": 0.7}),
    "models": Space("models", 5, {"n_models": "1"}, {"m60": 0.60, "m65": 0.65, "m70": 0.70, "m75": 0.75, "m80": 0.80}),
    "flat": Space("flat", 6, {"n_models": "1:2"}, {"a70": 0.7, "b70": 0.7, "c70": 0.7}, cost_objective=True),
    "learnable": Space(
        "learnable", 6, {}, {"a70": 0.70, "b75": 0.75, "c60": 0.60}, demos={"a70": 0.80, "b75": 0.65, "c60": 0.78}
    ),
    "spread": Space(
        "spread", 6, {}, {"a70": 0.70, "b60": 0.60, "c50": 0.50}, demos={"a70": 0.80, "b60": 0.76, "c50": 0.55}
    ),
}


def one_study(
    space: Space, budget: int, seed: int, rule: str, workdir: str, dev: int | None = None, calls: int | None = None
) -> dict[str, Any]:
    """One study of ``space`` at ``budget`` under ``rule`` (``dev`` cases, else the budget's): its choice, its worth.

    ``calls``: the study's request budget (``race_calls``), the race spending what its trials leave
    on extra cases for the configurations still tied (:mod:`courtroom.optimize.study.extend`).
    """
    from courtroom.data.tasks import load_task
    from courtroom.models.lms import RoleLMs
    from courtroom.optimize.study import StudyConfig, run_study
    from courtroom.optimize.study._dedupe import best_value, distinct, pareto_front
    from courtroom.optimize.study.extend import SENT
    from courtroom.optimize.study.tied import tied_set
    from courtroom.testing import learnable_lm, oracle_lm

    dev_n = dev or max(4, budget // space.per_case)
    # The generated dev split holds 100 cases: a larger dev takes the test split's after them (400 in all).
    pool = [e for split in ("dev", "test") for e in load_task("boolean_expressions", data="generate", split=split,
                                                             seed=seed).examples]  # fmt: skip
    unique = list({e.case: e for e in pool}.values())
    cases, reserve = unique[:dev_n], unique[dev_n:]
    train = load_task("boolean_expressions", data="generate", split="train", limit=4, seed=seed).examples
    # Not the train cases: a few-shot prompt quotes them as demos, and the oracle finds its case by its text.
    gold = {e.case: e.label for e in unique if e.case not in {t.case for t in train}}
    tag = f"{space.name}-{budget}-{dev_n}-{seed}-{rule}"  # its own cache entries: each rule pays for its own calls

    def lm(model: str, p: float, i: int = 0) -> Any:
        # Each model draws its own random numbers (seed + i): no model is right exactly where another is.
        name = f"fake/{model}-s{tag}"
        if space.demos:
            return learnable_lm(gold, LABELS, accuracy=p, with_demos={"classifier": space.demos[model]},
                                seed=seed * 100 + i, cache=True, model=name)  # fmt: skip
        return oracle_lm(gold, LABELS, accuracy=p, seed=seed * 100 + i, cache=True, model=name)

    objects = {f"{m}-s{tag}": lm(m, p, i) for i, (m, p) in enumerate(space.accuracy.items()) if m != "default"}
    narrowed = dict(space.space)
    if objects:
        narrowed["model:classifier"] = ",".join(objects)
    base = lm("default", space.accuracy["default"]) if "default" in space.accuracy else next(iter(objects.values()))
    common: dict[str, Any] = {
        "trials": len(list(_configurations(space))),
        "dev": dev_n,
        "train": 4,
        "seed": seed,
        "storage": f"sqlite:///{workdir}/{tag}.db",
        "study_name": tag,
        "models": list(objects),
        "cost_objective": space.cost_objective,
        "pruner": "race" if rule.startswith("race") else "median",
        "prefer": "cheapest" if space.cost_objective else "best",
        "concurrency": 8,
        "race_calls": calls,
    }
    data: dict[str, Any] = {"lms": RoleLMs({"default": base}), "model_objects": objects, "trainset": train,
                            "devset": cases, "labels": LABELS, "reserve": reserve}  # fmt: skip
    if space.demos:  # zero-shot or few-shot (demos labelled, no call to make them), each model
        from courtroom.optimize.study.designs import DesignStudyConfig, run_design_study

        design = DesignStudyConfig(frameworks=["zero-shot", "few-shot"], cost="calls",
                                   knobs={"few-shot.demo_source": "labelled"}, **common)  # fmt: skip
        outcome = run_design_study(design, **data)
    else:
        outcome = run_study(StudyConfig("parallel-vote", space=narrowed, **common), **data)
    study = outcome.study
    trials = distinct(study.trials)
    sent = sum(int(t.user_attrs.get("sent", 0)) for t in trials) + int(study.user_attrs.get(SENT, 0))
    truths = [space.truth(c) for c in _configurations(space)]
    optimum = max(truths)
    if rule.startswith("race"):
        found = tied_set(study)
        assert found is not None
        members = [_config_of(study, m.number) for m in found.tied]
        exported = _config_of(study, found.pick(common["prefer"]).number)
    else:
        if space.cost_objective:
            front = pareto_front(study)
            pick = sorted(front, key=lambda t: (-t.values[0], t.values[1]))[0]
        else:
            pick = best_value(study)[0]
        exported = _config_of(study, pick.number)
        members = [exported]
    held = [space.truth(c) for c in members]
    return {
        "holds_optimum": any(abs(h - optimum) < 1e-9 for h in held),
        "holds_all": len(members) == len(truths),
        "excludes_low": all(int(c.get("n_models", 1)) > 2 for c in members),
        "size": len(members),
        "regret": optimum - space.truth(exported),
        "cheapest": int(exported.get("n_models", 1)) == 1,
        "sent": sent,
    }


def _config_of(study: Any, number: int) -> dict[str, Any]:
    trial = next(t for t in study.trials if t.number == number)
    design = {"design": trial.user_attrs["design"]} if "design" in trial.user_attrs else {}
    return dict(trial.user_attrs.get("config", trial.params)) | design


def _configurations(space: Space) -> list[dict[str, Any]]:
    models = [m for m in space.accuracy if m != "default"] or ["default"]
    if space.demos:
        return [{"design": d, "model:classifier": m} for d in ("zero-shot", "few-shot") for m in models]
    low, _, high = space.space["n_models"].partition(":")
    ns = range(int(low), int(high or low) + 1)
    return [{"n_models": n, "model:classifier": m} for n in ns for m in models]


def wilson(k: int, n: int) -> tuple[float, float]:
    """95% Wilson interval of k successes in n."""
    if n == 0:
        return (0.0, 1.0)
    z, phat = 1.96, k / n
    centre = (phat + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def share(rows: list[dict[str, Any]], key: str) -> str:
    """``k/n (low-high)`` of rows where ``key`` holds."""
    k = sum(bool(r[key]) for r in rows)
    low, high = wilson(k, len(rows))
    return f"{k}/{len(rows)} ({low:.2f}-{high:.2f})"


def mean_ci(values: list[float]) -> str:
    """Mean with a 95% t interval (normal for n > 30)."""
    m = statistics.fmean(values)
    if len(values) < 2:
        return f"{m:.3f}"
    half = 2.09 * statistics.stdev(values) / math.sqrt(len(values))
    return f"{m:.3f} ±{half:.3f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[100, 400, 1600], help="Dev budgets in LM calls.")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--spaces", nargs="+", default=list(SPACES), choices=list(SPACES))
    parser.add_argument("--start", type=float, default=0.25, help="race=: its dev cases, as a share of the budget's.")
    parser.add_argument("--rules", nargs="+", default=[*RULES, "race="], choices=[*RULES, "race="],
                        help="Rules to run (race= needs today).")  # fmt: skip
    args = parser.parse_args(argv)

    # In memory where the machine has it: a study commits each trial's records (SQLite, on a disk: ms each).
    workdir = tempfile.mkdtemp(prefix="courtroom-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    atexit.register(shutil.rmtree, workdir, True)  # memory outlives the process: never left behind
    os.environ["COURTROOM_CACHE_DIR"] = os.path.join(workdir, "cache")
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    print(f"{args.seeds} seed(s) per space, budget and rule; dev cases = budget / calls per case of the space\n")
    for name in args.spaces:
        space = SPACES[name]
        truths = {str(c): f"{space.truth(c):.3f}" for c in _configurations(space)}
        print(f"space {name}: {len(truths)} configurations; true accuracy " + ", ".join(truths.values()))
        extra = {"vote": "excludes n=1,2", "flat": "holds all"}.get(name, "")
        head = f"{'budget':>6} {'dev':>4} {'rule':>6} {'holds optimum':>20} {'size':>5} {'regret':>14}"
        head += f" {'calls':>7} {'s/study':>7}" + (f" {extra:>20}" if extra else "")
        head += f" {'cheapest':>20}" if name == "flat" else ""
        print(head)
        for budget in args.budgets:
            full = max(4, budget // space.per_case)
            sent: dict[str, list[int]] = {}
            regrets: dict[str, list[float]] = {}
            for rule in [r for r in (*RULES, "race=") if r in args.rules]:
                dev_n, limits = full, [None] * args.seeds
                if rule == "race=":  # racing at today's requests, seed by seed: fewer dev cases, the rest to the set
                    dev_n, limits = max(4, round(full * args.start)), sent["today"]
                start = time.perf_counter()
                rows = [one_study(space, budget, s, rule, workdir, dev_n, limits[s]) for s in range(args.seeds)]
                took = (time.perf_counter() - start) / len(rows)
                sent[rule] = [int(r["sent"]) for r in rows]
                regrets[rule] = [float(r["regret"]) for r in rows]
                line = (
                    f"{budget:>6} {dev_n:>4} {rule:>6} {share(rows, 'holds_optimum'):>20} "
                    f"{statistics.fmean(r['size'] for r in rows):>5.2f} {mean_ci([r['regret'] for r in rows]):>14} "
                    f"{statistics.fmean(r['sent'] for r in rows):>7.0f} {took:>7.1f}"
                )
                if name == "vote":
                    line += f" {share(rows, 'excludes_low'):>20}"
                if name == "flat":
                    line += f" {share(rows, 'holds_all'):>20} {share(rows, 'cheapest'):>20}"
                print(line, flush=True)
            if "race=" not in regrets or "today" not in regrets:
                continue
            paired = [a - b for a, b in zip(regrets["race="], regrets["today"], strict=True)]
            extra_calls = [a - b for a, b in zip(sent["race="], sent["today"], strict=True)]
            print(f"{'':>6} {'':>4} {'':>6} regret, race= minus today (paired by seed): {mean_ci(paired)}; "
                  f"requests, race= minus today per seed: {min(extra_calls):+d} to {max(extra_calls):+d}",
                  flush=True)  # fmt: skip
        print()
    print(f"race=: racing on {args.start:g} of the dev cases, then extra cases for the configurations still tied,")
    print("within the requests today's rule sent on the same seed (courtroom.optimize.study.extend).")
    print("holds optimum: the set (today: the chosen trial) holds a configuration of the best true accuracy;")
    print("regret: the optimum's true accuracy minus the exported configuration's; calls: LM requests sent per study")
    print("(one request carries a prompt's n votes where the model takes n).")


if __name__ == "__main__":
    main()
