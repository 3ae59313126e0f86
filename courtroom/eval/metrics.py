"""Scores over gold and predicted labels. A failure (no prediction) counts as wrong.

``METRICS`` is the one registry of per-case metrics, by name: DSPy metrics
``metric(example, prediction, trace=None)`` returning a bool or a number in [0, 1]. ``accuracy``
(the verdict equals the gold label) is built in; an installed package adds others through the
``courtroom.metrics`` entry points, and ``--metric module:function`` names any importable one
(:func:`get_metric`). Under a metric other than ``accuracy``, a command's ``accuracy`` is the
metric's mean over the cases (a failed case scores 0), the label-match share stays as
``label_accuracy``, and the paired tests count a case right when its value is at least 0.5.
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import importlib
import json
import logging
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from courtroom.errors import DataError

FAILED = "<failed>"

log = logging.getLogger(__name__)


def score(golds: Sequence[str], preds: Sequence[str | None], labels: Sequence[str]) -> dict[str, Any]:
    """Accuracy, macro-F1 and per-class precision/recall; ``None`` predictions are failures.

    Counted by hand, as scikit-learn's ``precision_recall_fscore_support(labels=...,
    zero_division=0)`` counts them (tests/test_harness.py checks the two agree): importing
    scikit-learn for four divisions would cost a command a second of start-up.
    """
    return score_counts(Counter(zip(golds, preds, strict=True)), labels)


def score_counts(pairs: Mapping[tuple[str, str | None], int], labels: Sequence[str]) -> dict[str, Any]:
    """:func:`score` from how many examples had each (gold, prediction) pair: a run counts them as results arrive."""
    n = sum(pairs.values())
    correct = sum(k for (g, p), k in pairs.items() if p is not None and g == p)
    per_class: dict[str, dict[str, Any]] = {}
    f1s = []
    for lab in labels:
        hit = sum(k for (g, p), k in pairs.items() if g == lab and p == lab)
        predicted = sum(k for (_, p), k in pairs.items() if p == lab)
        support = sum(k for (g, _), k in pairs.items() if g == lab)
        per_class[lab] = {
            "precision": hit / predicted if predicted else 0.0,
            "recall": hit / support if support else 0.0,
            "support": support,
        }
        # F1 = 2TP / (2TP + FP + FN) = 2TP / (predicted + support); 0 when both are 0.
        f1s.append(2 * hit / (predicted + support) if predicted + support else 0.0)
    out: dict[str, Any] = {
        "n": n,
        "accuracy": correct / n if n else 0.0,
        "macro_f1": sum(f1s) / len(f1s) if n and f1s else 0.0,
        "failures": sum(k for (_, p), k in pairs.items() if p is None),
    }
    if n:
        out["per_class"] = per_class
    return out


def metric(example: Any, pred: Any, trace: Any = None) -> bool:
    """DSPy-style metric: the predicted label equals the gold label."""
    return getattr(pred, "label", None) == example.label


METRICS: dict[str, Callable[..., Any]] = {"accuracy": metric}
"""Metric name -> ``metric(example, prediction, trace=None)``: the built-in one and installed packages'."""

PASS = 0.5
"""A case counts as right in the paired tests (McNemar, the study's race) when its metric value is at least this."""


@dataclass(frozen=True)
class Metric:
    """A metric chosen with ``--metric``: its name as given, and the function."""

    name: str
    fn: Callable[..., Any]

    def value(self, example: Any, prediction: Any) -> float:
        """The metric of one case as a number (a bool is 0 or 1; a ``score`` attribute is read, as GEPA's)."""
        try:
            out = self.fn(example, prediction)
            out = getattr(out, "score", out)
            value = float(out)
        except Exception as exc:  # noqa: BLE001 - the user's function: one warning, the case scores 0
            _warn_once(f"--metric {self.name} failed on a case ({type(exc).__name__}: {exc}); it counts as 0")
            return 0.0
        if not math.isfinite(value):
            _warn_once(f"--metric {self.name} returned {value}; it counts as 0")
            return 0.0
        return value


_warned: set[str] = set()


def _warn_once(line: str) -> None:
    if line not in _warned:
        _warned.add(line)
        log.warning(line)


def register_metric(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``fn`` to :data:`METRICS` under ``name`` (replacing one of the same name)."""
    if not callable(fn):
        raise TypeError(f"{fn!r} is not a function metric(example, prediction, trace=None)")
    METRICS[name] = fn
    return fn


def load_plugins() -> None:
    """Add the metrics installed packages name in ``courtroom.metrics`` (:mod:`courtroom._plugins`)."""
    from courtroom import _plugins

    _plugins.load("metrics", register_metric)


def get_metric(name: str) -> Metric:
    """The metric ``name`` names: a registered one (an installed package's too) or ``module:function``."""
    from courtroom.errors import ConfigError

    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            with _here_on_path():
                fn: Any = importlib.import_module(module)
            for part in attr.split("."):
                fn = getattr(fn, part)
        except ImportError as exc:
            raise ConfigError(
                f"--metric {name}: cannot import {module} ({exc}): put its folder on PYTHONPATH "
                "or pip install its package"
            ) from None
        except AttributeError:
            raise ConfigError(f"--metric {name}: {module} has no {attr}: write --metric MODULE:FUNCTION") from None
        if not callable(fn):
            raise ConfigError(f"--metric {name} is not a function: write --metric MODULE:FUNCTION")
        return Metric(name, fn)
    if name not in METRICS:
        load_plugins()  # a package put on the path since the last look
    if name not in METRICS:
        raise ConfigError(
            f"unknown metric {name!r}: use one of {', '.join(sorted(METRICS))}, "
            "or --metric MODULE:FUNCTION for your own"
        )
    return Metric(name, METRICS[name])


@contextlib.contextmanager
def _here_on_path() -> Iterator[None]:
    """The working folder on ``sys.path`` while importing: ``--metric my_metrics:f`` finds ``./my_metrics.py``.

    The ``courtroom`` script's own folder heads ``sys.path``, not the one it was started in.
    """
    import os
    import sys

    here = os.getcwd()
    added = here not in sys.path and "" not in sys.path
    if added:
        sys.path.append(here)
    try:
        yield
    finally:
        if added and here in sys.path:
            sys.path.remove(here)


_ACTIVE: contextvars.ContextVar[Metric | None] = contextvars.ContextVar("courtroom_metric", default=None)


def active() -> Metric | None:
    """The metric every case is scored with here (None: the verdict's label match, ``accuracy``)."""
    return _ACTIVE.get()


@contextlib.contextmanager
def scoring(name: str | Metric | None) -> Iterator[Metric | None]:
    """Score every case evaluated inside with ``name`` (``accuracy`` or None: the label match, as without)."""
    chosen = get_metric(name) if isinstance(name, str) else name
    if chosen is not None and chosen.name == "accuracy" and chosen.fn is metric:
        chosen = None
    token = _ACTIVE.set(chosen)
    try:
        yield chosen
    finally:
        _ACTIVE.reset(token)


def right(result: Any) -> bool:
    """Whether a harness result counts as right: its label is the gold one (under ``--metric``: value >= 0.5)."""
    value = getattr(result, "score", None)
    if result.prediction is None:
        return False
    return value >= PASS if value is not None else result.prediction == result.gold


def score_results(results: Sequence[Any], labels: Sequence[str]) -> dict[str, Any]:
    """:func:`score` of harness results; under ``--metric`` (their ``score``), accuracy is its mean."""
    s = score([r.gold for r in results], [r.prediction for r in results], labels)
    if (mean := mean_score(results)) is not None:
        s["label_accuracy"], s["accuracy"] = s["accuracy"], mean
    return s


def mean_score(results: Sequence[Any]) -> float | None:
    """The mean metric value of harness results scored under ``--metric`` (None: they were not)."""
    scores = [r.score for r in results if getattr(r, "score", None) is not None]
    if not results or len(scores) != len(results):
        return None
    return math.fsum(scores) / len(scores)


def majority(golds: Sequence[str]) -> tuple[str, float] | None:
    """The most frequent gold label and its share (always answering it scores that accuracy); None: no labels."""
    counts = Counter(g for g in golds if g is not None)
    if not counts:
        return None
    label, k = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    return label, k / sum(counts.values())


def user_prices(
    models: Mapping[str, Any],
    prices: Mapping[str, Sequence[float]] | None,
) -> dict[str, tuple[float, ...]] | None:
    """The user's prices (per 1M input, output tokens, and any :data:`EXTRA_PRICES`) for the models of a run.

    The user's table wins over LiteLLM's price; LiteLLM fills the models the table leaves out.
    A key matches a model string (``openai/gpt-4o-mini``) or the same name without its provider.
    """
    if not prices:
        return None
    out = {}
    for m in models:
        for key in (m, m.split("/", 1)[-1]):
            if key in prices:
                out[m] = tuple(float(x) for x in prices[key])
                break
    return out


def price_aliases(prices: Mapping[str, Sequence[float]] | None, lms: Any) -> dict[str, list[float]] | None:
    """``prices`` keyed by the names the user typed, re-keyed by the model strings a run records.

    ``local`` is the embedded model's name, whatever its server calls it; unless priced, it costs
    $0 (it runs on this machine), as the dry run says. A price that matches no model of the run is
    logged as a warning (it would silently price nothing).
    """
    from courtroom.models.lms import LOCAL, model_name, saved_name
    from courtroom.models.panels import Panel

    members = [m for v in lms.values() for m in (v if isinstance(v, Panel) else [v])]
    models = {id(m): m for m in members}.values()
    prices = dict(prices or {})
    if any(saved_name(m) == LOCAL for m in models):
        prices.setdefault(LOCAL, [0.0, 0.0])
    if not prices:
        return None
    out = {k: list(v) for k, v in prices.items()}
    seen: set[str] = set()
    for lm in models:
        typed, actual = saved_name(lm), model_name(lm)
        seen |= {typed, actual, actual.split("/", 1)[-1]}
        if typed in prices and actual not in prices:
            out[actual] = list(prices[typed])
    unmatched = sorted(set(prices) - seen)
    if unmatched:
        log.warning(
            "--prices: no model of this run is named %s (its models: %s); that price is not used",
            ", ".join(unmatched),
            ", ".join(sorted({saved_name(lm) for lm in models})),
        )
    return out


EXTRA_PRICES = ("cache_read", "cache_write", "batch_input", "batch_output")
"""The prices a table row may add to ``input`` and ``output`` (dollars per 1M tokens): a row that names
any is six numbers, ``[input, output, cache_read, cache_write, batch_input, batch_output]``, the ones
it leaves out at the provider's usual rule (a cache token at the input price, a batch at half)."""


def price_pair(model: Any, price: Any, where: str) -> list[float]:
    """One price-table row: ``[input, output]`` dollars per 1M tokens, finite numbers >= 0.

    A mapping may also name :data:`EXTRA_PRICES`; the row is then six numbers (:data:`EXTRA_PRICES`).
    A NaN or negative price would turn every dollar total (and ``--max-cost``) into nonsense.
    """
    extra: dict[str, Any] = {}
    if isinstance(price, Mapping):
        extra = {k: price[k] for k in EXTRA_PRICES if price.get(k) not in (None, "")}
        price = [price.get("input"), price.get("output")]
    try:
        inp, outp = (float(x) for x in price)
        named = {k: float(v) for k, v in extra.items()}
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"{where}: bad price for {model!r} ({price!r}); write [input, output] dollars per 1M tokens"
        ) from exc
    if not all(math.isfinite(x) and x >= 0 for x in (inp, outp, *named.values())):
        raise DataError(f"{where}: the price of {model!r} must be finite and >= 0 dollars per 1M tokens, got {price!r}")
    if not named:
        return [inp, outp]
    batch_in = named.get("batch_input", inp / 2)
    defaults = {"cache_read": inp, "cache_write": inp, "batch_input": batch_in, "batch_output": outp / 2}
    return [inp, outp, *(named.get(k, defaults[k]) for k in EXTRA_PRICES)]


def load_prices(path: str | Path) -> dict[str, list[float]]:
    """Read a price table.

    JSON ``{"model": [input, output]}`` or ``{"model": {"input":..,"output":..}}``
    (dollars per 1M tokens), or CSV with columns ``model,input,output``; a mapping (or a CSV's
    columns) may add :data:`EXTRA_PRICES`.
    """
    from courtroom._files import read_text

    path = Path(path)
    text = read_text(path, "price table")
    rows: dict[str, Any]
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(text.splitlines())
        missing = {"model", "input", "output"} - set(reader.fieldnames or [])
        if missing:
            raise DataError(
                f"price table {path}: missing column {', '.join(sorted(missing))}; "
                "write model,input,output (dollars per 1M tokens)"
            )
        rows = {r["model"]: r for r in reader}  # a mapping row: input, output and any EXTRA_PRICES
    else:
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"price table {path}: not valid JSON ({exc}); use a .json or .csv file") from exc
        if not isinstance(rows, dict):
            raise DataError(f"price table {path}: expected an object of model -> [input, output]")
    return {str(model): price_pair(model, price, f"price table {path}") for model, price in rows.items()}


def wilson(p: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion ``p`` over ``n`` cases (NaN, NaN for none)."""
    if n <= 0:
        return (math.nan, math.nan)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))
