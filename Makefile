# `make plan` and `make test` each create .venv and install on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= aws-train-p5

.PHONY: plan test bench lint policies clean

$(BIN)/gpufleet: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,preflight]'
	touch $@

plan: $(BIN)/gpufleet
	$(BIN)/gpufleet plan --stack $(STACK)

test: $(BIN)/gpufleet
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n auto --dist worksteal

bench: $(BIN)/gpufleet
	$(BIN)/python -m pytest -m bench -s tests/bench

lint: $(BIN)/gpufleet
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info
