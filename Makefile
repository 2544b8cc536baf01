# shardq developer tasks. `make` (= `make test`) is what CI runs.

GO ?= go

.DEFAULT_GOAL := test
.PHONY: test check bench demo

## test: static checks, then all tests with the race detector
test: check
	$(GO) test -race -count=1 ./...

## check: go.mod tidy, gofmt, go vet and staticcheck (tracked in go.mod as a tool)
check:
	@if ! $(GO) mod tidy -diff >/dev/null 2>&1; then \
		echo "go.mod is not tidy (run: go mod tidy):"; \
		$(GO) mod tidy -diff; \
		exit 1; \
	fi
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files need formatting (run: gofmt -w .):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

## bench: run all benchmarks, no tests
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## demo: run the shardq demo
demo:
	$(GO) run ./cmd/shardq demo
