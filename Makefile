# Two entry points for a fresh machine: `make demo` and `make test`. Both create .venv and install on demand.
# `make test-fast`: the fast tier (tests marked `fast`) for the edit-test loop; `make test` runs everything.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
JOBS ?= 2

.PHONY: demo test test-fast install clean supported-ops

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

test-fast: $(STAMP)
	$(VENV)/bin/ruff check --no-cache --select F,E9 src tests benchmarks examples
	$(PY) -m pytest -q -n $(JOBS) -m fast tests

supported-ops: $(STAMP)
	$(PY) -m executorch_neutron ops --markdown > SUPPORTED_OPS.md

clean:
	rm -rf $(VENV) out build
