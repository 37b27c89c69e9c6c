# Two commands do all set-up on a fresh machine: `make serve` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.lock pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: serve test lint typecheck deps unit browser bench fuzz soak lock clean

$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/sandex serve --db sandex.db

test: lint typecheck deps unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy engine

# Every import of engine/ and api_adapter/ is a runtime dependency (what `pip install .`
# gives); tests/ and bench/ may also import dev ones, but nothing only transitive.
deps: $(STAMP)
	$(BIN)/deptry .
	$(BIN)/deptry tests bench --exclude '\.venv' --ignore DEP002,DEP004

unit: $(STAMP) browser
	$(BIN)/python -m pytest -n 2 -m "not slow"

# The backtest report's test opens the page in headless Chromium; without one it skips.
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "chromium could not be installed: the report's browser test will skip"

# Every benchmark of bench/ (about 15-20 minutes on 2 cores), then docs/performance.md.
# HTTP throughput comes from wrk (Debian's package); without it a Python closed loop.
bench: $(STAMP)
	@command -v wrk >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq wrk >/dev/null) || echo "wrk could not be installed: HTTP throughput from the Python client"
	$(BIN)/python bench/run.py $(BENCH_ARGS)

# Long property-based fuzzing of every operation (the suite runs a few examples each).
fuzz: $(STAMP)
	$(BIN)/python bench/fuzz.py --examples $(or $(EXAMPLES),200)

# Mixed load on loopback for DURATION seconds: throughput, latency, memory, then verify.
soak: $(STAMP)
	$(BIN)/python bench/soak.py --seconds $(or $(DURATION),60)

lock: $(STAMP)
	$(BIN)/pip-compile --quiet --extra dev --strip-extras --no-emit-index-url --no-emit-find-links -o requirements.lock pyproject.toml

clean:
	rm -rf $(VENV) sandex.db sandex.db-wal sandex.db-shm
