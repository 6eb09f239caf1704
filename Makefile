# make run: set up .venv if needed and start the app. make test: set up and run every test.
# make check: the fast tier for the edit-run loop (no embedded model, browser or large samples).
PY ?= python3
# Python keeps each module's compiled code in __pycache__, so the tests' many processes (workers, app servers,
# subprocesses) compile torch's and Streamlit's modules once, not each time (install.sh compiles nothing, and an
# environment that says not to write them made every process start 1.3 s slower).
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run dev test check setup system-deps space-check bench traces messages clean

# The same script builds the Hugging Face Space's image (Dockerfile): one install, two places.
$(STAMP): requirements.txt requirements-ray.txt requirements-dev.txt scripts/install.sh
	PYTHON=$(PY) scripts/install.sh $(VENV) requirements-dev.txt
	touch $(STAMP)

setup: $(STAMP)

# The address first, then the app (scripts/run.sh): the first free port from 8501, or make run PORT=N.
run: $(STAMP)
	@scripts/run.sh $(BIN)/python

# The app that reloads what you edit (the shipped config watches no files).
dev: $(STAMP)
	@scripts/run.sh $(BIN)/python --server.fileWatcherType auto --server.runOnSave true

# The system packages the tests need (chromium, g++, ninja, the aarch64 cross-compiler and qemu-user), installed
# from Debian when missing and run as root; without root it names the command to run and stops before any test.
system-deps:
	@scripts/system_deps.sh

# Everything: the tests that wait on a clock (the browser, Ray's replicas) one at a time, and beside them every
# other test on three workers at the lowest priority, so that they take only the CPU the clocked ones leave
# (scripts/test_tiers.sh). A test whose tool is missing fails (--require-tools), and so does the C++ kernel's
# where it cannot be built (paradec/cpu/kernels.py): make test never skips.
test: system-deps $(STAMP)
	$(BIN)/ruff check .
	PARADEC_KERNEL=require scripts/test_tiers.sh $(BIN)/python

# The Hugging Face Space's image, built as the Hub builds it and checked like CI: started as the Space starts it,
# opened in Chromium, its C++ kernel loaded (scripts/space_check.py). 11-15 min on 2 cores, ~6 GB of disk while
# it runs, as root: not part of make test; a maintainer runs it before a release (docs/serving.md).
space-check: $(STAMP)
	@scripts/system_deps.sh --space
	$(BIN)/python scripts/space_check.py $(SPACE_CHECK_ARGS)

check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -n 2 --dist loadscope --no-loadscope-reorder -m "not slow and not peers" tests

# Every method against AR (and Hugging Face generate) on one held-out Spec-Bench prompt per category; then the
# README's table from the file (scripts/readme_numbers.py; make traces likewise redraws docs/kernel.md's).
bench: $(STAMP)
	$(BIN)/python -m paradec bench --methods pld,sps,jacobi,lookahead,medusa,eagle,eagle2,eagle3 \
		--prompts assets/data/specbench_questions.jsonl --split heldout --per-category 1 --max-new-tokens 64 \
		--peers hf --out assets/bench/cpu-2core.json $(BENCH_ARGS)
	$(BIN)/python scripts/readme_numbers.py

traces: $(STAMP)
	$(BIN)/python scripts/record_traces.py
	$(BIN)/python scripts/readme_numbers.py

# The French catalogue (ui/i18n.py): the code's new strings into locale/fr/LC_MESSAGES/paradec.po, removed ones out;
# translate the entries left empty (tests/test_i18n.py fails on any).
messages: $(STAMP)
	$(BIN)/python scripts/messages.py

clean:
	rm -rf $(VENV)
