"""The compiled-program file: DSPy JSON state plus courtroom metadata, read back without running code.

Layout (one JSON object)::

    {"<predictor>": {...DSPy state...}, ...,
     "metadata": {"dependency_versions": {...},          # as DSPy's own save() writes it
                  "courtroom": {"format": "courtroom-program", "format_version": 1,
                                "framework", "config", "task", "models", "optimizer",
                                "scores", "proof", "versions", "artefacts", "checksum"}}}

``artefacts`` holds every program attribute that is not a predictor and has ``to_dict()`` and a
classmethod ``from_dict()`` (precedent index with its reasons, reliability model, KNN
precedents), as plain JSON. The ``checksum`` (sha256 of the rest of the file) turns an edited or
truncated file into a clear error instead of a silently different program. Loading uses
``json`` and ``load_state`` only: nothing is unpickled or imported from the file.

A program file is as trusted as code: its instructions and demos go into every prompt, and anyone
who can write the file can recompute the checksum. With ``COURTROOM_PROGRAM_KEY`` set, ``save``
adds ``signature`` (HMAC-SHA256 of the file under that key) and ``load`` refuses files that are
unsigned or signed with another key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import dspy

from courtroom.errors import ConfigError, did_you_mean
from courtroom.models.lms import RoleLMs, resolve_roles, saved_name
from courtroom.programs import FRAMEWORKS, CourtroomProgram, load_plugins

if TYPE_CHECKING:
    from courtroom.api._options import LoadOptions

FORMAT = "courtroom-program"
FORMAT_VERSION = 1
ARTEFACT_TYPES: dict[str, type] = {}
"""Artefact class by qualified name; filled from the live program classes, never from the file."""


def describe_lm(lm: Any) -> str:
    """The name a saved program records for a model: never a key or a base URL."""
    return saved_name(lm)


def role_models(program: CourtroomProgram) -> dict[str, str]:
    """Role (and ``default``) -> model name."""
    lms: RoleLMs = program.lms
    out = {"default": describe_lm(lms["default"])} if "default" in lms else {}
    return out | {role: describe_lm(lms.serving(role)) for role in type(program).roles}


def artefacts(program: dspy.Module) -> dict[str, Any]:
    """Attributes that save themselves as JSON (``to_dict``/``from_dict``), by attribute name."""
    predictors = {id(p) for _, p in program.named_predictors()}
    out = {}
    for name, value in vars(program).items():
        if name.startswith("_") or id(value) in predictors:
            continue
        if callable(getattr(value, "to_dict", None)) and callable(getattr(type(value), "from_dict", None)):
            out[name] = {
                "type": f"{type(value).__module__}.{type(value).__qualname__}",
                "data": value.to_dict(),
            }
    return out


KEY_ENV = "COURTROOM_PROGRAM_KEY"


def _canonical(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def _checksum(doc: Mapping[str, Any]) -> str:
    return hashlib.sha256(_canonical(doc)).hexdigest()


def _program_key() -> bytes | None:
    key = os.environ.get(KEY_ENV)
    return key.encode() if key else None


def _signature(doc: Mapping[str, Any], key: bytes) -> str:
    return hmac.new(key, _canonical(doc), hashlib.sha256).hexdigest()


def _verify_signature(path: Path, doc: Mapping[str, Any], meta: Mapping[str, Any]) -> None:
    """With ``COURTROOM_PROGRAM_KEY`` set, refuse a file that is unsigned or signed with another key."""
    key = _program_key()
    if key is None:
        return
    claimed = meta.get("signature")
    if not isinstance(claimed, str):
        raise ConfigError(
            f"{path} is not signed, and {KEY_ENV} is set: re-save it with the key set "
            f"(`courtroom compile`), or unset {KEY_ENV} to load unsigned files"
        )
    unsigned = dict(doc)
    unsigned["metadata"] = dict(doc["metadata"]) | {"courtroom": {k: v for k, v in meta.items() if k != "signature"}}
    if not hmac.compare_digest(claimed, _signature(unsigned, key)):
        raise ConfigError(
            f"{path} is not signed with {KEY_ENV} (wrong key, or changed after signing): "
            "set the key it was saved with, or recompile it"
        )


def save_program(program: CourtroomProgram, path: str | Path, metadata: Mapping[str, Any] | None = None) -> Path:
    """Write ``program`` and its metadata (task, optimizer, scores, ...) to ``path`` as JSON."""
    state, body = _document(program, metadata)
    doc = dict(state)
    doc["metadata"] = {"dependency_versions": body["versions"], "courtroom": body}
    body["checksum"] = _checksum(doc)
    key = _program_key()
    if key is not None:
        body["signature"] = _signature(doc, key)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))
    return path


def _document(program: CourtroomProgram, metadata: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(DSPy state, courtroom metadata) of ``program`` as :func:`save_program` writes them (no checksum)."""
    from courtroom._versions import versions

    state = program.dump_state(json_mode=True)
    for name, pred_state in state.items():
        if isinstance(pred_state, dict) and pred_state.get("lm") is not None:
            raise ConfigError(f"predictor {name!r} carries its own model; courtroom programs route models by role")
    meta = dict(metadata or {})
    task = dict(meta.pop("task", {}))
    task.setdefault("labels", list(program.labels))
    task.setdefault("positions", list(program.positions))
    body = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "framework": type(program).name,
        "config": program.config(),
        "task": task,
        "models": role_models(program),
        "versions": versions(),
        "artefacts": artefacts(program),
    } | meta
    return state, body


def read_program_file(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(DSPy state, courtroom metadata) of a program file, validated; raises ConfigError otherwise."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no program file at {path}: pass a file written by `courtroom compile`")
    try:
        doc = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not a courtroom program file (not JSON: {exc}); recompile it") from exc
    meta = (
        doc.get("metadata", {}).get("courtroom")
        if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict)
        else None
    )
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ConfigError(
            f"{path} is not a courtroom program file (no courtroom metadata); compile one with `courtroom compile`"
        )
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        saved_by = meta.get("versions", {}).get("courtroom", "an unknown version")
        raise ConfigError(
            f"{path} uses program format {version} (saved by courtroom {saved_by}); this courtroom "
            f"reads format {FORMAT_VERSION}: recompile the program with this version"
        )
    body = {k: v for k, v in meta.items() if k != "signature"}
    claimed = body.pop("checksum", None)
    check = dict(doc)
    check["metadata"] = dict(doc["metadata"]) | {"courtroom": body}
    if claimed != _checksum(check):
        raise ConfigError(
            f"{path} was modified after it was saved (checksum mismatch); recompile it or restore the original file"
        )
    _verify_signature(path, doc, meta)
    state = {k: v for k, v in doc.items() if k != "metadata"}
    return state, meta


def _artefact_slots(program: CourtroomProgram) -> dict[str, type]:
    """Attribute name -> artefact class, for the attributes a loaded file may set on ``program``.

    Only these names: the program's own artefact attributes (as built), KNN precedents (set by
    ``compile --optimizer knn``), and :data:`ARTEFACT_TYPES` on an attribute the program has.
    A file can never set other attributes (``__class__``, ``lms``, ``forward``, ...).
    """
    from courtroom.optimize._knn import KNNPrecedents
    from courtroom.programs._precedents import PrecedentIndex
    from courtroom.programs._reliability import ReliabilityModel

    slots: dict[str, type] = {"knn_precedents": KNNPrecedents}
    for name, t in (("precedent_index", PrecedentIndex), ("reliability_model", ReliabilityModel)):
        if hasattr(program, name):
            slots[name] = t
    for name, value in vars(program).items():
        if not name.startswith("_") and callable(getattr(type(value), "from_dict", None)):
            slots[name] = type(value)
    return slots


def _qualname(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"


def load_program(
    path: str | Path,
    *,
    lm: Any = None,
    roles: Mapping[str, Any] | None = None,
    lms: Any = None,
    **lm_options: Unpack[LoadOptions],
) -> CourtroomProgram:
    """A ready program from a file written by :func:`save_program`.

    Models: ``lm`` for every role and ``roles`` per role; with neither, the role models the
    program was compiled with (keys from the environment). ``lm_options`` (temperature,
    max_tokens, api_base, timeout) apply to models given by name. ``lms`` (a ready :class:`RoleLMs`)
    replaces them all. A misspelt option is refused before the file is read, naming the nearest one.
    """
    _check_lm_options(lm_options, "load")
    state, meta = read_program_file(path)
    return _program(state, meta, str(path), lm=lm, roles=roles, lms=lms, **lm_options)


def with_models(
    program: CourtroomProgram,
    *,
    lm: Any = None,
    roles: Mapping[str, Any] | None = None,
    **lm_options: Unpack[LoadOptions],
) -> CourtroomProgram:
    """A copy of ``program`` on other models: what :func:`load_program` gives for the file it would save to.

    ``lm``, ``roles`` and ``lm_options`` (temperature, max_tokens, api_base, timeout) mean what they
    mean to :func:`load_program`; with neither ``lm`` nor ``roles`` the program's own models are
    kept by name (pointed at ``api_base``, say). ``program`` itself is left as it is.
    """
    _check_lm_options(lm_options, "with_models")
    saved = dict(getattr(program, "saved_metadata", None) or {})
    kept = {k: v for k, v in saved.items() if k not in _OWN_FIELDS}
    state, meta = _document(program, kept)
    return _program(state, meta, f"the {type(program).name} program", lm=lm, roles=roles, **lm_options)


LM_OPTIONS = ("temperature", "max_tokens", "api_base", "timeout", "n_sampling", "prompt_layout")
"""The keys of :class:`~courtroom.api._options.LoadOptions`: what a program's models given by name take."""


def _check_lm_options(options: Mapping[str, Any], where: str) -> None:
    unknown = sorted(set(options) - set(LM_OPTIONS))
    if unknown:
        named = ", ".join(k + did_you_mean(k, LM_OPTIONS) for k in unknown)
        raise ConfigError(
            f"unknown option{'s' if len(unknown) > 1 else ''} {named} for {where}: "
            f"it takes lm, roles, lms and {', '.join(LM_OPTIONS)}"
        )


_OWN_FIELDS = ("format", "format_version", "framework", "config", "models", "versions", "artefacts", "checksum",
               "signature")  # fmt: skip
"""Metadata :func:`_document` takes from the program itself, not from the file it was loaded from."""


def _program(
    state: dict[str, Any],
    meta: dict[str, Any],
    path: str,
    *,
    lm: Any,
    roles: Mapping[str, Any] | None,
    lms: Any = None,
    **lm_options: Unpack[LoadOptions],
) -> CourtroomProgram:
    """The program a file's (state, metadata) describe, on the models named (``path`` names it in errors)."""
    name = meta.get("framework")
    if name not in FRAMEWORKS:
        load_plugins()  # an installed package's framework
    if name not in FRAMEWORKS:
        raise ConfigError(
            f"{path} holds framework {name!r}, which this courtroom does not have: "
            f"valid frameworks are {', '.join(sorted(FRAMEWORKS))}"
        )
    cls = FRAMEWORKS[name]
    if lms is None and lm is None and not roles:
        saved = dict(meta.get("models") or {})
        named = [m for v in saved.values() for m in (v if isinstance(v, list) else [v])]
        fakes = sorted({m for m in named if str(m).startswith("fake/")})
        if fakes:
            raise ConfigError(f"{path} was compiled on test fakes ({', '.join(fakes)}): pass lm=... (or --lm)")
        lm, roles = saved.pop("default", None), {r: m for r, m in saved.items() if r in cls.roles}
    if lms is None:
        lms = resolve_roles(lm, roles, valid_roles=cls.roles, **lm_options)
    task = meta.get("task") or {}
    unknown = sorted(set(meta.get("config") or {}) - set(cls.knobs()))
    if unknown:
        raise ConfigError(f"{path} sets knobs {', '.join(unknown)} that {name} does not have: recompile it")
    program = cls(task.get("labels") or [], task.get("positions"), roles=lms, **dict(meta.get("config") or {}))
    expected = {n for n, _ in program.named_predictors()}
    if not expected <= set(state):
        raise ConfigError(
            f"{path} lacks predictor state for {', '.join(sorted(expected - set(state)))}: "
            "it was saved by a different program; recompile it"
        )
    for key in expected:
        if not isinstance(state[key], dict) or state[key].get("lm") is not None:
            raise ConfigError(f"{path}: predictor {key!r} state is malformed or names its own model; recompile it")
    try:
        program.load_state(state, allow_unsafe_lm_state=False)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(
            f"{path}: program state does not fit {name} ({type(exc).__name__}: {exc}); recompile it"
        ) from exc
    slots = _artefact_slots(program)
    entries = meta.get("artefacts") or {}
    if not isinstance(entries, dict):
        raise ConfigError(f"{path}: artefacts are malformed; recompile it")
    for attr, entry in entries.items():
        kind = entry.get("type") if isinstance(entry, dict) else None
        t: Any = slots.get(attr)
        if t is None and hasattr(program, attr) and getattr(program, attr) is None and not attr.startswith("_"):
            t = ARTEFACT_TYPES.get(kind) if isinstance(kind, str) else None
        if t is None or kind != _qualname(t) or "data" not in entry:
            valid = ", ".join(f"{a} ({_qualname(v)})" for a, v in sorted(slots.items()))
            raise ConfigError(
                f"{path}: unknown artefact {attr!r} of type {kind!r} ({name} takes {valid}); recompile it"
            )
        try:
            value = t.from_dict(entry["data"])
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise ConfigError(
                f"{path}: artefact {attr!r} is malformed ({type(exc).__name__}: {exc}); recompile it"
            ) from exc
        setattr(program, attr, value)
        if callable(getattr(value, "attach", None)):
            value.attach(program)
    program.saved_metadata = meta
    return program
