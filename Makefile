# Relaygate: `make run` serves the gateway on the embedded SQLite store, `make test` runs the tests.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PROJECTS := pyproject.toml adapters/openai/pyproject.toml adapters/demo/pyproject.toml console/pyproject.toml
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: install run test bench clean

install: $(STAMP)

$(STAMP): $(PROJECTS) constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt \
		-e '.[test]' -e adapters/openai -e adapters/demo -e console
	touch $(STAMP)

run: install
	$(BIN)/relaygate init
	$(BIN)/relaygate serve --host $(HOST) --port $(PORT)

test: install
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python bench/overhead.py

clean:
	rm -rf $(VENV)
