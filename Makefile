# Relaygate: `make run` serves the gateway on the embedded SQLite store, `make test` runs the tests.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PROJECTS := pyproject.toml adapters/openai/pyproject.toml adapters/anthropic/pyproject.toml adapters/gemini/pyproject.toml adapters/demo/pyproject.toml console/pyproject.toml
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: install browser postgres redis run test fuzz bench bench-workers bench-peers clean

install: $(STAMP)

$(STAMP): $(PROJECTS) constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt \
		-e '.[test]' -e adapters/openai -e adapters/anthropic -e adapters/gemini -e adapters/demo -e 'console[test]'
	touch $(STAMP)

run: install
	$(BIN)/relaygate init --host $(HOST) --port $(PORT)
	$(BIN)/relaygate serve --host $(HOST) --port $(PORT)

# Debian's Chromium drives the console's browser tests: installed when missing and possible (root, apt-get)
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium || \
		  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }; }; } || \
		echo "warning: Debian's chromium is not installed (needs root and apt-get): the console's browser tests will fail" >&2

# PostgreSQL for the store's tests: started when installed but not running (Debian's pg_ctlcluster)
postgres:
	@pg_isready -q -h 127.0.0.1 2>/dev/null || { command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ] && \
		pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql | tail -n 1) main start; } || \
		echo "warning: no PostgreSQL on 127.0.0.1:5432: its tests are skipped (and fail in CI); see RELAYGATE_TEST_POSTGRES in README.md" >&2

# Redis for the shared rate limits' tests: started when installed but not running (nothing kept on disk)
redis:
	@redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || { command -v redis-server >/dev/null && \
		redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no --dir /tmp >/dev/null && sleep 1; } || \
		echo "warning: no Redis on 127.0.0.1:6379: the Redis tests will fail" >&2

test: install browser postgres redis
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

# the property tests with many examples each (the normal suite runs a few): RELAYGATE_EXAMPLES=N to change
fuzz: install postgres redis
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -q -k "property or any_json" tests adapters

bench: install
	$(BIN)/python bench/overhead.py

# requests per second of `serve --workers 2` on two CPUs against one worker on one (needs 2 CPUs)
bench-workers: install
	$(BIN)/python bench/workers_scaling.py

# not in CI: installs the LiteLLM proxy and Portkey's gateway (pinned) outside the
# repository, then runs the same load through them beside Relaygate and the floor
PEERS ?= $(HOME)/.cache/relaygate-bench-peers
bench-peers: install
	RELAYGATE_BENCH_PEERS=$(PEERS) PYTHON=$(BIN)/python bench/peers.sh
	$(BIN)/python bench/overhead.py --peers $(PEERS)

clean:
	rm -rf $(VENV)
