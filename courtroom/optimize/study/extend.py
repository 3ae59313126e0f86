"""The race's second half: what stopping saved buys the close configurations more cases.

The race (:mod:`.race`) stops a configuration clearly worse than the incumbent after a block or
two of the ``--dev-limit`` cases. The calls it did not send are not lost: after the trials, the
configurations still tied with the best (:mod:`.tied`) race on, two at a time and block by block,
on the dev split's cases beyond ``--dev-limit`` (the *reserve*), so the set can separate what its
first cases could not, and the exported configuration is chosen on more cases.

* **Budget**: the requests the stopped configurations did not send, each at the rate it sent
  requests per case, over the dev cases it skipped (:func:`saved`), less what earlier extensions
  sent; so a racing study sends about what scoring every configuration it ran on every
  ``--dev-limit`` case would have. With ``race_calls`` (``--race-calls N``) the budget is instead
  ``N`` requests for the whole study, trials and rounds together, a cap every request is reserved
  from (:mod:`courtroom.cost.race_cap`): a study may then start on fewer
  dev cases and let the race spend the rest where the set is undecided. A round runs as far as its
  estimate fits: each of the pair's requests per case in its trial (:func:`rate`; configurations that
  share calls read each other's from the cache) times the cases it adds. The estimate can miss
  by what one round's cache hits differ from the trials': the record keeps what was sent.
* **Rounds** (leader against its closest challenger, in the spirit of LUCB): each round the
  *leader* (the set's best: the highest dev accuracy among the longest records) and its *closest
  challenger* (the other member whose one-sided McNemar p of "worse than the leader", on the cases
  both saw, is the largest: the one the data is least sure of) are brought to the same number of
  cases, a block (``--dev-limit / chunks`` cases, at least 1) past the longer of their records; a
  pair with nothing left to add passes to the next closest challenger. The set is then computed
  again on the longer records and the next round picks its pair again. Requests go where the
  export is decided, not spread over members already far behind: a round costs two members'
  block, not the whole set's. The last round takes what the budget still holds (a part of a
  block, the same cases for both), so no budget that fits a case is left unspent. It ends when
  one configuration is left, the reserve or the budget runs out.
* **Record**: each extended trial's case-by-case record over ``--dev-limit`` plus its reserve
  cases is kept on the study (user attribute :data:`EXTENDED`, trial number -> ``1``/``0`` marks),
  its requests in :data:`SENT`; Optuna's trial values stay the ``--dev-limit`` scores. The tied
  set and the export read the longer record (:func:`marks`).

A study with a budget (``--max-calls``/``--max-cost``) or another pruner is not extended, nor is
one given no reserve (a dev split no larger than ``--dev-limit``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from courtroom.optimize.study.race import EXTENDED, SENT, marks

__all__ = ["EXTENDED", "SENT", "contenders", "extend", "marks", "plan", "rate", "saved", "sent_by_trials"]

Score = Callable[[Any, Sequence[Any]], tuple[str, int]]
"""``score(trial, examples) -> (marks, requests sent)``: the trial's configuration on ``examples``."""


def saved(study: Any, dev: int) -> float:
    """Requests the race's stopped configurations did not send: each one's rate per case, over the cases it skipped."""
    from optuna.trial import TrialState

    from courtroom.optimize.study._attrs import DUPLICATE, KEY

    done = {t.user_attrs.get(KEY) for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))}
    seen: dict[str, tuple[int, float]] = {}  # configuration -> (most cases seen, its requests per case)
    for t in study.get_trials(deepcopy=False, states=(TrialState.PRUNED,)):
        a = t.user_attrs
        if DUPLICATE in a or "race" not in a or a.get("interrupted") or "budget" in a or a.get(KEY) in done:
            continue
        if not a.get("examples"):
            continue
        cases = int(a["examples"])
        if cases > seen.get(a[KEY], (0, 0.0))[0]:
            seen[a[KEY]] = (cases, float(a.get("sent", 0)) / cases)
    return sum(max(0, dev - cases) * rate for cases, rate in seen.values())


def sent_by_trials(study: Any) -> int:
    """LM requests the study's trials sent (repeats send none)."""
    return sum(int(t.user_attrs.get("sent", 0)) for t in study.get_trials(deepcopy=False))


def rate(trial: Any, seen: tuple[int, int] = (0, 0)) -> float:
    """Requests one more case of the trial's configuration is expected to send.

    ``seen``: (requests, cases) of its earlier extension rounds; their rate when it has any. Else
    the rate its trial sent, or, for a trial the cache answered whole (another configuration asked
    its calls first), its calls per case: the most a case can send, never a free round.
    """
    if seen[1]:
        return seen[0] / seen[1]
    sent = float(trial.user_attrs.get("sent", 0)) / max(1, int(trial.user_attrs.get("examples", 0)))
    return sent if sent > 0 else float(trial.user_attrs.get("calls_per_example", 0) or 0)


def contenders(found: Any, have: dict[int, int], total: int) -> list[int]:
    """The round's pair: the set's leader and its closest challenger that can still get a case; [] if none can.

    ``found``: the tied set (:func:`~courtroom.optimize.study.tied.tied_set`); ``have``: each member's
    cases so far; ``total``: the cases there are (``--dev-limit`` and the reserve).
    """
    rivals = sorted((m for m in found.tied if m.number != found.best), key=lambda m: (-m.p, -m.accuracy, m.number))
    for m in rivals:
        pair = [found.best, m.number]
        if min(max(have[n] for n in pair) + 1, total) > min(have[n] for n in pair):
            return pair
    return []


def plan(have: dict[int, int], rates: dict[int, float], block: int, total: int, left: float) -> int:
    """The round's target: the cases each of the pair reaches (a block past the longer record, or what ``left`` pays).

    0 when not one more case fits.
    """
    floor = min(have.values())

    def cost(target: int) -> float:
        return sum(max(0, target - n) * rates[k] for k, n in have.items())

    target = min(max(have.values()) + block, total)
    while target > floor and cost(target) > left:  # the last round: a part of a block, what the budget holds
        target -= 1
    return target if target > floor else 0


def extend(
    study: Any, dev: int, reserve: Sequence[Any], block: int, score: Score, calls: int | None = None, cap: Any = None
) -> int:
    """Score the leader of the set tied with the best and its closest challenger on ``reserve`` cases; the rounds run.

    The rounds spend what the stops saved (:func:`saved`), or with ``calls`` what the study's
    requests leave of ``calls`` (trials and rounds together). With ``cap``
    (:class:`~courtroom.cost.race_cap.RaceCap`, ``--race-calls``) every request is reserved from it
    before it is sent: a round it cuts short is not recorded (its pair would hold records of
    unequal length), its requests are, and the rounds end.
    """
    from courtroom.models._requests import OverBudget
    from courtroom.optimize.study.tied import tied_set

    record = {str(k): str(v) for k, v in (study.user_attrs.get(EXTENDED) or {}).items()}
    spent = int(study.user_attrs.get(SENT, 0))
    left = (saved(study, dev) if calls is None else calls - sent_by_trials(study)) - spent
    if cap is not None:
        left = min(left, cap.left())
    total, rounds = dev + len(reserve), 0
    seen: dict[int, tuple[int, int]] = {}  # trial -> (requests, cases) of its rounds in this call
    while left > 0:
        found = tied_set(study)
        if found is None or len(found.tied) < 2:
            return rounds
        trials = {t.number: t for t in study.get_trials(deepcopy=False)}
        have = {m.number: len(marks(study, trials[m.number])) for m in found.members}
        pair = contenders(found, have, total)
        if not pair:
            return rounds  # the reserve is used up
        rates = {n: rate(trials[n], seen.get(n, (0, 0))) for n in pair}
        target = plan({n: have[n] for n in pair}, rates, block, total, left)
        if not target:
            return rounds
        before_round = cap.spent_calls if cap is not None else 0
        this_round = dict(record)
        try:
            with cap.counting() if cap is not None else contextlib.nullcontext():
                for n in pair:
                    t = trials[n]
                    if have[n] >= target:
                        continue
                    got, sent = score(t, reserve[have[n] - dev : target - dev])
                    this_round[str(n)] = marks(study, t) + got
                    before = seen.get(n, (0, 0))
                    seen[n] = (before[0] + sent, before[1] + target - have[n])
                    spent += sent
                    left -= sent
        except OverBudget:
            spent = int(study.user_attrs.get(SENT, 0)) + cap.spent_calls - before_round
            study.set_user_attr(SENT, spent)
            return rounds
        record = this_round
        if cap is not None:
            left = min(left, cap.left())
        study.set_user_attr(EXTENDED, dict(record))
        study.set_user_attr(SENT, spent)
        rounds += 1
    return rounds


def scorer(config: Any, build: Callable[[Any], Any]) -> Score:
    """``score(trial, examples)`` for :func:`extend`: the trial's program (``build(trial)``) on ``examples``."""
    from courtroom.eval.harness import evaluate, total_usage
    from courtroom.optimize.study.race import outcomes

    programs: dict[int, Any] = {}

    def score(trial: Any, examples: Sequence[Any]) -> tuple[str, int]:
        if trial.number not in programs:
            programs[trial.number] = build(trial)
        results = evaluate(programs[trial.number], list(examples), concurrency=config.concurrency)
        return outcomes(results), total_usage(results).sent

    return score


def reserve_of(config: Any, dev: Sequence[Any]) -> list[Any]:
    """The task's dev cases beyond the ``dev`` the trials score (its dev split past ``--dev-limit``)."""
    from courtroom.data.tasks import case_key, load_task

    where = {"data": config.data, "seed": config.seed, "dataset": config.dataset, "splits": config.splits}
    whole = load_task(config.task, split="dev", **where).examples
    used = {case_key(e.get("case")) for e in dev}
    return [e for e in whole if case_key(e.get("case")) not in used]


def after_trials(
    study: Any,
    config: Any,
    *,
    build: Callable[[Any], Any],
    dev: Sequence[Any],
    reserve: Sequence[Any] | None,
    budget: Any,
    cap: Any = None,
) -> int:
    """A racing study's extension rounds (:func:`extend`) once its trials have run; the rounds run.

    ``build(trial)``: the program the trial scored, built and prepared as it ran; ``cap``: the
    study's ``--race-calls`` (:mod:`courtroom.cost.race_cap`), which every round's request is
    reserved from.
    """
    from courtroom import _stop
    from courtroom.optimize.study import _storage
    from courtroom.optimize.study._trials import block_size, races

    if not races(config) or (budget is not None and getattr(budget, "active", True)) or _stop.stop_requested():
        return 0
    if getattr(config, "race_calls", None) is None and saved(study, len(dev)) <= int(study.user_attrs.get(SENT, 0)):
        return 0  # nothing saved to spend: the dev split is not loaded again
    if reserve is None:
        reserve = reserve_of(config, dev)
    if not reserve:
        return 0
    score = scorer(config, build)
    with _storage.creation_lock(config.storage):  # one worker at a time extends the study
        calls = getattr(config, "race_calls", None)
        return extend(study, len(dev), list(reserve), block_size(config, len(dev)), score, calls, cap)
