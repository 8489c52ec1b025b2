# The two commands of README.md: `make run` and `make test`. Everything a fresh
# machine lacks is installed by the targets themselves.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
KOPF_FLAGS ?= --all-namespaces
PYTEST_ARGS ?=

.PHONY: install run test lint unit bench demo mariadb clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

## Runs the operator against the current kubeconfig (SQLite unless JOBARCHIVE_DB_URL says otherwise).
run: install
	$(VENV)/bin/kopf run $(KOPF_FLAGS) operator/main.py

lint: install
	$(VENV)/bin/ruff check operator tests bench demo
	$(VENV)/bin/ruff format --check operator tests bench demo
	$(VENV)/bin/mypy

mariadb:
	tests/ensure-mariadb.sh

## Lint, then every test. pytest's exit code 5 (nothing collected) is a failure here.
test: install lint mariadb
	@rc=0; $(PY) -m pytest $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; \
	exit $$rc

## The benchmarks of README.md, each figure beside its baseline (MariaDB needed; a few minutes).
bench: install mariadb
	$(PY) -m bench $(BENCH_ARGS)

## The operator against an emulated cluster on SQLite, three jobs' lives, then what jobarchive reads.
demo: install
	$(PY) -m demo

unit: install
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis *.egg-info operator/*.egg-info
