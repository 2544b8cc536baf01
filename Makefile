# shardq developer tasks. `make` (= `make test`) is what CI runs.

GO ?= go
STATICCHECK_VERSION ?= v0.8.2
# Where `go install` puts binaries: GOBIN if set, else GOPATH/bin.
GOBIN_DIR := $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)
STATICCHECK ?= $(GOBIN_DIR)/staticcheck

.DEFAULT_GOAL := test
.PHONY: test check tools bench demo

## test: static checks, then all tests with the race detector
test: check
	$(GO) test -race -count=1 ./...

## check: gofmt, go vet and staticcheck
check:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files need formatting (run: gofmt -w .):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi
	$(GO) vet ./...
	@if [ ! -x "$(STATICCHECK)" ] && ! command -v "$(STATICCHECK)" >/dev/null 2>&1; then \
		echo "staticcheck not found at $(STATICCHECK); run: make tools"; \
		exit 1; \
	fi
	$(STATICCHECK) ./...

## tools: install staticcheck into $(GOBIN_DIR)
tools:
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## bench: run all benchmarks, no tests
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## demo: run the shardq demo
demo:
	$(GO) run ./cmd/shardq demo
