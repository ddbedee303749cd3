# tiertune: entry points.  Run as root on Debian bookworm (Ceph 16.2.15 from Debian).
#   make check      install test deps, lint, unit tests, real-cluster tests
#   make demo       start a local cluster with a cache tier, show tiertune on a burst
#   make demo-stop  stop the demo cluster
#   make bench SCENARIO=<file> POLICY=<policy> BACKEND=sim|cluster OUT=<file.json>
#   make bench-sim      every scenario under every policy on the simulator
#   make bench-cluster  the real-cluster subset (Ceph defaults vs tiertune)
#   make bench-calibrate  the simulator on the cluster runs' scenario, side by side

SHELL := /bin/bash
# The unit tests import Debian's mgr_module from /usr/share/ceph/mgr: no
# byte code may be written next to it (a distro-owned folder).
export PYTHONDONTWRITEBYTECODE := 1
# The Ceph Python bindings are Debian packages for Debian's interpreter: use it,
# not whichever python3 comes first on PATH.
PYTHON := /usr/bin/python3
DEMO_DIR ?= /tmp/tiertune-demo
LINT_VENV := .venv-lint
PYTEST_ARGS ?=

DEB_RUNTIME := ceph-mon ceph-mgr ceph-osd ceph-common python3-rados python3-numpy fio
DEB_TEST := python3-pytest python3-pytest-timeout python3-hypothesis python3-scipy python3-venv \
	python3-yaml python3-rbd python3-matplotlib
SCENARIO ?= tools/bench/scenarios/bursty-write-fits.yaml
POLICY ?= tiertune
BACKEND ?= sim
OUT ?= bench-results/$(BACKEND)/$(notdir $(basename $(SCENARIO)))--$(subst :,_,$(subst $(comma),_,$(POLICY))).json
comma := ,
BENCH_SIM_DIR ?= bench-results/sim
BENCH_CLUSTER_DIR ?= bench-results/cluster
TIME_SCALE ?= 1.0
SEEDS ?= 20
HELD_OUT ?= 10

.PHONY: check deps deps-test lint unit standalone demo demo-stop clean bench-module-cost \
	bench-module-cost-shared \
	bench-tick-instructions bench-mgr-tick-cost \
	bench bench-sim bench-cluster bench-calibrate bench-sim-speed bench-sim-seeds \
	bench-agent-pacing bench-agent-priority bench-full-spells bench-full-risk bench-warm-start \
	bench-switch-time bench-hit-set-drop bench-fit-cost bench-tick-split \
	bench-evict-rate bench-sim-defaults

check: deps-test lint unit standalone

deps:
	@tools/install-debs.sh $(DEB_RUNTIME)

deps-test:
	@tools/install-debs.sh $(DEB_RUNTIME) $(DEB_TEST)

$(LINT_VENV)/.ok: requirements-lint.txt
	$(PYTHON) -m venv $(LINT_VENV)
	$(LINT_VENV)/bin/pip install -q -r requirements-lint.txt
	touch $@

lint: $(LINT_VENV)/.ok
	$(LINT_VENV)/bin/ruff check src/pybind/mgr/tiertune tools qa/standalone/tiertune
	MYPYPATH=/usr/share/ceph/mgr $(LINT_VENV)/bin/mypy --config-file mypy.ini \
	    src/pybind/mgr/tiertune
	# The module (not its tests) at the oldest Python it supports
	# (cannot_run.MIN_PYTHON): ceph-mgr runs the Python it was built with.
	MYPYPATH=/usr/share/ceph/mgr $(LINT_VENV)/bin/mypy --config-file mypy.ini \
	    --python-version 3.8 $(wildcard src/pybind/mgr/tiertune/*.py)
	$(LINT_VENV)/bin/mypy --config-file mypy.ini tools/localcluster tools/capture_fixtures.py \
	    tools/bench

unit:
	cd src/pybind/mgr/tiertune && $(PYTHON) -m pytest -q -p no:cacheprovider tests $(PYTEST_ARGS)
	$(PYTHON) -m pytest -q -p no:cacheprovider tools/bench/tests $(PYTEST_ARGS)

standalone:
	$(PYTHON) -m pytest -q -p no:cacheprovider qa/standalone/tiertune $(PYTEST_ARGS)

demo: deps
	@tools/demo.sh $(DEMO_DIR)

demo-stop:
	@cd tools && $(PYTHON) -m localcluster stop --dir $(DEMO_DIR)

# What one tick costs as pools, cache pools and PGs grow (prints a table).
bench-module-cost:
	$(PYTHON) tools/bench/module_cost.py $(MODULE_COST_ARGS)

# The same under the shared libpython3.11 that ceph-mgr embeds (a 5-line
# program linked to it, built under build/): 12-15% dearer on this VM than
# Debian's python3, whose libpython is linked in statically.
LIBPYTHON := /usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0
bench-module-cost-shared:
	mkdir -p build
	$(CC) -O2 tools/bench/pyshared.c $(LIBPYTHON) -o build/pyshared
	build/pyshared tools/bench/module_cost.py $(MODULE_COST_ARGS)

# The same tick's instructions, counted by callgrind (about 2.5 min):
# comparable across hours, unlike CPU seconds on a shared VM.
bench-tick-instructions:
	$(PYTHON) tools/bench/tick_instructions.py $(TICK_INSTRUCTIONS_ARGS)

# The tick inside a real ceph-mgr on a fresh local cluster, as tiertune's
# own status reports it, at 1 and 64 cache pools (about 11 min; 20 here
# in session 29).  MGR_TICK_COST_ARGS='--steps 64 --load-ops 192
# --load-period 30' writes to every tier while it measures (busy models).
bench-mgr-tick-cost:
	$(PYTHON) tools/bench/mgr_tick_cost.py $(MGR_TICK_COST_ARGS)

# One run: a JSON record (metrics, series, ratio changes) in OUT.
bench: deps-test
	$(PYTHON) tools/bench/run.py one --scenario $(SCENARIO) --policy $(POLICY) \
	    --backend $(BACKEND) --out $(OUT) --time-scale $(TIME_SCALE)

# The suites: records, results.md (table and the issue's checks) and plots.
bench-sim: deps-test
	$(PYTHON) tools/bench/run.py suite --backend sim --out-dir $(BENCH_SIM_DIR)

bench-cluster: deps-test
	$(PYTHON) tools/bench/run.py suite --backend cluster --out-dir $(BENCH_CLUSTER_DIR) \
	    --time-scale $(TIME_SCALE)

# The simulator against the real cluster: the cluster records in
# BENCH_CLUSTER_DIR rerun on the simulator, both figures and the difference.
bench-calibrate:
	$(PYTHON) tools/bench/calibrate.py --dir $(BENCH_CLUSTER_DIR)

# The suite on several PG hash spreads: does best-static's hindsight pick
# stay best on another spread, and how tiertune compares on each; then the
# picks against tiertune on HELD_OUT more spreads that no pick saw.
bench-sim-seeds: deps-test
	$(PYTHON) tools/bench/seeds.py --seeds $(SEEDS) --held-out $(HELD_OUT) \
		--out $(BENCH_SIM_DIR)/seeds.md

# How many clean objects the OSD agent evicts per flush it completes, by
# the cache's clean share, on fresh local clusters (about 2 min a share).
bench-agent-pacing: deps-test
	$(PYTHON) tools/bench/agent_pacing.py $(AGENT_PACING_ARGS)

# How fast the OSD agent evicts clean objects when it has nothing to flush,
# on fresh local clusters (about 5 min a run with the defaults).
bench-evict-rate: deps-test
	$(PYTHON) tools/bench/evict_rate.py $(EVICT_RATE_ARGS)

# Which PGs the OSD agent flushes first: those that evict before those that
# only flush?  On a fresh local cluster (about 2 min).
bench-agent-priority: deps-test
	$(PYTHON) tools/bench/agent_priority.py

# How long single PGs stay FULL: bursty-write-fits-cluster under Ceph's
# defaults on a fresh local cluster (about 10 min), beside the simulator.
bench-full-spells: deps-test
	$(PYTHON) tools/bench/full_spells.py \
	    --scenario tools/bench/scenarios/cluster/bursty-write-fits.yaml \
	    --out $(BENCH_CLUSTER_DIR)/full-spells.md --workdir /tmp/tiertune-bench

# Is TIERTUNE_CACHE_FULL_RISK raised before writes block, and only then?
# Every shipped scenario under tiertune on the simulator, PG spreads 0-1
# (about 1 min).
bench-full-risk: deps-test
	$(PYTHON) tools/bench/full_risk_check.py --seeds 2 --out $(BENCH_SIM_DIR)/full-risk-check.md

# tiertune started 20 s (the suite's protocol) and 90 s before the
# workload, beside Ceph's defaults and best-static's seed-0 pick, on PG
# spreads 0-4 (about 10 to 12 min on 2 cores: bench-results/sim/warm-start.md).
bench-warm-start: deps-test
	$(PYTHON) tools/bench/warm_start.py --lead-ticks 2,9 --seeds 5

# tiertune at the module's defaults (30 s tick, min_interval_s 600) beside
# the suite's settings, Ceph's defaults and best-static's seed-0 pick, every
# shipped scenario (about 9 min on 2 cores: bench-results/sim/at-defaults.md).
bench-sim-defaults: deps-test
	$(PYTHON) tools/bench/at_defaults.py --out $(BENCH_SIM_DIR)/at-defaults.md

# What the time of a ratio change costs on the two read scenarios (seconds).
bench-switch-time: deps-test
	$(PYTHON) tools/bench/switch_time.py --scenarios scan-pollutes-hot-set,zipf-read-large-working-set \
		--at 1,10,20,30,40,50,60,90 --seeds 5

# How much of the read scenarios' seed-0 gap is the hit sets a pool set drops (seconds).
bench-hit-set-drop: deps-test
	$(PYTHON) tools/bench/hit_set_drop.py --scenario scan-pollutes-hot-set
	$(PYTHON) tools/bench/hit_set_drop.py --scenario zipf-read-large-working-set

# A model fit from scratch (the first tick's), 120 and 2000 samples, on the stub mgr.
bench-fit-cost: deps-test
	$(PYTHON) tools/bench/fit_cost.py --lengths 120,2000 --runs 30

# A steady tick's models-and-law step split into the decisions and the
# fits, at 64 cache pools on the stub mgr (seconds).
bench-tick-split: deps-test
	$(PYTHON) tools/bench/tick_split.py

# How long the simulator takes for a day on a 256-PG cache pool.
bench-sim-speed:
	$(PYTHON) tools/bench/sim_speed.py

clean:
	rm -rf $(LINT_VENV) build .mypy_cache .ruff_cache
