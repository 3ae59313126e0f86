"""A full disk, simulated portably with RLIMIT_FSIZE in the child: exit 2, one line naming the file and
the resume command, whole lines only; the resume ends with every example once and nothing re-sent."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import warm
from _output import unwrapped

from courtroom._files import read_jsonl
from courtroom.testing import FakeServer, answer_for_schema

LIMIT = 700_000
"""Bytes any file of the child may reach: results.jsonl (every answer of every example) reaches it
first; a cache entry (one answer, in a file of its own past 32 KB) stays far below."""


def responder(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Long answers (about 40 KB each) that depend on the prompt."""
    h = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    values = {n: p["enum"][h % len(p["enum"])] for n, p in (schema.get("properties") or {}).items() if "enum" in p}
    return answer_for_schema(schema, values, f"argument {h % 99991}: " + "the facts support it. " * 1800)


def test_a_full_disk_exits_2_naming_the_file_and_the_resume_and_loses_nothing(tmp_path: Path) -> None:
    env = os.environ | {"COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    args = ["run", "jot", "--limit", "10", "--loops", "1", "--seed", "31", "--lm", "openai/fake"]
    with FakeServer(responder) as server:
        args += ["--api-base", server.url, "--concurrency", "2", "--out", str(tmp_path / "runs")]
        full = warm.run(
            [sys.executable, "-m", "courtroom.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            rlimits={resource.RLIMIT_FSIZE: (LIMIT, LIMIT)},  # in the child only
            timeout=300,
        )
        lines = [x for x in unwrapped(full.stderr) if x.startswith("error:")]
        assert full.returncode == 2, full.stderr  # before: exit 1, "OSError: [Errno 27] File too large"
        assert len(lines) == 1 and "Traceback" not in full.stderr
        assert "results.jsonl" in lines[0] and "free some space" in lines[0], lines[0]
        hint = shlex.split(lines[0].split("resume with: ")[1])
        run_dir = Path(hint[hint.index("--resume") + 1])
        written, bad = read_jsonl(run_dir / "results.jsonl")
        assert 0 < len(written) < 10 and not bad  # whole lines only: the cut-off write was taken back
        resumed = warm.run(
            [sys.executable, "-m", "courtroom.cli", *hint[1:]], capture_output=True, text=True, env=env, timeout=300
        )
        assert resumed.returncode == 0, resumed.stderr
        received = server.counts["requests"]
    rows, bad = read_jsonl(run_dir / "results.jsonl")
    print(f"full disk: {len(written)} of 10 results saved before the stop; after resume {len(rows)} lines")
    assert not bad and sorted(r["id"] for r in rows) == sorted(
        json.loads((run_dir / "meta.json").read_text())["example_ids"]
    )
    assert not [p for p, c in Counter(server.served).items() if c > 1]  # no answered call re-sent
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["n"] == 10 and summary["sent"] == received == 30
