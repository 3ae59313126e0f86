"""Dollars per case, lever by lever: what do batch, n-sampling, the provider's cache and stop-when-stable save?

SPEC §18. Each design runs on CaseLaw-length generated cases (``--words`` per case,
:data:`CASELAW_WORDS` by default; two labels: Plaintiff wins / Defendant wins) against the oracle
fake (:func:`courtroom.testing.oracle_lm`), whose every request is logged: its role, its whole
prompt (system message and messages, as the real adapter renders them), and ``n``. Free-text
answers are filler of the dry run's typical length
(:data:`courtroom.cost.estimate.TYPICAL_FIELD_TOKENS`), so the prompts that quote earlier answers
have realistic lengths; each sample is priced at the dry run's typical answer length
(:func:`courtroom.cost.estimate.typical_answer_tokens`). Tokens: cl100k_base (LiteLLM's bundled
copy; Anthropic's tokenizer is not public, so Claude's figures are an estimate).

Prices are LiteLLM's, per model: live, batch (``*_batches``), cached reads
(``cache_read_input_token_cost``, and ``..._batches`` where LiteLLM has one) and cache writes
(``cache_creation_input_token_cost``). Each lever is priced on top of the one before:

1. **live**: today, one request per call, no cache discount counted;
2. **batch**: the same requests at batch prices (``--batch``; the answers do not change);
3. **+ n-sampling**: the run with samples of one prompt in one request (:mod:`courtroom.models.sampling`);
   a model without ``n`` (Claude) keeps its k requests, so the factor is 1.00;
4. **+ cache**: the provider's prompt cache applied to the requests as sent, in the order sent:
   OpenAI caches automatically the longest prefix (in 128-token blocks, from 1,024 tokens) that an
   earlier request sent, reads at LiteLLM's cached price; in a batch only where LiteLLM gives a
   batch cache price (gpt-4o-mini has none: no discount assumed). Anthropic caches only up to the
   explicit ``cache_control`` breakpoint courtroom sends in the cache layout (``--prompt-layout``),
   from the model's minimum prefix; the cheaper layout for the provider is taken;
5. **+ stop**: the multi-round design's stopping rule on (:mod:`courtroom.programs._stopping`:
   ``stop_when_stable=2``; Courtroom-LLM's parallel judges: ``early_stop``, waves until the
   majority is fixed), with accuracy and its 95% interval beside the full run's on the oracle.
   The oracle's judgments are independent draws, so two that agree are more often right than one:
   on it a stable verdict can be *more* accurate than the full run's last one (printed "above"),
   which says nothing about a real model's.

For each design and model it prints dollars per case and the factor of each lever, the total
factor (and, for a target not met, the stop factor it needs beside that lever's floor: every case
stopped at its earliest round), calls and requests per case, the cached share of prompt tokens, and the accuracy; and
whether the verdicts before and after n-sampling are the same (the fake draws each answer by how
often it has seen the prompt, so n samples and k requests draw alike).

    python bench/price.py [--cases 60] [--words 400] [--seed 0]
    python bench/price.py --shares 350,400,450   # where the default length comes from
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
MODELS = ("gpt-4o-mini", "claude-sonnet-4-5")
TAKES_N = {"gpt-4o-mini": True, "claude-sonnet-4-5": False}
"""OpenAI's chat API takes ``n``; Anthropic's Messages API does not."""
OPENAI_MIN, OPENAI_BLOCK = 1024, 128
"""OpenAI's automatic prompt cache: prefixes from 1,024 tokens, in 128-token increments."""

CASELAW_WORDS = 400
"""Words per generated case (~412 cl100k tokens: the generated words are about one token each).

No CaseLaw text ships with courtroom (the ``caselaw`` task reads your JSONL), and neither SPEC nor
the Debate-Feedback paper states a length (its Table 4 cuts its sample background short). What is
measured is issue 44's: on 5 CaseLaw cases, tokenised with cl100k, the share of prompt tokens
OpenAI's cache rule serves in the classic layout was jot 0%, courtroom-llm 39%, debate-feedback 16%.
This bench gives those shares only near 400 words (``--shares``: 0%, 38%, 20%; at 350 words
debate-feedback's is 0%, at 450 jot's is 19%), so CaseLaw's cases are about 400 words of this
generator long, in tokens (what is priced)."""
SHARED = ("jot", "courtroom-llm", "debate-feedback")
"""The designs issue 44 measured the cached share of on CaseLaw (``--shares``)."""

ACCURACY = {"default": 0.7, "judge": 0.75, "clerk": 0.75}
DESIGNS: tuple[tuple[str, dict[str, Any], dict[str, Any]], ...] = (
    # design, its knobs, the stopping lever's knobs (empty: the design has no rounds to stop)
    ("zero-shot", {}, {}),
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
    """One request: its role, its whole prompt text, its system message and how many samples it asked for."""

    role: str
    prompt: str
    n: int
    system: str
    prefixes: tuple[str, ...]
    """The texts up to each ``cache_control`` breakpoint the cache layout marks (:func:`marked_prefixes`)."""


class Run:
    """One design's run: its requests in order, verdicts, and its program (for the typical answer lengths)."""

    def __init__(self, layout: str = "classic") -> None:
        self.layout = layout
        self.requests: list[Sent] = []
        self.verdicts: list[str] = []
        self.gold: list[str] = []
        self.program: Any = None

    @property
    def accuracy(self) -> float:
        return sum(v == g for v, g in zip(self.verdicts, self.gold, strict=True)) / max(1, len(self.gold))


def _engine(gold: Mapping[str, str], seed: int, run: Run) -> Any:
    from courtroom.cost.estimate import TYPICAL_FIELD_TOKENS
    from courtroom.cost.prompt_cache import marked_prefixes
    from courtroom.models.lms import current_role
    from courtroom.testing._engines import OracleEngine, as_asked

    seen: Counter[str] = Counter()

    class Logged(OracleEngine):
        """The oracle, logging every request whole; its free text is of the dry run's typical length."""

        def complete_n(self, request: Any, n: int) -> Any:
            system = request.system if isinstance(request.system, str) else ""
            system = system or "".join(getattr(p, "text", "") or "" for p in request.system or ())
            text = "\n".join([f"system: {system}", *(f"{m.role}: {m.text or ''}" for m in request.messages)])
            chat = [
                {"role": "system", "content": system},
                *({"role": m.role, "content": m.text or ""} for m in request.messages),
            ]
            prefixes = tuple(marked_prefixes(chat))
            run.requests.append(Sent(current_role() or "default", text, n, system, prefixes))
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
    design: str, knobs: Mapping[str, Any], gold: Mapping[str, str], seed: int, *, n: bool, layout: str = "classic"
) -> Run:
    """One design over the cases on a fresh logging oracle; n-sampling on or off; a prompt layout."""
    from courtroom.programs import get_framework
    from courtroom.testing._fakes import FakeLM

    run = Run(layout)
    lm = FakeLM("fake/oracle", engine=_engine(gold, seed, run), cache=False)
    lm.n_sampling, lm.prompt_layout = n, layout  # as --n-sampling/--no-n-sampling and --prompt-layout set them
    program = get_framework(design)(LABELS, lm=lm, **knobs)
    run.program = program
    for case, label in gold.items():
        run.verdicts.append(program(case=case).label)
        run.gold.append(label)
    return run


# -- pricing --------------------------------------------------------------------------------------------


def prices(model: str) -> dict[str, float]:
    """LiteLLM's per-token prices for ``model``: live, batch, cache read (live, batch) and cache write."""
    import litellm

    info = litellm.model_cost[model]
    inp, out = float(info["input_cost_per_token"]), float(info["output_cost_per_token"])
    batch_in = float(info.get("input_cost_per_token_batches", inp / 2))
    read = float(info.get("cache_read_input_token_cost", inp))
    write = float(info.get("cache_creation_input_token_cost", inp))
    return {
        "in": inp,
        "out": out,
        "batch_in": batch_in,
        "batch_out": float(info.get("output_cost_per_token_batches", out / 2)),
        "read": read,
        "batch_read": float(info.get("cache_read_input_token_cost_batches", batch_in)),
        "write": write,
        "batch_write": float(info.get("cache_creation_input_token_cost_batches", batch_in)),
        "min_prefix": float(info.get("prompt_cache_min_tokens", OPENAI_MIN)),
    }


_ENCODING: Any = None


def tokens(text: str) -> list[int]:
    """cl100k_base tokens (LiteLLM's bundled tokenizer: no download)."""
    global _ENCODING
    if _ENCODING is None:
        from litellm.litellm_core_utils.default_encoding import encoding

        _ENCODING = encoding
    return _ENCODING.encode(text, disallowed_special=())


def openai_cached(requests: Sequence[list[int]]) -> list[int]:
    """Per request, the prompt tokens OpenAI's automatic cache serves: the longest 128-token-block
    prefix (from 1,024 tokens) that an earlier request of the run sent."""
    from courtroom.cost.prompt_cache import openai_hit

    seen: set[bytes] = set()
    return [openai_hit(toks, seen) for toks in requests]


class Priced(NamedTuple):
    """One run at one model's prices under one set of levers."""

    dollars: float
    prompt: int
    cached: int
    calls: int
    requests: int


def anthropic_cached(run: Run, minimum: float) -> list[tuple[int, int]]:
    """Per request, (tokens read, tokens written) by Anthropic's cache at the breakpoints courtroom sends.

    Only the cache layout sends them (``cache_control`` at the end of the system message, which holds
    the preamble and the case, and at the end of the role's own message): each prefix is written at
    its first request and read by later ones, from the model's minimum prefix
    (:func:`courtroom.cost.prompt_cache.anthropic_hit`, the dry run's rule). The classic layout
    sends none: nothing is cached.
    """
    from courtroom.cost.prompt_cache import anthropic_hit

    if run.layout != "cache":
        return [(0, 0)] * len(run.requests)
    seen: set[str] = set()
    return [
        anthropic_hit([(p, len(tokens(p.replace("\0", "")))) for p in r.prefixes], seen, int(minimum))
        for r in run.requests
    ]


def price(run: Run, model: str, *, batch: bool, cache: bool, cases_n: int) -> Priced:
    """Dollars of ``run``'s requests at ``model``'s prices, with or without batch prices and the provider's cache."""
    from courtroom.cost.estimate import typical_answer_tokens

    p = prices(model)
    toks = [tokens(r.prompt) for r in run.requests]
    if not cache:
        cached = [(0, 0)] * len(toks)
    elif model.startswith("gpt"):
        cached = [(c, 0) for c in openai_cached(toks)]
    else:
        cached = anthropic_cached(run, p["min_prefix"])
    read, write = (p["batch_read"], p["batch_write"]) if batch else (p["read"], p["write"])
    inp, out = (p["batch_in"], p["batch_out"]) if batch else (p["in"], p["out"])
    dollars = prompt = hit = 0.0
    for r, t, (c, w) in zip(run.requests, toks, cached, strict=True):
        prompt += len(t)
        hit += c
        dollars += (len(t) - c - w) * inp + c * read + w * write
        dollars += r.n * typical_answer_tokens(run.program, r.role) * out
    calls = sum(r.n for r in run.requests)
    return Priced(dollars / cases_n, round(prompt), round(hit), calls, len(run.requests))


def interval(p: float, n: int) -> tuple[float, float]:
    """Wilson's 95% interval for a proportion ``p`` of ``n``."""
    if not n:
        return 0.0, 1.0
    z = 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def levers(runs: Mapping[str, Run], model: str, cases_n: int) -> list[tuple[str, Priced, Run]]:
    """The cumulative levers for ``model``: (name, its price per case, the run it prices).

    The cache lever takes the cheaper layout for this provider at its cache prices (measured here):
    ``classic`` or ``cache`` (:mod:`courtroom.models._layout`); stopping then runs in that layout.
    """
    base = "n" if TAKES_N[model] else "k"
    layouts = []
    for layout in ("classic", "cache"):
        key = base if layout == "classic" else f"{base}@cache"
        layouts.append((price(runs[key], model, batch=True, cache=True, cases_n=cases_n), layout, key))
    cached, layout, key = min(layouts, key=lambda o: o[0].dollars)
    stopped = runs.get(f"{key}+stop") or runs[key]
    return [
        ("live", price(runs["k"], model, batch=False, cache=False, cases_n=cases_n), runs["k"]),
        ("batch", price(runs["k"], model, batch=True, cache=False, cases_n=cases_n), runs["k"]),
        ("+ n-sampling", price(runs[base], model, batch=True, cache=False, cases_n=cases_n), runs[base]),
        (f"+ cache ({layout})", cached, runs[key]),
        ("+ stop", price(stopped, model, batch=True, cache=True, cases_n=cases_n), stopped),
    ]


TARGETS = {
    ("jot", "claude-sonnet-4-5"): 0.35,
    ("debate-feedback", "claude-sonnet-4-5"): 0.35,
    ("courtroom-llm", "claude-sonnet-4-5"): 0.45,
    ("jot", "gpt-4o-mini"): 0.45,
    ("debate-feedback", "gpt-4o-mini"): 0.45,
    ("courtroom-llm", "gpt-4o-mini"): 0.45,
}
"""Issue 44's targets: every lever on, as a fraction of today's live price."""

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
    agreeing), priced in the layout the cache lever chose: ``stop_when_stable`` can save no more. Above
    the need, the target is out of reach under the bench's cost model; below it, it is reachable
    only where verdicts hold sooner than the oracle's independent draws make them.
    """
    goal, knob = TARGETS.get((design, model)), ROUNDS.get(design)
    total = rows[-1][1].dollars / rows[0][1].dollars
    if goal is None or total <= goal + 1e-9 or knob is None or "stop_when_stable" not in stop:
        return None
    before = rows[-2][1].dollars / rows[0][1].dollars  # every lever but stopping
    need = goal / before
    measured = rows[-1][1].dollars / rows[-2][1].dollars
    cached = rows[-2][2]
    earliest = {**knobs, knob: int(stop["stop_when_stable"])}
    short = run_design(design, earliest, gold, seed, n=TAKES_N[model], layout=cached.layout)
    floor = price(short, model, batch=True, cache=True, cases_n=len(gold)).dollars / rows[-2][1].dollars
    verdict = ("out of reach under this cost model" if floor > need + 1e-9 else
               "reachable only where verdicts hold sooner than on the oracle (independent draws)")  # fmt: skip
    return (f"{design} at {model}: {before:.2f}x before stopping, so the target needs stop <= {need:.2f} "
            f"(measured {measured:.2f}); its floor, every case stopped after {earliest[knob]} rounds "
            f"({knob}={earliest[knob]}), is {floor:.2f}: {verdict}")  # fmt: skip


def target_line(design: str, model: str, rows: Sequence[tuple[str, Priced, Run]]) -> str | None:
    """Whether ``design`` on ``model`` meets its target, with the arithmetic lever by lever."""
    goal = TARGETS.get((design, model))
    if goal is None:
        return None
    factors = [rows[i][1].dollars / rows[i - 1][1].dollars for i in range(1, len(rows))]
    total = rows[-1][1].dollars / rows[0][1].dollars
    arithmetic = " x ".join(f"{f:.2f} ({rows[i + 1][0].lstrip('+ ')})" for i, f in enumerate(factors))
    verdict = "met" if total <= goal + 1e-9 else "NOT met"
    return f"{design} at {model}: {arithmetic} = {total:.2f}x of live; target <= {goal:.2f}x: {verdict}"


def shares(lengths: Sequence[int], n: int, seed: int) -> None:
    """Per case length: the share of prompt tokens OpenAI's cache rule serves, per design and layout
    (live, no n-sampling), beside what issue 44 measured on 5 CaseLaw cases (:data:`CASELAW_WORDS`)."""
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
                priced = price(run_design(design, knobs, gold, seed, n=False, layout=layout), "gpt-4o-mini",
                               batch=False, cache=True, cases_n=n)  # fmt: skip
                row.append(f"{design} {layout} {priced.cached / max(1, priced.prompt):.0%}")
        print("  ".join(row))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument(
        "--words", type=int, default=CASELAW_WORDS, help="words per generated case (CaseLaw's length: CASELAW_WORDS)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--designs", default=",".join(d for d, _, _ in DESIGNS))
    parser.add_argument(
        "--shares", metavar="WORDS,...", help="print the cached shares issue 44 measured on CaseLaw, per case length"
    )
    args = parser.parse_args(argv)
    if args.shares:
        return shares([int(w) for w in args.shares.split(",")], min(args.cases, 5), args.seed)
    gold = cases(args.cases, args.words, args.seed)
    wanted = args.designs.split(",")
    mean_case = sum(len(tokens(c)) for c in gold) / len(gold)
    print(f"{args.cases} generated cases of {args.words} words (~{mean_case:.0f} cl100k tokens), oracle fake "
          f"(seed {args.seed}, accuracy {ACCURACY}); prices: LiteLLM's, per case")  # fmt: skip
    totals: list[str] = []
    targets: list[str] = []
    for design, knobs, stop in DESIGNS:
        if design not in wanted:
            continue
        runs = {}
        for layout in ("classic", "cache"):
            tag = "" if layout == "classic" else "@cache"
            for n, base in ((False, "k"), (True, "n")):
                runs[base + tag] = run_design(design, knobs, gold, args.seed, n=n, layout=layout)
                if stop:
                    runs[f"{base}{tag}+stop"] = run_design(
                        design, {**knobs, **stop}, gold, args.seed, n=n, layout=layout
                    )
        same = runs["k"].verdicts == runs["n"].verdicts
        print()
        print(f"## {design} {knobs}" + (f", stop: {stop}" if stop else ""))
        agree = sum(a == b for a, b in zip(runs["k"].verdicts, runs["n"].verdicts, strict=True))
        print(f"verdicts with and without n-sampling: {'the same' if same else 'DIFFERENT'} ({agree}/{args.cases})")
        head = (
            f"{'model':<18} {'lever':<21} {'$/case':>10} {'factor':>7} {'vs live':>8} {'calls':>6} "
            f"{'requests':>8} {'prompt tok':>10} {'cached':>7} {'accuracy (95% CI)':>22}"
        )
        print(head)
        print("-" * len(head))
        for model in MODELS:
            rows = levers(runs, model, args.cases)
            live = rows[0][1].dollars
            before = live
            for name, priced, run in rows:
                lo, hi = interval(run.accuracy, len(run.gold))
                print(
                    f"{model:<18} {name:<21} {priced.dollars:>10.6f} {priced.dollars / before:>6.2f}x "
                    f"{priced.dollars / live:>7.2f}x {priced.calls / args.cases:>6.1f} "
                    f"{priced.requests / args.cases:>8.1f} {priced.prompt / args.cases:>10.0f} "
                    f"{priced.cached / max(1, priced.prompt):>6.0%} "
                    f"{run.accuracy:>7.3f} [{lo:.3f}, {hi:.3f}]"
                )
                before = priced.dollars
            totals.append(f"{design:<17} {model:<18} {rows[-1][1].dollars / live:>5.2f}x of live")
            line = target_line(design, model, rows)
            if line:
                targets.append(line)
            line = floor_line(design, knobs, stop, model, rows, gold, args.seed)
            if line:
                targets.append(line)
            if design == "self-consistency" and TAKES_N[model]:
                per = rows[2][1].requests / args.cases
                targets.append(
                    f"self-consistency k={knobs['k_samples']} at {model}: {per:.2f} requests per case with n-sampling "
                    f"(its prompt paid {'once' if per == 1 else f'{per:.2f} times'} per case)"
                )
        if stop:
            full, cut = runs["n"], runs["n+stop"]  # the classic layout: the same draws as every layout
            lo, hi = interval(full.accuracy, len(full.gold))
            where = "within" if lo - 1e-9 <= cut.accuracy <= hi + 1e-9 else "above" if cut.accuracy > hi else "BELOW"
            print(f"stopping: accuracy {cut.accuracy:.3f} vs the full run's {full.accuracy:.3f} [{lo:.3f}, {hi:.3f}]: "
                  f"{where} its interval")  # fmt: skip
    print()
    print("every lever on (total factor):")
    for line in totals:
        print("  " + line)
    print("targets (issue 44), each factor on the lever before:")
    for line in targets:
        print("  " + line)


if __name__ == "__main__":
    main()
