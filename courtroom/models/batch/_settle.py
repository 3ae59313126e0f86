"""Which batch did a killed process create without recording it? Intents looked up at the provider.

The collector writes an intent (``submitting``: a random token, the lines' request keys) before
each create and ``submitted`` after it (:mod:`courtroom.models.batch._record`); the create carries
the token in the batch's metadata. A kill between the two leaves an intent no event settled, and
a batch the provider runs and bills. A resume (and ``--cancel-batches``) settles each such intent
once (:func:`settle`):

* found at the provider by its token: recorded as ``submitted``, then followed like any batch
  (its lines wait on it; nothing is sent again);
* not there: recorded as ``not_submitted`` (the process died before the create); its lines go out
  as usual;
* the list call failing through its retries: nothing recorded (the next resume looks again), and
  its lines are withheld (they fail, unsent) rather than risk a second payment;
* an API whose batches carry no token (Anthropic's Message Batches): recorded as ``unconfirmed``,
  its lines withheld once, and the user told what to look for (size and time) to cancel it.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

from courtroom.models.batch._openai import BatchClient
from courtroom.models.batch._record import BatchLog


def settle(client: BatchClient, log: BatchLog, intents: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Settle ``intents`` (module docstring); token -> why its batch is unknown, for those whose lines must wait."""
    if not intents:
        return {}
    if not client.findable:
        unknown = {}
        for intent in intents:
            unknown[intent["token"]] = client.cannot_find(len(intent["lines"]), _spoken(intent.get("at")))
            log.settled(intent["token"], "unconfirmed")
        return unknown
    try:
        found = client.find([i["token"] for i in intents], min(_epoch(i.get("at")) for i in intents))
    except Exception as exc:  # noqa: BLE001 - cannot look: nothing is said not to exist
        sizes = "; ".join(f"{len(i['lines'])} requests at about {_spoken(i.get('at'))}" for i in intents)
        why = (f"a batch this run may have created ({sizes}) could not be looked for ({exc}): its requests are not "
               "sent again; `--resume --retry-failed` looks again")  # fmt: skip
        return {intent["token"]: why for intent in intents}
    for intent in intents:
        status = found.get(intent["token"])
        if status is None:
            log.settled(intent["token"], "not_submitted")
            continue
        log.submitted(status.id, str(intent.get("provider")), str(intent.get("model")), int(intent.get("round") or 0),
                      intent["lines"], intent["token"])  # fmt: skip
    return {}


def _epoch(at: Any) -> float:
    try:
        return _dt.datetime.fromisoformat(str(at)).timestamp()
    except ValueError:
        return 0.0  # no time: the whole list is read


def _spoken(at: Any) -> str:
    try:
        return _dt.datetime.fromisoformat(str(at)).astimezone(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except ValueError:
        return "an unrecorded time"
