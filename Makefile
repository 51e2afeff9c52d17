# Every entry point a user types.  Mininet and namespaces need root.
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.setup-stamp
TARGET  ?= auto
CONFIG  ?= experiments/configs/demo.toml
PYTEST_ARGS ?=

.PHONY: setup test demo p4 tofino2 clean-net clean bench

setup: $(STAMP)

# Re-run the set-up only when what it installs has changed.
$(STAMP): pyproject.toml scripts/setup.sh
	bash scripts/setup.sh
	touch $@

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

demo: $(STAMP)
	@test -f experiments/__main__.py || { echo "make demo: the experiment runner is not built yet (issue: runner); nothing to run" >&2; exit 1; }
	$(PY) -m experiments run $(CONFIG) --target $(TARGET)

bench: $(STAMP)
	$(PY) -m hosts.bench

# Removes what a crashed run left: only this project's namespaces, interfaces and processes.
clean-net: $(STAMP)
	$(PY) -m topologies.cleanup

clean:
	rm -rf build
