# Two entry points for a fresh machine: `make demo` and `make test`. Both create .venv and install on demand.
# Test tiers (pytest markers, declared in pyproject.toml and enforced by --strict-markers):
#   `make test`      every test (CI): the full tier, whole lowerings, models, Vela, the host runtime; about 50 minutes on 2 cores.
#   `make test-fast` the `fast` tier for the edit-test loop (under 2 minutes on an idle 2-core machine): pure-Python
#                    units, pass rewrites, the converter-level operator table, one smoke lower() and one SDK child.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
JOBS ?= 2

.PHONY: demo test test-fast install clean supported-ops backend-suite

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1; } || \
	  echo "note: chromium not installed; the HTML report rendering test will be skipped"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) -m executorch_neutron demo --target imxrt700 -o out/demo.pte

test: $(STAMP)
	$(VENV)/bin/ruff check --no-cache --select F,E9 src tests benchmarks examples
	$(PY) -m pytest -q -n $(JOBS) --dist loadfile tests

# ExecuTorch's backend test suite (the wheel's operators/) on the imxrt700, imxrt700cm and imx93 flows: long (hours
# on two cores); writes out/backend_suite/<flow>.json and docs/backend_suite.md
backend-suite: $(STAMP)
	nice -n 10 $(PY) benchmarks/backend_suite.py --write-docs

test-fast: $(STAMP)
	$(VENV)/bin/ruff check --no-cache --select F,E9 src tests benchmarks examples
	$(PY) -m pytest -q -n $(JOBS) -m fast tests

supported-ops: $(STAMP)
	$(PY) -m executorch_neutron ops --markdown > SUPPORTED_OPS.md

clean:
	rm -rf $(VENV) out build
