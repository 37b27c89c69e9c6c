# Two commands do all set-up on a fresh machine: `make serve` and `make test`.
# `make serve` installs the runtime lock only (the runtime dependencies and both extras,
# sweep and postgres: pyproject.toml); `make test` adds the dev lock on top.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# --no-compile: pip compiles in one process; COMPILE below compiles the environment and
# sandex's own packages on every core instead. Compiled at install, not on first import:
# where PYTHONDONTWRITEBYTECODE is set, nothing is written on import, and every process
# (each xdist worker, each server a test starts) would compile every module it imports.
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile
COMPILE := $(BIN)/python -m compileall -q -j 0 $(VENV)/lib engine api_adapter sandex >/dev/null
# A stamp per set of inputs: a changed lock (or pyproject.toml) installs again.
RUNTIME := $(VENV)/.runtime-$(shell cat requirements.lock pyproject.toml | cksum | cut -d' ' -f1)
DEV := $(VENV)/.dev-$(shell cat requirements.lock requirements-dev.lock pyproject.toml | cksum | cut -d' ' -f1)
# Extra arguments for `sandex serve`, e.g. make serve ARGS="--port 9000 --clock manual"
ARGS ?=

.PHONY: serve test lint imports typecheck deps unit api-postgres api-worlds slow browser postgres bench bench-ab fuzz soak lock clean

$(RUNTIME): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -r requirements.lock
	$(PIP) --no-deps -e .
	$(COMPILE)
	rm -f $(VENV)/.runtime-*
	touch $@

$(DEV): $(RUNTIME) requirements-dev.lock
	$(PIP) -r requirements-dev.lock
	$(COMPILE)
	rm -f $(VENV)/.dev-*
	touch $@

serve: $(RUNTIME)
	$(BIN)/sandex serve --db sandex.db $(ARGS)

# The fast suite in parallel, then tests/api again on PostgreSQL and again in worlds, then
# the slow tests (a server from the built wheel in a fresh venv, the suite without the
# reference documents, recordings) one at a time.
test: lint imports typecheck deps unit api-postgres api-worlds slow

lint: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The import contracts of pyproject.toml's [tool.importlinter]: the engine's layers, no
# adapter import, no I/O or wall clock in the domain.
imports: $(DEV)
	$(BIN)/lint-imports

typecheck: $(DEV)
	$(BIN)/mypy -p sandex

# Every import of engine/ and api_adapter/ is a runtime dependency (what `pip install .`
# gives); tests/ and bench/ may also import dev ones, but nothing only transitive.
deps: $(DEV)
	$(BIN)/deptry .
	$(BIN)/deptry tests bench --exclude '\.venv' --ignore DEP002,DEP004

unit: $(DEV) browser postgres
	$(BIN)/python -m pytest -n 2 -m "not slow"

# Every test of tests/api with its sandboxes on PostgreSQL (a throwaway cluster, or
# SANDEX_TEST_POSTGRES): the second pass of docs/operations.md, a few minutes on 2 cores.
api-postgres: $(DEV) postgres
	$(BIN)/python -m pytest tests/api -n 2 -m "not slow" --backend postgresql

# Every test of tests/api with each sandbox a fresh non-default world of its server (made
# through POST /v2/sandbox/worlds, driven under /w/{world}/): every behaviour proven inside
# a world too. The third pass of docs/operations.md.
api-worlds: $(DEV)
	$(BIN)/python -m pytest tests/api -n 2 -m "not slow" --world fresh

# The slow tests, then the slow API tests that hold for any store and any world (the
# fuzzers, the feed's long run, a hundred worlds at once) once more on PostgreSQL and in
# worlds, as the passes above.
SLOW_IN_EVERY_MODE = tests/api/test_fuzz.py tests/api/test_market_stream.py tests/api/test_worlds.py
slow: $(DEV) postgres
	$(BIN)/python -m pytest -m slow
	$(BIN)/python -m pytest $(SLOW_IN_EVERY_MODE) -n 2 -m slow --backend postgresql
	$(BIN)/python -m pytest $(SLOW_IN_EVERY_MODE) -n 2 -m slow --world fresh

# Debian's Chromium, for the tests that open a page in it headless: the backtest report's
# and the console's (Playwright drives this one: `playwright install` cannot download here,
# and Playwright needs no chromium-driver). Without it they skip saying why; under CI=true
# the console's fail instead.
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "chromium could not be installed: the browser tests will skip"

# The PostgreSQL store's tests start a throwaway cluster with Debian's binaries
# (/usr/lib/postgresql/*/bin); without them they skip, saying why. SANDEX_TEST_POSTGRES=
# postgresql://... runs them on a server of one's own instead (docs/operations.md).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq postgresql >/dev/null) || echo "PostgreSQL could not be installed: the PostgreSQL tests will skip"

# Every benchmark of bench/ (about 15-20 minutes on 2 cores), then docs/performance.md.
# HTTP throughput comes from wrk (Debian's package); without it a Python closed loop.
bench: $(DEV)
	@command -v wrk >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq wrk >/dev/null) || echo "wrk could not be installed: HTTP throughput from the Python client"
	$(BIN)/python bench/run.py $(BENCH_ARGS)

# A paired A/B of two revisions on bench's figures (bench/ab.py): make bench-ab BASE=rev
# [HEAD=rev] [ROUNDS=5] [AB_ARGS="--only http_orders --out ab.md"]; about 11 minutes a round.
HEAD ?= HEAD
ROUNDS ?= 5
bench-ab: $(DEV)
	@test -n "$(BASE)" || (echo "make bench-ab BASE=rev: the revision to compare against" && false)
	@command -v wrk >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq wrk >/dev/null) || echo "wrk could not be installed: HTTP throughput from the Python client"
	$(BIN)/python bench/ab.py --base $(BASE) --head $(HEAD) --rounds $(ROUNDS) $(AB_ARGS)

# Long property-based fuzzing of every operation (the suite runs a few examples each).
fuzz: $(DEV)
	$(BIN)/python bench/fuzz.py --examples $(or $(EXAMPLES),200)

# Mixed load on loopback for DURATION seconds: throughput, latency, memory, then verify.
soak: $(DEV)
	$(BIN)/python bench/soak.py --seconds $(or $(DURATION),60)

# Both locks from pyproject.toml with pip-tools (docs/development.md says why): the runtime
# one with every extra a server may use (EXTRAS: what `pip install sandex` leaves out), then
# the dev one constrained to it, so that the two agree on every shared package.
# Pins already in a lock stay; `make lock UPGRADE=1` moves every pin to the newest release.
LOCK := $(BIN)/pip-compile --quiet --strip-extras --no-emit-index-url --no-emit-find-links $(if $(UPGRADE),--upgrade)
EXTRAS := --extra sweep --extra postgres
lock: $(DEV)
	$(LOCK) $(EXTRAS) -o requirements.lock pyproject.toml
	$(LOCK) $(EXTRAS) --extra dev -c requirements.lock -o requirements-dev.lock pyproject.toml

clean:
	rm -rf $(VENV) sandex.db sandex.db-wal sandex.db-shm
