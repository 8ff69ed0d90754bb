# Every target a developer or CI needs. `make` alone lists them (text after `##` is the help).
#
# Tools that are not Go or git (kube-apiserver and etcd for integration tests, golangci-lint) are
# built from the Go module proxy by scripts under ci/ and cached outside the repository in
# $SEMAPHORE_CACHE_DIR (default ~/.cache/semaphore), so a fresh machine needs nothing else.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

GO ?= go
# Components are the directories under components/ that hold a main.go; binaries are named
# semaphore-<component>, like the images and charts.
COMPONENTS := $(patsubst components/%/main.go,%,$(wildcard components/*/main.go))
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/kube-semaphore/semaphore/internal/metrics.Version=$(VERSION)

# Integration tests start two or three API servers (each an etcd and a kube-apiserver) per
# package. On the 2-core CI machines more than two packages at once starves them and turns
# timeouts into flakes, so the default is fixed rather than taken from the core count.
TEST_PARALLEL ?= 2
# -v so that every test's result line (--- PASS/FAIL with its duration) shows in CI logs.
GOTESTFLAGS ?= -v
TEST_TIMEOUT ?= 40m
BENCHTIME ?= 1x
# Charts whose README.md `generate` writes with chartdoc (from Chart.yaml and the `# --` comments
# of values.yaml): every chart under charts/ with a values.yaml, subcharts included, except library
# charts, which have no values of their own. Found through their Chart.yaml (find does not follow
# the subcharts' charts/common symlinks), so a new chart needs no change here.
DOC_CHARTS := $(shell find charts -name Chart.yaml 2>/dev/null | sort | while read -r f; do \
	d=$${f%/Chart.yaml}; \
	if [ -f "$$d/values.yaml" ] && ! grep -qE '^type:[[:space:]]*library' "$$f"; then echo "$$d"; fi; \
	done)
# Alert rules (alerts/*.yaml) and Grafana dashboards (dashboards/*.json) are copied by `generate`
# into the charts that render them (semaphore-common's PrometheusRule and dashboard templates read
# a chart's files/alerts/*.yaml and files/dashboards/*.json). The file name picks the chart:
#   alerts/<component>*.yaml, dashboards/<component>*.json, also with a "semaphore-" prefix
#   (dashboards/semaphore-wireguard.json)  -> $(UMBRELLA_CHART)/charts/<component>/files/...
#   any other name: what spans components,
#   such as an overview dashboard           -> $(UMBRELLA_CHART)/files/... (the umbrella's own)
# Each file goes to exactly one chart: a subchart installed alone still ships its component's
# rules and dashboards, and nothing is installed twice (a rule in two charts fires twice, two
# ConfigMaps with one dashboard uid fight in Grafana). promtool tests (*_test.yaml, *.test.yaml)
# stay out. A copy whose source is gone is removed; an unchanged copy is not rewritten.
UMBRELLA_CHART := charts/semaphore
MONITORING_COMPONENTS := service-mirror policy wireguard
MONITORING_CHARTS := $(UMBRELLA_CHART) $(addprefix $(UMBRELLA_CHART)/charts/,$(MONITORING_COMPONENTS))
# Files `generate` writes; `verify` fails when they differ from what is committed.
GENERATED := docs/metrics.md docs/configuration.md $(addsuffix /README.md,$(DOC_CHARTS)) \
	$(foreach c,$(MONITORING_CHARTS),$(c)/files/alerts $(c)/files/dashboards)

# The directory holding kube-apiserver and etcd, for envtest. ci/kube-binaries.sh prints its
# progress on stderr (a cold build takes minutes) and the directory as its last stdout line.
KUBE_ASSETS = $${KUBEBUILDER_ASSETS:-$$(bash ci/kube-binaries.sh | tail -n 1)}
# Tests find CoreDNS by running ci/coredns.sh themselves, but go test holds a package's output
# until the package finishes; building it beforehand keeps a cold build's progress visible.
PREBUILD_COREDNS = if [ -f ci/coredns.sh ]; then bash ci/coredns.sh >/dev/null; fi
# As root the tests run real nodes (lab/node) and network namespaces (test/datapath): what they
# need from Debian (ci/node-packages.sh) is installed, and kubelet, kube-proxy and the rest of
# the Kubernetes binaries are built, before any test starts, so that nothing skips for want of
# what `make test` provides (in CI such a skip fails: testenv.SkipForMissing). Without root
# those tests skip for want of root, and nothing is installed.
PREPARE_ROOT_TESTS = if [ "$$(id -u)" = 0 ]; then bash ci/node-packages.sh && bash ci/kube-binaries.sh all >/dev/null; fi

##@ General

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} \
		/^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-10s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: build
build: ## Build the component binaries and the kubectl plugin (kubectl-semaphore) into ./bin/
	@mkdir -p bin
	@if [ -z "$(COMPONENTS)" ]; then echo "build: no components/*/main.go yet, nothing to build"; fi
	@for c in $(COMPONENTS); do \
		echo "$(GO) build -o bin/semaphore-$$c ./components/$$c"; \
		$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o "bin/semaphore-$$c" "./components/$$c"; \
	done
	@echo "$(GO) build -o bin/kubectl-semaphore ./cmd/kubectl-semaphore"
	@$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/kubectl-semaphore ./cmd/kubectl-semaphore

# Without Docker and without a base image (internal/images, docs/images.md): reproducible, the
# same commit gives the same digests. VERSION goes into the binaries; IMAGES_FLAGS goes to the
# command, e.g. IMAGES_FLAGS='-push registry.example.net/semaphore' or '-platforms linux/amd64'.
.PHONY: images
images: ## Build the three images (OCI, linux/amd64 + linux/arm64) into .build/images
	@$(GO) run ./hack/images -version '$(VERSION)' $(IMAGES_FLAGS)

.PHONY: fmt
fmt: ## Format all Go code (gofmt, and goimports through golangci-lint when available)
	@$(GO_FILES) | xargs -0 -r gofmt -w
	@gl=$$(bash ci/golangci-lint.sh | tail -n 1); \
	if [ -n "$$gl" ]; then "$$gl" fmt; fi

.PHONY: generate
generate: ## Regenerate generated files: reference docs, chart READMEs, the charts' alerts and dashboards
	@mkdir -p docs; \
	tmp=$$(mktemp); trap 'rm -f "$$tmp"' EXIT; \
	for gen in metrics:docs/metrics.md config:docs/configuration.md; do \
		$(GO) run ./hack/$${gen%%:*}doc >"$$tmp"; \
		cat "$$tmp" >"$${gen#*:}"; \
		echo "generate: wrote $${gen#*:}"; \
	done
	@if [ -n "$(DOC_CHARTS)" ]; then \
		$(GO) run ./hack/chartdoc $(DOC_CHARTS); \
		for d in $(DOC_CHARTS); do echo "generate: wrote $$d/README.md"; done; \
	fi
	@$(GO) run ./hack/chartfiles -umbrella $(UMBRELLA_CHART)

.PHONY: clean
clean: ## Remove build output (the tool cache in ~/.cache/semaphore is kept)
	rm -rf bin

##@ Checks

# All .go files that are ours: not dot-directories (.git, a local .cache), build output or
# testdata (which may hold deliberately odd Go).
GO_FILES = find . -type f -name '*.go' -not -path './.*/*' -not -path './bin/*' \
	-not -path '*/testdata/*' -print0

.PHONY: lint
lint: ## gofmt, go vet and golangci-lint (.golangci.yml); reports all three before failing
	@failed=""; \
	echo "gofmt -l"; \
	unformatted=$$($(GO_FILES) | xargs -0 -r gofmt -l); \
	if [ -n "$$unformatted" ]; then \
		echo "these files are not gofmt-formatted (run make fmt):"; echo "$$unformatted"; failed="$$failed gofmt"; \
	fi; \
	echo "$(GO) vet ./..."; \
	$(GO) vet ./... || failed="$$failed go-vet"; \
	gl=$$(bash ci/golangci-lint.sh | tail -n 1); \
	if [ -z "$$gl" ]; then \
		echo "lint: golangci-lint is not available (see above), skipping it"; \
	else \
		echo "golangci-lint run ./..."; \
		"$$gl" run ./... || failed="$$failed golangci-lint"; \
	fi; \
	$(MAKE) lint-charts || failed="$$failed lint-charts"; \
	if [ -n "$$failed" ]; then echo "lint: FAILED:$$failed"; exit 1; fi

# Every chart that has ci/*-values.yaml scenarios: `helm lint --strict` on each, and a render,
# because helm lint reports a template's fail() only as [INFO]. helm is built from the module
# proxy by ci/helm.sh. The Go tests in test/charts go much further.
.PHONY: lint-charts
lint-charts: ## helm lint --strict and helm template for every chart scenario (charts/**/ci/*-values.yaml)
	@helm=$$(bash ci/helm.sh | tail -n 1); failed=""; \
	for values in $$(find charts -path '*/ci/*-values.yaml' | sort); do \
		chart=$${values%/ci/*}; \
		if ! out=$$("$$helm" lint --strict "$$chart" -f "$$values" 2>&1); then \
			echo "$$out"; failed="$$failed $$values"; continue; \
		fi; \
		if ! out=$$("$$helm" template lint-check "$$chart" -f "$$values" 2>&1 >/dev/null); then \
			echo "$$out"; failed="$$failed $$values"; continue; \
		fi; \
		echo "lint-charts: $$chart with $${values##*/}: ok"; \
	done; \
	if [ -n "$$failed" ]; then echo "lint-charts: FAILED:$$failed"; exit 1; fi

.PHONY: verify
verify: generate ## Fail if generated files or go.mod/go.sum are not up to date
	@$(GO) mod tidy -diff || { echo "verify: go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	@git diff --exit-code -- $(GENERATED) || \
		{ echo "verify: generated files changed: run make generate and commit the result"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- $(GENERATED)); \
	if [ -n "$$untracked" ]; then \
		echo "verify: generated files are not committed:"; echo "$$untracked"; exit 1; \
	fi
	@echo "verify: generated files are up to date"

# `test` is what CI runs (.ci/run) and what the README tells contributors to run: lint, verify,
# then every test. All of them always run, so a formatting slip never hides test results; lint
# and verify go first because they take seconds and the tests take many minutes. It fails if any
# of them failed, and says which, and how long each took (a cold run's time goes mostly to
# building tools: docs/development.md).
TEST_STEPS := lint verify test-go lab-check test-alerts

.PHONY: test
test: ## Lint, verify, run all tests against real API servers, then check the lab (what CI runs)
	@failed=""; took=""; \
	for step in $(TEST_STEPS); do \
		start=$$SECONDS; \
		$(MAKE) $$step || failed="$$failed $$step"; \
		d=$$((SECONDS - start)); took="$$took, $$step $$((d / 60))m$$((d % 60))s"; \
	done; \
	echo "make test: took $${took#, } ($$((SECONDS / 60))m$$((SECONDS % 60))s in all)"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed"; exit 1; fi; \
	echo "make test: lint, verify and tests passed"

# The tests that skipped and why, after the run, where a CI log shows them at a glance: as root
# with `make test`'s tools, only what the machine cannot offer should be there. With -v a test's
# log lines stream before its result line: the reason is the test's last `file.go:N:` line.
SKIP_SUMMARY = awk '/^=== RUN / { cur = $$3; last[cur] = ""; next } /^=== CONT / { cur = $$3; next } \
	/^ *--- SKIP: / { n++; skips = skips "  " $$3 ": " last[$$3] "\n"; next } \
	cur != "" && /^ +[^ ]+\.go:[0-9]+: / { line = $$0; sub(/^ +/, "", line); last[cur] = line } \
	END { printf "test-go: %d tests skipped%s\n%s", n, (n ? ":" : ""), skips }' "$$log"

# What CI does on a fresh machine, for finding what a warm machine hides: .ci/run in a fresh clone
# of HEAD with a new, empty HOME (so empty Go build, golangci-lint and ~/.cache/semaphore caches);
# it shares the Go module cache (FRESH_MODULES=1: not that either) and the Debian packages that
# ci/ installs, and says so. As long as a cold make test: about half an hour on 2 cores.
.PHONY: test-fresh
test-fresh: ## Run .ci/run as CI on a fresh machine: a fresh clone of HEAD, every cache empty (ci/fresh-run)
	@bash ci/fresh-run

.PHONY: test-go
test-go: ## Only run the Go tests (unit and integration)
	@assets="$(KUBE_ASSETS)"; \
	if [ -z "$$assets" ]; then echo "test: ci/kube-binaries.sh printed no directory"; exit 1; fi; \
	echo "KUBEBUILDER_ASSETS=$$assets"; \
	export KUBEBUILDER_ASSETS="$$assets"; \
	$(PREBUILD_COREDNS); \
	$(PREPARE_ROOT_TESTS); \
	log=$$(mktemp); trap 'rm -f "$$log"' EXIT; status=0; \
	echo "+ $(GO) test -count=1 -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) $(GOTESTFLAGS) ./..."; \
	$(GO) test -count=1 -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) $(GOTESTFLAGS) ./... 2>&1 | tee "$$log" || status=$$?; \
	$(SKIP_SUMMARY); \
	exit $$status

# The pure tests alone, in well under two minutes: every test that needs kube-apiserver and etcd,
# CoreDNS, root and network namespaces, promtool or a build of the components skips under -short
# (testenv.SkipIfShort) before it looks for or builds anything.
.PHONY: test-short
test-short: ## Only the pure Go tests (go test -short ./...): no API servers, no root, nothing to build
	$(GO) test -short -count=1 ./...

# Alert rules: `promtool check rules` on every rule file under alerts/ and `promtool test rules`
# on their unit tests (alerts/*_test.yaml: every alert fires in one case and stays quiet in
# another). promtool comes from Debian's prometheus package, installed by ci/promtool.sh when
# missing. Both run, then it fails if either failed.
.PHONY: test-alerts
test-alerts: ## Check the alert rules (alerts/*.yaml) and run their promtool unit tests
	@promtool=$$(bash ci/promtool.sh | tail -n 1); \
	if [ -z "$$promtool" ]; then echo "test-alerts: ci/promtool.sh printed no path"; exit 1; fi; \
	shopt -s nullglob; rules=(); tests=(); \
	for f in alerts/*.yaml; do \
		case $${f##*/} in *_test.yaml|*.test.yaml) tests+=("$$f");; *) rules+=("$$f");; esac; \
	done; \
	if [ $${#rules[@]} -eq 0 ]; then echo "test-alerts: no alerts/*.yaml, nothing to check"; exit 0; fi; \
	failed=""; \
	"$$promtool" check rules "$${rules[@]}" || failed="$$failed check"; \
	if [ $${#tests[@]} -gt 0 ]; then "$$promtool" test rules "$${tests[@]}" || failed="$$failed test"; fi; \
	if [ -n "$$failed" ]; then echo "test-alerts: FAILED:$$failed"; exit 1; fi; \
	echo "test-alerts: $${#rules[@]} rule files checked, $${#tests[@]} test files passed"

# Benchmarks run one package at a time so that they do not compete for the two cores. The
# service mirror's package takes about 35 minutes (the original tool it is compared with, and 20
# remote clusters), 50 with SEMAPHORE_BENCH_LONG=1.
.PHONY: bench
bench: ## Run every benchmark (BENCHTIME=1x by default) against real API servers
	@pkgs=$$({ grep -rlE --include='*_test.go' --exclude-dir=testdata '^func Benchmark' components internal lab test || true; } \
		| xargs -r -n 1 dirname | sort -u | sed 's|^|./|'); \
	if [ -z "$$pkgs" ]; then echo "bench: no benchmarks yet"; exit 0; fi; \
	assets="$(KUBE_ASSETS)"; \
	if [ -z "$$assets" ]; then echo "bench: ci/kube-binaries.sh printed no directory"; exit 1; fi; \
	export KUBEBUILDER_ASSETS="$$assets"; \
	$(PREBUILD_COREDNS); \
	set -x; \
	$(GO) test -count=1 -p 1 -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -timeout 120m $$pkgs

##@ Local lab

.PHONY: lab
lab: ## Bring up the local lab: three real clusters with Semaphore running (Ctrl-C stops it)
	@bash ci/lab

.PHONY: lab-down
lab-down: ## Tear down a lab started in another terminal
	@bash ci/lab down

.PHONY: lab-status
lab-status: ## Show the status of the running lab
	@bash ci/lab status

# How long `make soak` churns the lab.
SOAK_DURATION ?= 10m

.PHONY: soak
soak: ## Soak the lab: churn, remote cuts and controller pods deleted for SOAK_DURATION (10m), then check mesh, footprint, alerts (not in make test)
	@bash ci/lab -duration $(SOAK_DURATION) soak

.PHONY: lab-check
lab-check: ## Bring the lab up, assert what it shows, tear it down (ci/lab-check; as root, also without nodes)
	@bash ci/lab-check
