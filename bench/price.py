"""Dollars per case, lever by lever, against the bill of today's default: what do batch, the layout and stopping save?

SPEC §18, issue 50. Each design runs on CaseLaw-length generated cases (``--words``: about 300 and
800 words; two labels: Plaintiff wins / Defendant wins) against the oracle fake
(:func:`courtroom.testing.oracle_lm`), named as the priced model, whose every request is logged:
its role, its whole prompt (system message and messages, as the real adapter renders them), ``n``,
and its wave (its depth on the case's critical path: the requests of one wave go out at once).
Free-text answers are filler of the dry run's typical length
(:data:`courtroom.cost.estimate.TYPICAL_FIELD_TOKENS`), so prompts that quote earlier answers have
realistic lengths; each sample is priced at the dry run's typical answer length. Tokens: cl100k_base
(Anthropic's tokenizer is not public, so Claude's figures are an estimate).

**The bill.** The requests are replayed against each provider's documented cache rule
(:func:`courtroom.cost.prompt_cache.replay_dollars`, the server the bench uses): OpenAI caches
automatically the longest prefix (128-token blocks, from 1,024 tokens); Anthropic caches up to the
``cache_control`` breakpoints the cache layout sends, from the model's minimum prefix (Sonnet 4.5
1,024 tokens, Haiku 4.5 4,096), writing at 1.25x (2x for the 1-hour cache of batches) and reading
at 0.1x. A cache serves a prefix only once a first request with it was processed: requests of one
wave all miss, except in the cache layout, where courtroom sends a new prefix's first request alone
(:mod:`courtroom.models._prefix`). Prices are LiteLLM's (live, ``*_batches``, cache read and write).

**The baseline** is what the provider bills for today's default: the classic layout, live, one
request with ``n`` for k samples where the model takes it (OpenAI), and OpenAI's automatic prefix
discount. Each lever is priced on top of the one before:

1. **batch**: the same requests at batch prices (``--batch``);
2. **+ layout**: ``--prompt-layout auto`` (the default): per case, the layout the cost model prices
   lower; ``classic`` and ``cache`` are printed beside it, and auto must never be dearer than the
   cheaper of them;
3. **+ stop**: the multi-round design's stopping rule on (``stop_when_stable=2``; Courtroom-LLM's
   ``early_stop``), with accuracy and its 95% interval beside the full run's on the oracle.

For each design, model and case length it prints dollars per case and each lever's factor, the
total factor, and for a target not met the arithmetic lever by lever and the stop lever's floor.

    python bench/price.py [--cases 20] [--words 300,800] [--seed 0]
    python bench/price.py --shares 350,400,450   # the cached shares issue 44 measured, per length
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

LABELS = ["Plaintiff wins", "Defendant wins"]
MODELS = ("gpt-4o-mini", "claude-sonnet-4-5", "claude-haiku-4-5")
TAKES_N = {"gpt-4o-mini": True, "claude-sonnet-4-5": False, "claude-haiku-4-5": False}
"""OpenAI's chat API takes ``n``; Anthropic's Messages API does not."""
PROVIDER = {"gpt-4o-mini": "openai/", "claude-sonnet-4-5": "anthropic/", "claude-haiku-4-5": "anthropic/"}
WORDS = (300, 800)
"""The case lengths issue 50 asks for (CaseLaw's cases are about 300-800 words)."""

CASELAW_WORDS = 400
"""Issue 44's calibration length for ``--shares`` (~412 cl100k tokens).

No CaseLaw text ships with courtroom (the ``caselaw`` task reads your JSONL). Issue 44 measured, on
5 CaseLaw cases tokenised with cl100k, the share of prompt tokens OpenAI's cache rule serves in the
classic layout: jot 0%, courtroom-llm 39%, debate-feedback 16%. ``--shares`` prints this bench's
shares per length beside them (its requests as sent today: n-sampling on, one after another), so a
reader can see which generated length they resemble; the priced runs use :data:`WORDS`."""
SHARED = ("jot", "courtroom-llm", "debate-feedback")
"""The designs issue 44 measured the cached share of on CaseLaw (``--shares``)."""

ACCURACY = {"default": 0.7, "judge": 0.75, "clerk": 0.75}
DESIGNS: tuple[tuple[str, dict[str, Any], dict[str, Any]], ...] = (
    # design, its knobs, the stopping lever's knobs (empty: the design has no rounds to stop)
    ("self-consistency", {"k_samples": 9, "k_shots": 0}, {}),
    ("jot", {"n_loops": 3}, {"stop_when_stable": 2}),
    ("courtroom-llm", {"n_judges": 3, "k_precedents": 0}, {"early_stop": True}),
    ("debate-feedback", {"n_rounds": 3, "variant": "single"}, {"stop_when_stable": 2}),
)

_WORDS = (
    "plaintiff defendant contract breach agreement payment delivery notice court claim damages evidence "
    "witness statement invoice warranty lease property tenant landlord negligence duty injury premises "
    "employer employee wages termination clause obligation performance deadline remedy settlement appeal "
    "testimony record exhibit signature party counsel motion hearing judgment liability insurer policy"
).split()


def cases(n: int, words: int, seed: int) -> dict[str, str]:
    """``n`` generated CaseLaw-length cases (``words`` words each) with gold labels; no case contains another."""
    rng = random.Random(seed)
    out = {}
    for i in range(n):
        body = " ".join(rng.choice(_WORDS) for _ in range(words))
        out[f"Case {i:05d}. Facts: {body}. Who prevails?"] = LABELS[rng.random() < 0.5]
    return out


def filler(tokens: int, *parts: Any) -> str:
    """Free text of about ``tokens`` tokens, different for each ``parts`` (a fake's answer of typical length)."""
    rng = random.Random(hashlib.sha256("|".join(map(str, parts)).encode()).digest())
    return " ".join(rng.choice(_WORDS) for _ in range(max(1, tokens * 3 // 4)))


class Sent(NamedTuple):
    """One request: its role, its messages (system first), how many samples it asked for, and its wave."""

    role: str
    messages: list[dict[str, str]]
    n: int
    wave: tuple[int, int]
    """(the case's number, its depth on the case's critical path): one wave's requests go out at once."""


class Run:
    """One design's run: its requests in order, verdicts, and its program (for the typical answer lengths)."""

    def __init__(self, layout: str = "classic") -> None:
        self.layout = layout
        self.requests: list[Sent] = []
        self.verdicts: list[str] = []
        self.gold: list[str] = []
        self.program: Any = None
        self.case = 0

    @property
    def accuracy(self) -> float:
        return sum(v == g for v, g in zip(self.verdicts, self.gold, strict=True)) / max(1, len(self.gold))


def _engine(gold: Mapping[str, str], seed: int, run: Run) -> Any:
    from courtroom.cost.estimate import TYPICAL_FIELD_TOKENS
    from courtroom.models._concurrency import depth
    from courtroom.models.lms import current_role
    from courtroom.testing._engines import OracleEngine, as_asked

    seen: Counter[str] = Counter()

    class Logged(OracleEngine):
        """The oracle, logging every request whole; its free text is of the dry run's typical length."""

        def complete_n(self, request: Any, n: int) -> Any:
            system = request.system if isinstance(request.system, str) else ""
            system = system or "".join(getattr(p, "text", "") or "" for p in request.system or ())
            chat = [
                {"role": "system", "content": system},
                *({"role": m.role, "content": m.text or ""} for m in request.messages),
            ]
            rounds = depth.get()
            rounds[0] += 1  # this request's wave: one deeper than what it waited for
            run.requests.append(Sent(current_role() or "default", chat, n, (run.case, rounds[0])))
            return super().complete_n(request, n)

        def answer(self, role: str, schema: dict[str, Any], prompt: str, turn: int) -> dict[str, Any]:
            out = super().answer(role, schema, prompt, turn)
            prompt = as_asked(prompt)  # the role's fields, whatever the layout: the same filler in both
            # The k-th answer to a prompt, as the oracle draws it: the same text whatever the call order.
            with self._lock:
                k = seen[role + prompt]
                seen[role + prompt] += 1
            for name, prop in (schema.get("properties") or {}).items():
                if prop.get("type") == "string" and "enum" not in prop:
                    out[name] = filler(TYPICAL_FIELD_TOKENS["text"], role, k, name, prompt)
            return out

    return Logged(gold, LABELS, ACCURACY, seed=seed)


def run_design(
    design: str,
    knobs: Mapping[str, Any],
    gold: Mapping[str, str],
    seed: int,
    *,
    model: str,
    layout: str = "classic",
) -> Run:
    """One design over the cases on a fresh logging oracle named ``model`` (so ``auto`` prices it), in ``layout``.

    Calls run one at a time with their waves counted (:data:`courtroom.models._concurrency.depth`):
    a parallel call starts at its caller's depth, as it goes out at once live. n-sampling is on
    where the model takes ``n`` (today's default), off on Claude (no ``n``).
    """
    from courtroom.cost import layout_choice
    from courtroom.models._concurrency import depth, serial
    from courtroom.programs import get_framework
    from courtroom.testing._fakes import FakeLM

    run = Run(layout)
    lm = FakeLM(PROVIDER[model] + model, engine=_engine(gold, seed, run), cache=False)
    lm.n_sampling, lm.prompt_layout = TAKES_N[model], layout  # as --n-sampling and --prompt-layout set them
    program = get_framework(design)(LABELS, lm=lm, **knobs)
    run.program = program
    serial_token = serial.set(True)
    try:
        for i, (case, label) in enumerate(gold.items()):
            run.case = i
            depth_token = depth.set([0])
            try:
                with layout_choice.batch_prices():  # auto chooses at the batch prices it is billed at
                    run.verdicts.append(program(case=case).label)
            finally:
                depth.reset(depth_token)
            run.gold.append(label)
    finally:
        serial.reset(serial_token)
    return run


# -- pricing --------------------------------------------------------------------------------------------


_ENCODING: Any = None


def tokens(text: str) -> list[int]:
    """cl100k_base tokens (LiteLLM's bundled tokenizer: no download)."""
    global _ENCODING
    if _ENCODING is None:
        from litellm.litellm_core_utils.default_encoding import encoding

        _ENCODING = encoding
    return _ENCODING.encode(text, disallowed_special=())


class Priced(NamedTuple):
    """One run at one model's prices under one set of levers."""

    dollars: float
    prompt: int
    requests: int
    calls: int
    layouts: str
    """How many of its cases went in the cache layout (``auto`` chooses per case)."""


def bill(run: Run, model: str, *, batch: bool, cases_n: int) -> Priced:
    """Dollars per case of ``run``'s requests as the provider bills them (the module docstring's rule)."""
    import json

    from courtroom.cost.estimate import typical_answer_tokens
    from courtroom.cost.prompt_cache import is_cache_layout, replay_dollars
    from courtroom.models.usage import batch_price_per_token, price_per_token

    name = PROVIDER[model] + model
    prompts = replay_dollars(((name, r.messages, r.wave) for r in run.requests), batch=batch)
    assert prompts is not None, f"LiteLLM has no price for {model}"
    out = ((batch_price_per_token if batch else price_per_token)(name) or (0.0, 0.0))[1]
    answers = sum(r.n * typical_answer_tokens(run.program, r.role) * out for r in run.requests)
    cached = {r.wave[0] for r in run.requests if is_cache_layout(r.messages)}
    prompt = sum(len(tokens(json.dumps(r.messages))) for r in run.requests)
    calls = sum(r.n for r in run.requests)
    return Priced((prompts + answers) / cases_n, prompt, len(run.requests), calls, f"{len(cached)}/{cases_n}")


def levers(runs: Mapping[str, Run], model: str, cases_n: int) -> list[tuple[str, Priced, Run]]:
    """The cumulative levers for ``model``: (name, its price per case, the run it prices)."""
    stopped = runs.get("auto+stop") or runs["auto"]
    return [
        ("today (bill)", bill(runs["classic"], model, batch=False, cases_n=cases_n), runs["classic"]),
        ("batch", bill(runs["classic"], model, batch=True, cases_n=cases_n), runs["classic"]),
        ("+ layout (auto)", bill(runs["auto"], model, batch=True, cases_n=cases_n), runs["auto"]),
        ("+ stop", bill(stopped, model, batch=True, cases_n=cases_n), stopped),
    ]


TARGETS = {
    ("jot", "claude-sonnet-4-5"): 0.30,
    ("debate-feedback", "claude-sonnet-4-5"): 0.30,
    ("courtroom-llm", "claude-sonnet-4-5"): 0.40,
    ("jot", "gpt-4o-mini"): 0.45,
    ("debate-feedback", "gpt-4o-mini"): 0.45,
    ("courtroom-llm", "gpt-4o-mini"): 0.45,
    ("self-consistency", "gpt-4o-mini"): 0.45,
}
"""Issue 50's targets at 300-word cases: every lever on, as a fraction of the bill of today's default."""
TARGET_WORDS = 300

ROUNDS = {"jot": "n_loops", "debate-feedback": "n_rounds"}
"""The knob that counts a multi-round design's rounds: its stop-when-stable floor runs that many."""


def floor_line(
    design: str,
    knobs: Mapping[str, Any],
    stop: Mapping[str, Any],
    model: str,
    rows: Sequence[tuple[str, Priced, Run]],
    gold: Mapping[str, str],
    seed: int,
) -> str | None:
    """For a target not met: the stop factor it needs, and the stop lever's floor under this cost model.

    The floor is every case stopping at its earliest round (``stop_when_stable`` rounds, all
    agreeing), priced in the chosen layout: ``stop_when_stable`` can save no more. Above the need,
    the target is out of reach under the bench's cost model; below it, it is reachable only where
    verdicts hold sooner than the oracle's independent draws make them.
    """
    goal, knob = TARGETS.get((design, model)), ROUNDS.get(design)
    total = rows[-1][1].dollars / rows[0][1].dollars
    if goal is None or total <= goal + 1e-9 or knob is None or "stop_when_stable" not in stop:
        return None
    before = rows[-2][1].dollars / rows[0][1].dollars  # every lever but stopping
    need = goal / before
    measured = rows[-1][1].dollars / rows[-2][1].dollars
    earliest = {**knobs, knob: int(stop["stop_when_stable"])}
    short = run_design(design, earliest, gold, seed, model=model, layout="auto")
    floor = bill(short, model, batch=True, cases_n=len(gold)).dollars / rows[-2][1].dollars
    verdict = ("out of reach under this cost model" if floor > need + 1e-9 else
               "reachable only where verdicts hold sooner than on the oracle (independent draws)")  # fmt: skip
    return (f"  {design} at {model}: {before:.2f}x before stopping, so the target needs stop <= {need:.2f} "
            f"(measured {measured:.2f}); its floor, every case stopped after {earliest[knob]} rounds, "
            f"is {floor:.2f}: {verdict}")  # fmt: skip


def target_line(design: str, model: str, words: int, rows: Sequence[tuple[str, Priced, Run]]) -> str | None:
    """Whether ``design`` on ``model`` meets its target, with the arithmetic lever by lever."""
    goal = TARGETS.get((design, model))
    if goal is None or words != TARGET_WORDS:
        return None
    factors = [rows[i][1].dollars / rows[i - 1][1].dollars for i in range(1, len(rows))]
    total = rows[-1][1].dollars / rows[0][1].dollars
    arithmetic = " x ".join(f"{f:.2f} ({rows[i + 1][0].lstrip('+ ')})" for i, f in enumerate(factors))
    verdict = "met" if total <= goal + 1e-9 else "NOT met"
    return (
        f"{design} at {model}, {words} words: {arithmetic} = {total:.2f}x of the bill; target <= {goal:.2f}x: {verdict}"
    )


def interval(p: float, n: int) -> tuple[float, float]:
    """Wilson's 95% interval for a proportion ``p`` of ``n``."""
    if not n:
        return 0.0, 1.0
    z = 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def shares(lengths: Sequence[int], n: int, seed: int) -> None:
    """Per case length: the share of prompt tokens OpenAI's cache rule serves, per design and layout
    (live, each request alone), beside what issue 44 measured on 5 CaseLaw cases (:data:`CASELAW_WORDS`)."""
    import json

    from courtroom.cost.prompt_cache import openai_hit

    print(f"cached share of prompt tokens under OpenAI's rule, {n} generated cases per length "
          "(issue 44 on 5 CaseLaw cases, classic layout: jot 0%, courtroom-llm 39%, debate-feedback 16%)")  # fmt: skip
    for words in lengths:
        gold = cases(n, words, seed)
        mean = sum(len(tokens(c)) for c in gold) / n
        row = [f"{words:>5} words (~{mean:.0f} tokens)"]
        for design, knobs, _ in DESIGNS:
            if design not in SHARED:
                continue
            for layout in ("classic", "cache"):
                run = run_design(design, {**knobs}, gold, seed, model="gpt-4o-mini", layout=layout)
                seen: set[bytes] = set()
                toks = [tokens(json.dumps(r.messages)) for r in run.requests]
                hit = sum(openai_hit(t, seen) for t in toks)
                row.append(f"{design} {layout} {hit / max(1, sum(map(len, toks))):.0%}")
        print("  ".join(row))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--words", default=",".join(map(str, WORDS)), help="words per generated case, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--designs", default=",".join(d for d, _, _ in DESIGNS))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument(
        "--shares", metavar="WORDS,...", help="print the cached shares issue 44 measured on CaseLaw, per case length"
    )
    args = parser.parse_args(argv)
    if args.shares:
        return shares([int(w) for w in args.shares.split(",")], min(args.cases, 5), args.seed)
    wanted, models = args.designs.split(","), args.models.split(",")
    print(f"{args.cases} generated cases per length, oracle fake (seed {args.seed}, accuracy {ACCURACY}); "
          "prices: LiteLLM's; the bill: each provider's cache rule")  # fmt: skip
    totals: list[str] = []
    targets: list[str] = []
    auto_checks: list[str] = []
    for words in (int(w) for w in args.words.split(",")):
        gold = cases(args.cases, words, args.seed)
        mean_case = sum(len(tokens(c)) for c in gold) / len(gold)
        for design, knobs, stop in DESIGNS:
            if design not in wanted:
                continue
            print()
            print(f"## {design} {knobs}, {words} words (~{mean_case:.0f} tokens)" + (f", stop: {stop}" if stop else ""))
            head = (f"{'model':<18} {'lever':<16} {'$/case':>10} {'factor':>7} {'vs bill':>8} {'requests':>8} "
                    f"{'prompt tok':>10} {'cache':>6} {'accuracy (95% CI)':>22}")  # fmt: skip
            print(head)
            print("-" * len(head))
            for model in models:
                runs = {
                    layout: run_design(design, knobs, gold, args.seed, model=model, layout=layout)
                    for layout in ("classic", "cache", "auto")
                }
                if stop:
                    runs["auto+stop"] = run_design(
                        design, {**knobs, **stop}, gold, args.seed, model=model, layout="auto"
                    )
                rows = levers(runs, model, args.cases)
                bill_today = before = rows[0][1].dollars
                for name, priced, run in rows:
                    lo, hi = interval(run.accuracy, len(run.gold))
                    print(f"{model:<18} {name:<16} {priced.dollars:>10.6f} {priced.dollars / before:>6.2f}x "
                          f"{priced.dollars / bill_today:>7.2f}x {priced.requests / args.cases:>8.1f} "
                          f"{priced.prompt / args.cases:>10.0f} {priced.layouts:>6} "
                          f"{run.accuracy:>7.3f} [{lo:.3f}, {hi:.3f}]")  # fmt: skip
                    before = priced.dollars
                each = {k: bill(runs[k], model, batch=True, cases_n=args.cases).dollars for k in ("classic", "cache")}
                auto = rows[2][1].dollars
                cheaper = min(each.values())
                print(f"{'':<18} layouts in batch: classic {each['classic'] / bill_today:.2f}x, "
                      f"cache {each['cache'] / bill_today:.2f}x, auto {auto / bill_today:.2f}x")  # fmt: skip
                ok = auto <= cheaper * 1.0001
                auto_checks.append(f"  {design:<17} {model:<18} {words:>4} words: auto {auto / cheaper:.3f}x of "
                                   f"the cheaper layout: {'ok' if ok else 'DEARER'}")  # fmt: skip
                totals.append(f"  {design:<17} {model:<18} {words:>4} words {rows[-1][1].dollars / bill_today:>5.2f}x")
                line = target_line(design, model, words, rows)
                if line:
                    targets.append("  " + line)
                    if words == TARGET_WORDS:
                        extra = floor_line(design, knobs, stop, model, rows, gold, args.seed)
                        if extra:
                            targets.append(extra)
                if design == "self-consistency" and TAKES_N[model]:
                    per = rows[0][1].requests / args.cases
                    targets.append(f"  self-consistency k={knobs['k_samples']} at {model}, {words} words: "
                                   f"{per:.2f} requests per case with n-sampling")  # fmt: skip
            if stop:
                full, cut = runs["auto"], runs["auto+stop"]
                lo, hi = interval(full.accuracy, len(full.gold))
                where = (
                    "within" if lo - 1e-9 <= cut.accuracy <= hi + 1e-9 else "above" if cut.accuracy > hi else "BELOW"
                )
                print(f"stopping: accuracy {cut.accuracy:.3f} vs the full run's {full.accuracy:.3f} "
                      f"[{lo:.3f}, {hi:.3f}]: {where} its interval")  # fmt: skip
    print()
    print("every lever on, against the bill of today's default:")
    print("\n".join(totals))
    print("auto against the cheaper of classic and cache (batch):")
    print("\n".join(auto_checks))
    print(f"targets (issue 50, {TARGET_WORDS} words), each factor on the lever before:")
    print("\n".join(targets))


if __name__ == "__main__":
    main()
