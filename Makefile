# Relaygate: `make run` serves the gateway on the embedded SQLite store, `make test` runs the tests.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# Every distribution of the repository, by folder: one line to add a plugin distribution.
# Each has a pyproject.toml, a VERSION link to the top one, and a `test` extra.
DISTRIBUTIONS := . adapters/openai adapters/anthropic adapters/gemini adapters/demo adapters/azure adapters/bedrock adapters/vertex console plugins/api plugins/postgres plugins/redis plugins/metrics plugins/tracing
PROJECTS := $(addsuffix /pyproject.toml,$(DISTRIBUTIONS))
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
PIP := $(BIN)/python -m pip --disable-pip-version-check
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: install install-test dist browser container-engine coding-clis oidc-provider postgres redis run test test-kernel test-plugins test-browser test-e2e fuzz bench bench-workers bench-peers clean

# what serving needs and nothing more (make run): every distribution, editable, without test tools
install: $(STAMP)

$(STAMP): $(PROJECTS) VERSION constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -c constraints.txt $(foreach d,$(DISTRIBUTIONS),-e $(d))
	touch $(STAMP)

# the same, plus each distribution's test extra (make test)
install-test: $(TEST_STAMP)

$(TEST_STAMP): $(STAMP)
	$(PIP) install --quiet -c constraints.txt $(foreach d,$(DISTRIBUTIONS),-e '$(d)[test]')
	touch $(TEST_STAMP)

# a wheel and an sdist of every distribution in dist/
dist: install-test
	rm -rf dist
	for d in $(DISTRIBUTIONS); do $(BIN)/python -m build --quiet --outdir dist $$d || exit 1; done

run: install
	$(BIN)/relaygate init --host $(HOST) --port $(PORT)
	$(BIN)/relaygate serve --host $(HOST) --port $(PORT)

# Debian's Chromium drives the console's browser tests: installed when missing and possible (root, apt-get)
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium || \
		  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }; }; } || \
		echo "warning: Debian's chromium is not installed (needs root and apt-get): the console's browser tests will fail" >&2

# Podman (with runc and debootstrap) for the container tests (tests/container/): installed
# from Debian's packages when missing and possible (root, apt-get); they skip without it
container-engine:
	@command -v podman >/dev/null && command -v runc >/dev/null && command -v debootstrap >/dev/null || \
		{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc debootstrap || \
		  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc debootstrap; }; }; } || \
		echo "warning: podman, runc or debootstrap is missing (needs root and apt-get): the container tests are skipped" >&2

# The real coding CLIs the end-to-end tests drive (pinned; from npm into the venv): the
# tests that need one are skipped without it. Installed again when this list changes.
CODING_CLIS := @openai/codex@0.171.0 @anthropic-ai/claude-code@2.1.197 @google/gemini-cli@0.61.0
CODING_CLIS_STAMP := $(VENV)/coding-clis/.installed-$(shell echo '$(CODING_CLIS)' | cksum | cut -d' ' -f1)
coding-clis: $(CODING_CLIS_STAMP)

$(CODING_CLIS_STAMP):
	@command -v npm >/dev/null && mkdir -p $(VENV)/coding-clis && \
		npm install --silent --no-audit --no-fund --prefix $(VENV)/coding-clis $(CODING_CLIS) && touch $@ || \
		echo "warning: npm is missing or failed: the tests driving the real coding CLIs are skipped" >&2

# panva's oidc-provider (pinned; from npm into the venv): the real OpenID provider the
# console's single sign-on tests sign in through (console/tests/test_sso*.py), skipped without it
OIDC_PROVIDER := oidc-provider@9.13.3
OIDC_PROVIDER_STAMP := $(VENV)/oidc-provider/.installed-$(shell echo '$(OIDC_PROVIDER)' | cksum | cut -d' ' -f1)
oidc-provider: $(OIDC_PROVIDER_STAMP)

$(OIDC_PROVIDER_STAMP):
	@command -v npm >/dev/null && mkdir -p $(VENV)/oidc-provider && \
		npm install --silent --no-audit --no-fund --prefix $(VENV)/oidc-provider $(OIDC_PROVIDER) && touch $@ || \
		echo "warning: npm is missing or failed: the single sign-on tests against a real OpenID provider are skipped" >&2

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

# Every lane, on three processes (pytest-xdist; WORKERS=1 for one): the lanes are markers
# given at collection by the top conftest.py, which also sorts the slow lanes first. One
# lane alone: make test-kernel (the core on SQLite: no PostgreSQL, Redis, browser, node or
# podman), test-plugins (adapters, console, PostgreSQL and Redis), test-browser (Chromium),
# test-e2e (container, coding CLIs, replicas, wheels). Three, not two, on two CPUs: most tests
# wait (on gateways, child processes, Chromium, PostgreSQL), and a third process fills the
# CPUs meanwhile; a fourth measured no faster and costs a fourth collection. Python writes
# its bytecode for these runs even where the environment says not to (PYTHONDONTWRITEBYTECODE):
# each worker then reads the test modules pytest has rewritten instead of rewriting them again.
WORKERS ?= 3
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n $(WORKERS) --dist loadgroup

test: install-test browser container-engine coding-clis oidc-provider postgres redis
	$(BIN)/mypy
	$(PYTEST)

test-kernel: install-test
	$(PYTEST) -m kernel

test-plugins: install-test oidc-provider postgres redis
	$(PYTEST) -m plugins

test-browser: install-test browser oidc-provider
	$(PYTEST) -m browser

test-e2e: install-test container-engine coding-clis postgres redis
	$(PYTEST) -m e2e

# the property tests with many examples each (the normal suite runs a few): RELAYGATE_EXAMPLES=N to change
fuzz: install-test postgres redis
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -q -k "property or any_json" tests adapters

bench: install-test
	$(BIN)/python bench/overhead.py

# requests per second of `serve --workers 2` on two CPUs against one worker on one (needs 2 CPUs)
bench-workers: install-test
	$(BIN)/python bench/workers_scaling.py

# not in CI: installs the LiteLLM proxy and Portkey's gateway (pinned) outside the
# repository, then runs the same load through them beside Relaygate and the floor
PEERS ?= $(HOME)/.cache/relaygate-bench-peers
bench-peers: install-test
	RELAYGATE_BENCH_PEERS=$(PEERS) PYTHON=$(BIN)/python bench/peers.sh
	$(BIN)/python bench/overhead.py --peers $(PEERS)

clean:
	rm -rf $(VENV)
