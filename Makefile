# sched: build, run and test. `make help` lists the targets.
GO        ?= go
BIN       := bin/sched
BENCHBIN  := bin/sched-bench
PKGS      := ./...
# The version, revision and build date stamped into bin/sched: `sched
# version`, `sched server members` (Build) and /v1/agent/self show them.
VERSION   ?= 0.1.0-dev
REVISION  ?= $(shell git rev-parse --short HEAD 2>/dev/null)
BUILDDATE := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS   := $(foreach p,cmd/sched/command agent,\
               -X github.com/schedhq/sched/$(p).version=$(VERSION) \
               -X github.com/schedhq/sched/$(p).revision=$(REVISION) \
               -X github.com/schedhq/sched/$(p).buildDate=$(BUILDDATE))

.PHONY: help build deps dev test print-ldflags e2e e2e-linearizability bench bench-cluster lint clean fuzz-short ui-screenshots ui-measure compose-up compose-down

help: ## list targets
	@grep -E '^[a-z][a-z0-9-]*:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-20s %s\n", $$1, $$2}'

build: ## build bin/sched and bin/sched-bench
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/sched
	$(GO) build -o $(BENCHBIN) ./cmd/sched-bench

deps: ## download every module the build and the tests need (test-only ones too), so make test then works offline
	$(GO) mod download
	$(GO) list -deps -test $(PKGS) > /dev/null
	$(GO) list -deps -test -tags e2e ./e2e/... > /dev/null

dev: deps build ## fetch the modules (deps), then run a dev agent (one server, HTTP on 127.0.0.1:4646)
	./$(BIN) agent -dev

test: lint ## vet, format check, and every test (unit, in-process, e2e against the real binary)
	$(GO) test -count=1 -timeout 15m $(PKGS)

e2e: ## end-to-end tests against real sched processes: 3-server clusters, kills, docker partitions, measurements
	$(GO) vet -tags e2e ./e2e/...
	$(GO) test -count=1 -timeout 15m -tags e2e -v ./e2e/...

bench: build ## go benchmarks, then the end-to-end benchmark against a fresh dev agent
	$(GO) test -run '^$$' -bench . -benchmem ./state/... ./raft/ ./http/... ./scheduler/...
	./$(BENCHBIN) -spawn ./$(BIN)

e2e-linearizability: ## only the porcupine linearizability checks under leader kills and partitions (part of make e2e)
	$(GO) test -count=1 -timeout 15m -tags e2e -run Linearizable -v ./e2e/...

bench-cluster: ## failover time, 3-server write throughput and follower reads, against real processes
	SCHED_MEASURE=1 $(GO) test -count=1 -timeout 15m -tags e2e -run TestMeasure -v ./e2e/...

# Each fuzz target as package:Target. `go test` runs their seed corpora
# (testdata/fuzz/ and f.Add) as plain tests; fuzz-short mutates each for
# FUZZTIME. The budget is a count of executions, not a duration: with a
# duration, Go 1.26's fuzz coordinator can report a bare "context deadline
# exceeded" failure when the time runs out under CPU load (golang/go#75804,
# fixed in Go 1.27), which would fail CI without any finding.
# FUZZMINIMIZE caps the executions spent minimizing each new interesting
# input: the default, 60 s for each, can spend a target's whole budget
# shrinking its first finds. Run a failing input's target by hand for a
# fully minimized one.
FUZZ_TARGETS := ./state/jobspec:FuzzParseHCL2 ./state/jobspec:FuzzParseHCL1 \
	./state/jobspec:FuzzHCLNesting \
	./state:FuzzJobDecodeValidate ./state:FuzzParsePolicyRules \
	./http/jsonapi:FuzzParseRequest ./state/store:FuzzDecodeCommand \
	./state/store:FuzzPrepareAgreesWithApply
FUZZTIME ?= 50000x
FUZZMINIMIZE ?= 10x

fuzz-short: ## run every fuzz target for FUZZTIME (50000 executions) each (CI runs this)
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; \
	  echo "fuzz $$pkg $$name"; \
	  $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg; \
	done

ui-screenshots: ## rewrite the web UI's screenshots under docs/ui/ (needs chromium)
	SCHED_UI_SCREENSHOTS=1 $(GO) test -count=1 -run '^TestUI(InBrowser|Pictures)$$' -v ./agent/

ui-measure: ## web UI: first render of the jobs list with 5,000 jobs, of the jobs, topology and allocation pages with 1,000 nodes too, and the JS and CSS bytes (needs chromium)
	SCHED_UI_MEASURE=1 $(GO) test -count=1 -timeout 30m -run '^TestUIMeasure(JobsList|Pictures)$$' -v ./agent/

lint: ## gofmt and go vet must be clean
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

print-ldflags: # the -ldflags of make build (deploy/compose/run.sh stamps its binary alike)
	@echo '$(LDFLAGS)'

compose-up: ## start 3 servers + 1 client in containers from the FROM scratch image (deploy/compose)
	deploy/compose/run.sh up

compose-down: ## stop the compose cluster and remove its volumes
	deploy/compose/run.sh down

clean: ## remove build output
	rm -rf bin deploy/compose/build
