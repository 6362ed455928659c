# The two commands a fresh machine needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The layer contracts of pyproject.toml; no cache: it takes under a second, and leaves no folder behind.
LINT_IMPORTS := $(BIN)/lint-imports --no-cache --no-logo

.PHONY: install demo test test-fast lint bench bench-report clean toxicity-models reference

# The shipped toxicity models (`toxicity: {classifier: shipped}`), trained from the labelled sets of the test
# data (Davidson's tweets, COLD): reproducible (one thread, fixed seed), nothing downloaded, not committed.
DATA ?= ../shared/data
TOXICITY_MODELS := models/toxicity
TOXICITY_CODE := curation/classifier_training.py curation/stages/classifier.py curation/stages/toxicity.py

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,train]'
	# Debian's Chromium, headless, for the dashboard test (needs root; without it that test skips, or fails under CI).
	command -v chromium >/dev/null || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		chromium >/dev/null) || echo "chromium not installed: tests/test_dashboard.py will skip"
	touch $(STAMP)

install: $(STAMP)
	@if [ -d $(DATA)/toxicity ]; then $(MAKE) --no-print-directory toxicity-models; \
	else echo "$(DATA)/toxicity not found: toxicity models not trained (make toxicity-models DATA=...)"; fi

toxicity-models: $(TOXICITY_MODELS)/en.ftz $(TOXICITY_MODELS)/zh.ftz

$(TOXICITY_MODELS)/%.ftz: $(STAMP) $(TOXICITY_CODE)
	$(BIN)/curate train-classifier --toxicity-preset $* --data-root $(DATA) --output $@

demo: $(STAMP)
	$(BIN)/curate run recipes/quickstart.yaml

test: $(STAMP)
	$(BIN)/ruff check curation pipelines tests benchmarks recipes
	$(LINT_IMPORTS)
	$(BIN)/python -m pytest -q

# docs/reference.md, generated from the recipe models (tests/test_reference.py fails while it is stale).
reference: $(STAMP)
	$(BIN)/curate schema --markdown > docs/reference.md

# The tests that start no Ray and no other process (`pytest --fast`: tests/conftest.py), for a quick loop;
# `make test` runs every test.
test-fast: $(STAMP)
	$(BIN)/ruff check curation pipelines tests benchmarks recipes
	$(LINT_IMPORTS)
	$(BIN)/python -m pytest -q --fast

lint: $(STAMP)
	$(BIN)/ruff check curation pipelines tests benchmarks recipes
	$(LINT_IMPORTS)

# Every script in benchmarks/ but the corpus builder and the report (helpers start with `_`): each writes
# benchmarks/results/<name>.json, and bench-report makes one table of them, benchmarks/RESULTS.md.
BENCHMARKS := $(filter-out warc_corpus report,$(basename $(notdir $(wildcard benchmarks/[a-z]*.py))))

bench: $(STAMP)
	for b in $(BENCHMARKS); do echo "== $$b"; $(BIN)/python benchmarks/$$b.py || exit 1; done
	$(MAKE) --no-print-directory bench-report

# Standard library only: no virtual environment needed.
bench-report:
	$(PYTHON) benchmarks/report.py

clean:
	rm -rf $(VENV) jobs .pytest_cache $(TOXICITY_MODELS)
