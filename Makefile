# flashsim: the two README commands, each bootstrapping .venv on a fresh machine.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: validate test test-loaded test-slow bench lint readme readme-times reference clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

validate: $(STAMP)
	$(BIN)/flashsim validate

# The suite `make test` runs; `make test-loaded` runs the same beside two busy processes
# (tools/with_cpu_load.py), as on a shared machine: tests bound their work, not their wall time.
TEST_ARGS := -q -m "not slow" -n 2 tests

test: $(STAMP)
	$(BIN)/python -m pytest $(TEST_ARGS)

test-loaded: $(STAMP)
	$(BIN)/python tools/with_cpu_load.py --procs 2 -- $(BIN)/python -m pytest $(TEST_ARGS)

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow tests

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

lint: $(STAMP)
	$(BIN)/ruff check flashsim tests benchmarks
	$(BIN)/mypy flashsim

clean:
	rm -rf $(VENV) build *.egg-info

readme: $(STAMP)
	$(BIN)/python tools/update_readme_table.py

# Time every scenario the README quotes a time for (one at a time, start-up included) and
# rewrite those times and the README's run-time table; takes as long as the runs (~25 min).
readme-times: $(STAMP)
	$(BIN)/python tools/time_scenarios.py

reference: $(STAMP)
	$(BIN)/python tools/generate_reference.py
