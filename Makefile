# The two commands of README.md: `make run` (the default workflow) and `make test`.
# Both set everything up first; with nothing changed, set-up takes well under a second.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.vlcomp-installed
WORDNET_HOME := $(CURDIR)/resources/nltk_data
# The repository's copy first, then the user's own NLTK_DATA (wordnet_setup copies a
# WordNet it finds there instead of fetching one).
NLTK_DATA := $(WORDNET_HOME)$(if $(NLTK_DATA),:$(NLTK_DATA))
CORES ?= all
# pytest-xdist workers of make test (--dist loadfile: a module's tests, and its module-scoped
# workflow run, stay on one worker; the shared small run is made once, tests/integration)
TEST_WORKERS ?= 2
# pyproject.toml's test extra (CLIP_benchmark), installed without its dependencies
TEST_DEPS = $(shell $(PYTHON) -c 'import tomllib; \
  print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["test"]))')

export HF_HUB_OFFLINE := 1
export NLTK_DATA

.PHONY: setup run test lint lock clean

setup: $(STAMP) $(WORDNET_HOME)/corpora/wordnet/lexnames

$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps $(TEST_DEPS)
	touch $@

$(WORDNET_HOME)/corpora/wordnet/lexnames: $(STAMP)
	$(BIN)/python -m vlcomp.wordnet_setup $(WORDNET_HOME)

run: setup
	$(BIN)/snakemake --cores $(CORES) --profile profiles/default

test: setup
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile tests

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	$(BIN)/snakefmt --check Snakefile workflow/
	$(BIN)/snakemake --lint --cores 1

lock:
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^vlcomp' \
	  | (echo "# Full resolved set for Python 3.11 on x86_64 Linux; regenerate with: make lock"; cat) \
	  > requirements.lock

clean:
	rm -rf results logs benchmarks .snakemake
