# flashsim: the two README commands, each bootstrapping .venv on a fresh machine.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: validate test test-slow bench lint readme reference clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

validate: $(STAMP)
	$(BIN)/flashsim validate

test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" -n 2 tests

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

reference: $(STAMP)
	$(BIN)/python tools/generate_reference.py
