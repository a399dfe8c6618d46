# `make plan` and `make test` each create .venv and install on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= aws-train-p5

.PHONY: plan test test-deep bench floors lint policies clean node-check-image

$(BIN)/gpufleet: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,resolve]'
	touch $@

# Mermaid's own parser for the diagram tests (tests/mermaid, pinned by its lockfile): needs node >= 20 and npm.
MERMAID := tests/mermaid/node_modules/.package-lock.json
$(MERMAID): tests/mermaid/package-lock.json
	@command -v npm >/dev/null || { echo "node/npm not found: install node >= 20 for Mermaid's parser (tests/mermaid)"; exit 1; }
	cd tests/mermaid && npm ci --no-audit --no-fund --loglevel=error

plan: $(BIN)/gpufleet
	$(BIN)/gpufleet plan --stack $(STACK)

# Before every commit: each property test with a small budget (tests/test_depth.py). One worker more than CPUs:
# many tests wait on a process of their own (apt-get, a registry, gpg, the CLI), and the spare worker fills that time.
WORKERS = $$(( $$(nproc) + 1 ))
test: $(BIN)/gpufleet $(MERMAID)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n $(WORKERS) --dist worksteal

# The full property budget (10,002 validations, 300 CLI runs, 300 plans, 3,000 JSON texts), the fuzz corpus, the
# policy pack over every shipped stack through the analyzer protocol and every Kubernetes stack's dev/prod names; CI
# runs it after `test`.
test-deep: $(BIN)/gpufleet
	GPUFLEET_TEST_DEPTH=deep $(BIN)/python -m pytest -n $(WORKERS) --dist worksteal tests/gpufleet/plan/test_properties.py \
		tests/gpufleet/stackfile/test_fuzz_leftovers.py tests/gpufleet/test_yaml_libyaml.py \
		tests/gpufleet/plan/test_budget_worst_case.py tests/gpufleet/plan/test_policies_pack_analyzer.py \
		tests/components/clouds/test_scheduler_names_environments.py tests/policies/test_props.py \
		tests/gpufleet/cli/test_json_output.py

bench: $(BIN)/gpufleet
	$(BIN)/python -m pytest -m bench -s tests/bench

# Each Pulumi distribution at pyproject.toml's floor, installed by pip beside the project, plans every shipped stack
# that uses it as the installed release does, and the libraries only a real run calls (Azure's sign-in, Alibaba's
# metric rules) pass their tests at theirs (~700 MB of wheels, cached by pip after the first run); CI runs it last.
floors: $(BIN)/gpufleet
	$(BIN)/python -m pytest -m floors tests/floors

lint: $(BIN)/gpufleet
	$(BIN)/ruff check .

# The AKS/ACK node-check image (images/README.md, "Node-check image"): make node-check-image IMAGE=REGISTRY/NAME:TAG
node-check-image:
	@command -v docker >/dev/null || { echo "node-check-image: docker not found; build images/nodecheck-image/Containerfile with another builder (images/README.md)"; exit 1; }
	DOCKER_BUILDKIT=1 docker build -f images/nodecheck-image/Containerfile -t $(or $(IMAGE),gpufleet-node-check:local) .

clean:
	rm -rf $(VENV) build *.egg-info
