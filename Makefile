# Every entry point a user types.  Mininet and namespaces need root.
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.setup-stamp
TARGET  ?= auto
# One demo for every target: --rate auto keeps its links at the config's rates
# where the target carries its packets (the twin; BMv2's performance build,
# scripts/build-p4-toolchain.sh) and slows them to fit where it does not
# (BMv2's packages: half the rates)
CONFIG  ?= experiments/configs/victim_straggle8_small.toml
PYTEST_ARGS ?=
DEMO_ARGS ?= --scale auto --rate auto --repeat 1

.PHONY: setup test demo p4 tofino2 clean-net clean bench bench-victim

setup: $(STAMP)

# Re-run the set-up only when what it installs has changed (the engine's
# C++ included: setup rebuilds it).
ENGINE_SOURCES := engine/pyproject.toml engine/CMakeLists.txt $(wildcard engine/src/*) $(wildcard engine/symphony_engine/*.py)
$(STAMP): pyproject.toml scripts/setup.sh $(ENGINE_SOURCES)
	bash scripts/setup.sh
	touch $@

# Lint first (ruff, configured in pyproject.toml), then the whole suite.
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest $(PYTEST_ARGS)

# The default experiment (CONFIG, TARGET, DEMO_ARGS overridable): the
# victim scenario at half size scaled into the deployment's regime
# (--scale auto: K = 50, its steps about a thousand RTTs long), one repeat of
# both variants, and the simulation's predictions beside it; about 8 minutes
# on 2 cores (soft target: 7 1/4 min of runs, the simulation beside them 16 s).  The
# full-size scenario: CONFIG=experiments/configs/victim_straggle8.toml (about
# 11 minutes).  It prints per job the measured change, the oracle's, the
# simulation's at the deployment's scale and the regime verdict.  Exits with
# the runner's code.  TARGET=bmv2: the same, 8 minutes on BMv2's
# performance build; on its packages at half the rates, so about twice that.
demo: $(STAMP)
	$(PY) -m experiments run $(CONFIG) --target $(TARGET) $(DEMO_ARGS)

# issue 15's targets on the demo scenario (8 repeats; SCENARIO=--all for every victim scenario)
bench-victim: $(STAMP)
	$(PY) -m experiments.bench.victim $(SCENARIO)

bench: $(STAMP)
	$(PY) -m experiments.bench.agents

# BMv2 JSON and P4Info of the Symphony program (p4/symphony.p4, v1model) into build/bmv2/.
p4:
	@command -v p4c-bm2-ss >/dev/null 2>&1 || { echo "make p4: p4c-bm2-ss (p4c's BMv2 backend) is not installed; install p4c (Debian/Ubuntu: the p4lang-p4c package from the p4lang OBS repository, or build github.com/p4lang/p4c), or use the Vagrant VM" >&2; exit 1; }
	mkdir -p build/bmv2
	p4c-bm2-ss --std p4-16 --arch v1model -o build/bmv2/symphony.json \
		--p4runtime-files build/bmv2/symphony.p4info.txtpb p4/symphony.p4

# Tofino2 (T2NA) build of the same source into build/tofino2/: Intel's bf-p4c
# (P4 Studio), or p4c built with its open-source Tofino backend
# (-DENABLE_TOFINO=ON; docs/tofino2.md).  A compiler warning fails it.
tofino2:
	bash scripts/tofino2.sh build/tofino2

# Removes what a crashed run left: only this project's namespaces, interfaces and processes.
clean-net: $(STAMP)
	$(PY) -m topologies.network.cleanup

clean:
	rm -rf build
