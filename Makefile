# `make plan` and `make test` each create .venv and install on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= aws-train-p5

.PHONY: plan test bench lint policies clean node-check-image

$(BIN)/gpufleet: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,resolve]'
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

# The AKS/ACK node-check image (images/README.md, "Node-check image"): make node-check-image IMAGE=REGISTRY/NAME:TAG
node-check-image:
	@command -v docker >/dev/null || { echo "node-check-image: docker not found; build images/nodecheck-image/Containerfile with another builder (images/README.md)"; exit 1; }
	DOCKER_BUILDKIT=1 docker build -f images/nodecheck-image/Containerfile -t $(or $(IMAGE),gpufleet-node-check:local) .

clean:
	rm -rf $(VENV) build *.egg-info
