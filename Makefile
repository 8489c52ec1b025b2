# The two commands of README.md: `make run` and `make test`. Everything a fresh
# machine lacks is installed by the targets themselves: `make run` only what the
# operator needs, `make test` the test and lint tools, MariaDB's server binaries,
# Chromium and Prometheus.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
KOPF_FLAGS ?= --all-namespaces
PYTEST_ARGS ?=
# make test's pytest runs in this many processes (pytest-xdist; docs/development.md).
TEST_WORKERS ?= 2
# Each file whole on one worker, in the order collected; the Galera files together
# (tests/support/scheduling.py).
PARALLEL := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
LINTED := operator tests testbed bench demo soak

.PHONY: install install-demo install-test run test check coverage docs lint unit bench demo soak mariadb chromium prometheus screenshots clean

## The operator and its CLI, nothing else.
install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

## The operator with the emulated cluster `make demo` runs it against (kmock), nothing else.
install-demo: $(VENV)/.installed-demo

$(VENV)/.installed-demo: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[demo]'
	touch $@

## The operator with the test, lint and benchmark tools.
install-test: $(VENV)/.installed-test

# The test extra holds the demo's: the tests' `make demo` (two may run at once in a
# parallel run) then installs nothing.
$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-demo

## Runs the operator against the current kubeconfig (SQLite unless JOBARCHIVE_DB_URL says otherwise).
run: install
	$(VENV)/bin/kopf run $(KOPF_FLAGS) operator/main.py

lint: install-test
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(VENV)/bin/vulture operator/jobarchive vulture_whitelist.py --min-confidence 60

## MariaDB's server binaries for the private server the tests start, and galera-4 and rsync
## for their three-node Galera cluster (apt-get, as root).
mariadb:
	tests/install-mariadb.sh

## Debian's Chromium and its chromedriver, for the console's browser tests (apt-get, as root).
chromium:
	tests/install-chromium.sh

## Debian's Prometheus, for the private server the efficiency tests scrape the test bed's
## exporters with (apt-get, as root; no service is started).
prometheus:
	tests/install-prometheus.sh

## The documentation site, built from docs/ into site/: a broken link or anchor fails it.
docs: install-test
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

## Lint and the documentation, then every test, in TEST_WORKERS processes. pytest's exit
## code 5 (nothing collected) is a failure here.
test: install-test docs lint mariadb chromium prometheus
	@rc=0; $(PY) -m pytest $(PARALLEL) $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; \
	exit $$rc

## The benchmarks of docs/benchmarks.md, each figure beside its baseline (a private MariaDB; a few minutes).
bench: install-test mariadb prometheus
	$(PY) -m bench $(BENCH_ARGS)

## The operator under a realistic workload and injected faults, then the archive checked
## against the truth (a private MariaDB; SOAK_ARGS="--minutes 60 --seed 7", default 10 minutes).
soak: install-test mariadb
	$(PY) -m soak $(SOAK_ARGS)

# Every port the demo opens, when chosen: the console's, the emulated cluster's, the metrics'.
DEMO_FLAGS = $(if $(KEEP),--keep) $(if $(DEMO_PORT),--port $(DEMO_PORT)) \
	$(if $(DEMO_EMULATOR_PORT),--emulator-port $(DEMO_EMULATOR_PORT)) \
	$(if $(DEMO_METRICS_PORT),--metrics-port $(DEMO_METRICS_PORT))

## The operator against an emulated cluster on SQLite, six jobs' lives, then what jobarchive reads;
## with KEEP=1 it keeps the archive and serves the console on it (DEMO_PORT, else a free port);
## DEMO_EMULATOR_PORT and DEMO_METRICS_PORT choose its other ports (else free ones).
demo: install-demo
	$(PY) -m demo $(DEMO_FLAGS)

## The console's screenshots (docs/reading.md), taken by the browser tests from the demo's data.
screenshots: install-test mariadb chromium
	JOBARCHIVE_SCREENSHOTS=docs $(PY) -m pytest -q tests/browser -k demo

unit: install-test
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

## Lint, then the fast tests (tests/unit: no database server, no operator, no browser), in
## about a minute; `make test` runs everything.
check: install-test lint
	$(PY) -m pytest -q tests/unit $(PYTEST_ARGS)

## Every test as make test runs them, under coverage.py (the operator and every other Python
## process the tests start too): the package's statement coverage, module by module and in
## total. Not part of make test: it makes the run slower.
coverage: install-test mariadb chromium prometheus
	@rm -f .coverage .coverage.*
	@rc=0; $(PY) -m coverage run -m pytest $(PARALLEL) $(PYTEST_ARGS) || rc=$$?; \
	$(PY) -m coverage combine --quiet && $(PY) -m coverage report; \
	exit $$rc

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache .hypothesis *.egg-info operator/*.egg-info \
		.coverage .coverage.*
