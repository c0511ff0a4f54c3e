# Thin wrapper: the logic lives in scripts/ and in Go.
SHELL := /bin/bash
export PATH := $(CURDIR)/bin:$(PATH)
export TF_CLI_CONFIG_FILE := $(CURDIR)/build/terraformrc
# The tests' masters keep their data in temporary dirs, and the audit calls a data dir on
# tmpfs UNSAFE (a reboot empties it): where the temporary dir is a tmpfs (/tmp on Debian 13,
# Fedora, Arch), they go under build/tmp, on the checkout's disk.
export TMPDIR := $(shell d="$${TMPDIR:-/tmp}"; case "$$(stat -f -c %T "$$d" 2>/dev/null)" in (tmpfs|ramfs) mkdir -p "$(CURDIR)/build/tmp" && echo "$(CURDIR)/build/tmp";; (*) echo "$$d";; esac)
# One version for the binaries, the provider's registry version, the module tags and the
# CHANGELOG heading: the VERSION file (see RELEASING.md).
VERSION := $(shell cat VERSION)
PROVIDER_VERSION ?= $(VERSION)
export PROVIDER_VERSION
GO_TEST_FLAGS ?= -count=1 -timeout 40m
# make test's go test runs: packages at a time (-p) and t.Parallel tests at a time
# (-parallel). The acceptance and end-to-end tests mostly wait (terraform, restart holds), so
# they run 4 at a time; the race-detected tests stay at the 2 cores' default of 2 (the race
# detector costs CPU, and 8 at a time failed load-sensitive tests on a busy machine), their
# packages 4 at a time.
TEST_P ?= 4
TEST_PARALLEL ?= 4
TEST_PARALLEL_RACE ?= 2
# Three Go modules (RELEASING.md): the root module (library, CLI, harnesses), provider/ and
# test/, joined by go.work; `./...` at the root is the root module's packages, so the commands
# that cover everything name ./provider/... and ./test/... too.
ALL_PKGS := ./... ./provider/... ./test/...

.PHONY: all deps test-deps modules-check release-config-check build provider lockagent test test-unit test-hosts test-modules test-serial chaos lint lint-code check-docs check-parts cross release-check modproxy bench model fuzz-protocol demo down docs module-docs fmt vet clean

all: build

deps: ## what make demo needs: redis-server (apt-get) and terraform (PATH >= 1.5, else v1.11.4 built from source with only the local-state backends into ./bin)
	@scripts/deps.sh

test-deps: ## what tests and lint need: staticcheck, terraform-docs, terraform >= 1.11, the host tests' and monitoring tests' Debian packages (one apt-get call, beside the Go builds); then make deps
	@scripts/test-deps.sh

modules-check: ## every go.mod/go.sum is tidy (go mod tidy -diff, with GOPROXY=off after a pass that fills the module cache; writes nothing)
	@scripts/modules.sh check

build: ## build the provider (installed into the local filesystem mirror) and bin/lockagent in one go build
	@scripts/build-binaries.sh provider lockagent

provider: ## build the provider and install it into the local filesystem mirror
	@scripts/install-provider.sh

modproxy: ## a file Go module proxy of this checkout at VERSION in build/modproxy; prints the environment (eval "$$(make -s modproxy)") under which your module resolves the kit with no replace
	@go run ./internal/modproxy/cmd/modproxy -out build/modproxy

lockagent: ## build bin/lockagent with its version stamped (-X main.version=$(PROVIDER_VERSION))
	@scripts/build-binaries.sh lockagent

test: test-deps ## everything: unit, real-redis, provider acceptance (TF_ACC=1), terratest, five hosts, module tests (CI's command; it first installs the provider and compiles every test once)
	@# The parts side by side (scripts/test.sh): the root module under the race detector (one
	@# go test), the provider's acceptance and the local end-to-end tests (one go test), the
	@# five-host labs in two lanes (with the short chaos run: one round of every fault kind),
	@# the module tests; Go runs the packages and tests of each go test side by side (TEST_P,
	@# TEST_PARALLEL). Each part's output in build/test/<part>.log, printed whole when it ends,
	@# and each part's time at the end.
	@GO_TEST_FLAGS="$(GO_TEST_FLAGS)" TEST_P=$(TEST_P) TEST_PARALLEL=$(TEST_PARALLEL) TEST_PARALLEL_RACE=$(TEST_PARALLEL_RACE) scripts/test.sh

test-serial: test-deps provider ## make test's tests in three steps one after another (slower; one output stream)
	go test -race $(GO_TEST_FLAGS) ./internal/... ./lockagent/...
	TF_ACC=1 go test $(GO_TEST_FLAGS) ./provider/... ./test/...
	@scripts/test-modules.sh

test-modules: provider ## the modules' own `terraform test` files (plan-time refusals, outputs)
	@scripts/test-modules.sh

test-hosts: test-deps provider ## five masters on five systemd hosts (network namespaces + systemd-nspawn; root): the hosts runbook
	go test $(GO_TEST_FLAGS) ./internal/hostconfig/ ./internal/hostlab/
	go test $(GO_TEST_FLAGS) -run 'TestHosts' ./test/

# `make chaos` sizes: CHAOS_DURATION is the least time the nemesis runs (it also goes on until
# every fault kind was injected); CHAOS_SEED=<seed a run printed> replays its schedule.
CHAOS_DURATION ?= 15m
CHAOS_WORKERS ?= 12
CHAOS_KEYS ?= 4
chaos: test-deps ## Jepsen-style run on five systemd hosts (root): workers contend under a nemesis, checkers over the history; reports in build/chaos/
	rm -rf build/chaos
	CHAOS_DURATION=$(CHAOS_DURATION) CHAOS_WORKERS=$(CHAOS_WORKERS) CHAOS_KEYS=$(CHAOS_KEYS) REDLOCK_REQUIRE_HOSTS=1 \
	  CHAOS_REPORT_DIR=$(CURDIR)/build/chaos go test -count=1 -timeout 3h -v -run '^TestChaos$$' ./internal/chaos/

test-unit: ## library and harness tests only (no terraform)
	go test -race $(GO_TEST_FLAGS) ./internal/... ./lockagent/...

.PHONY: monitoring-check
monitoring-check: ## Prometheus rules in monitoring/: promtool check + unit tests (installs Debian's prometheus when missing)
	@scripts/monitoring-check.sh

model: ## check the hand-off protocol's Spin model exhaustively; its negative controls must fail
	@scripts/model.sh

DURATION ?= 90s
fuzz-protocol: ## stateful protocol tests on real masters for DURATION (default 90s; e.g. DURATION=1h)
	@# A failure is shrunk for up to 10 minutes: each try reruns a sequence on real masters.
	cd lockagent/redlock && PROTOCOL_FUZZ_DURATION=$(DURATION) go test -count=1 -timeout 0 -v -run '^TestProtocolStateMachine$$' . -rapid.shrinktime=10m

bench: deps ## side-by-side benchmark: lockagent vs redsync vs bare go-redis on five masters
	go run ./lockagent/cmd/lockagent bench --spawn 5

DEMO_TIMINGS := build/timings/demo.tsv
demo: ## the main job: five masters from examples/local-five, validated (installs only redis-server and terraform)
	@rm -f $(DEMO_TIMINGS)
	@DEMO_TIMINGS=$(CURDIR)/$(DEMO_TIMINGS) scripts/demo-build.sh
	@DEMO_TIMINGS=$(CURDIR)/$(DEMO_TIMINGS) scripts/demo.sh

down: ## destroy what `make demo` created
	@scripts/down.sh

docs: ## regenerate docs/ from the provider schema (tfplugindocs, offline)
	@scripts/docs.sh

fmt:
	gofmt -w $$(git ls-files '*.go')
	terraform fmt -recursive modules examples

vet:
	go vet $(ALL_PKGS)

lint: modules-check lint-code ## staticcheck (pinned, installed by make test-deps), go vet, terraform fmt -check, tidy modules

lint-code: ## make lint without the modules check: staticcheck, go vet, terraform fmt -check (reads the tree only)
	staticcheck $(ALL_PKGS)
	go vet $(ALL_PKGS)
	terraform fmt -check -recursive modules examples

cross: ## the released binaries build for every release platform (linux/darwin, amd64/arm64)
	@for p in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do \
	  echo "cross: $$p"; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 go build -o /dev/null ./provider/cmd/terraform-provider-redlock ./lockagent/cmd/lockagent || exit 1; \
	done

release-check: ## everything a release needs: version, consumer check, goreleaser check + snapshot, cross builds, no testing in lockagent
	@scripts/release-check.sh full

release-config-check: ## the cheap part (CI, every run): version sources agree, .goreleaser.yml parses and names what we build
	@scripts/release-check.sh config

module-docs: ## regenerate the inputs/outputs tables in modules/*/README.md (terraform-docs, pinned, offline)
	@scripts/module-docs.sh

check-docs: ## fails when docs/ or modules/*/README.md is not what the schema and the modules' .tf files generate (generates into a temporary directory, with its own provider build: writes nothing in the checkout)
	@scripts/docs.sh check
	@scripts/module-docs.sh check
	@$(MAKE) --no-print-directory check-parts

# The names come from docs/ (checked against the provider's schema above) and modules/.
check-parts: ## fails when README.md's parts table misses a resource, data source, ephemeral resource, function or module
	@missing=0; \
	row() { grep -q -- "^| \`$$1" README.md || { echo "README.md: the parts table has no row starting | \`$$1 (for $$2): add one" >&2; missing=1; }; }; \
	for f in docs/resources/*.md; do row "redlock_$$(basename $$f .md)\` (resource)" $$f; done; \
	for f in docs/data-sources/*.md; do row "redlock_$$(basename $$f .md)\` (data source)" $$f; done; \
	for f in docs/ephemeral-resources/*.md; do row "redlock_$$(basename $$f .md)\` (ephemeral resource)" $$f; done; \
	for f in docs/functions/*.md; do row "provider::redlock::$$(basename $$f .md)(" $$f; done; \
	for d in modules/*/; do row "modules/$$(basename $$d)\`" $$d; done; \
	exit $$missing

clean:
	rm -rf build bin/lockagent
