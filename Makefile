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
LDFLAGS := -s -w -X github.com/kube-semaphore/semaphore/internal/version.Version=$(VERSION)

# Integration tests start two or three API servers (each an etcd and a kube-apiserver) per
# package. On the 2-core CI machines more than two packages at once starves them and turns
# timeouts into flakes, so the default is fixed rather than taken from the core count.
TEST_PARALLEL ?= 2
# -v so that every test's result line (--- PASS/FAIL with its duration) shows in CI logs.
GOTESTFLAGS ?= -v
TEST_TIMEOUT ?= 40m
# The packages test-go and test-short test: PKGS=./components/policy/... or PKGS='./internal/addrguard ./lab/...'.
PKGS ?= ./...
BENCHTIME ?= 1x
# What the scripts under ci/ read from make.
export GO GOTESTFLAGS TEST_TIMEOUT TEST_PARALLEL PKGS BENCHTIME

# Charts whose README.md `generate` writes with chartdoc (from Chart.yaml and the `# --` comments
# of values.yaml): every chart under charts/ with a values.yaml, subcharts included, except library
# charts (charts/common), which have no values of their own. Found through their Chart.yaml (find
# does not follow each chart's charts/common link to the library), so a new chart needs no change.
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
# The values.schema.json of the umbrella and of each component's subchart are composed by
# `generate` (hack/chartschema) from the sources in $(SCHEMA_SOURCES): what every chart shares is
# written there once, and each chart's own part apart (docs/charts.md, "Values schemas").
SCHEMA_SOURCES := charts/schema
SCHEMA_CHARTS := $(UMBRELLA_CHART) $(addprefix $(UMBRELLA_CHART)/charts/,$(MONITORING_COMPONENTS))
# Files `generate` writes; `verify` fails when they differ from what is committed.
GENERATED := docs/metrics.md docs/configuration.md $(addsuffix /README.md,$(DOC_CHARTS)) \
	$(foreach c,$(MONITORING_CHARTS),$(c)/files/alerts $(c)/files/dashboards) \
	$(addsuffix /values.schema.json,$(SCHEMA_CHARTS))

##@ General

.PHONY: help
help: ## Show this help
	@awk 'BEGIN { FS = ":.*##" } \
		/^[a-zA-Z0-9_-]+:.*##/ { n++; target[n] = $$1; help[n] = $$2; if (length($$1) > w) w = length($$1); next } \
		/^##@/ { n++; section[n] = substr($$0, 5) } \
		END { printf "\nUsage:\n  make \033[36m<target>\033[0m [VARIABLE=value...]\n"; \
			for (i = 1; i <= n; i++) { \
				if (i in section) printf "\n\033[1m%s\033[0m\n", section[i]; \
				else printf "  \033[36m%-*s\033[0m %s\n", w, target[i], help[i] } \
			printf "\nVariables: PKGS (test-go, test-short; ./...), GOTESTFLAGS (-v), TEST_PARALLEL (2),\n"; \
			printf "TEST_TIMEOUT (40m), BENCHTIME (bench; 1x), SOAK_DURATION (soak; 10m),\n"; \
			printf "VERSION and IMAGES_FLAGS (images), VERSION, SNAPSHOT, REGISTRY, SIGNING_KEY and DIST (release)\n" }' $(MAKEFILE_LIST)

##@ Development

.PHONY: build
build: ## Build the component binaries and the kubectl plugin (kubectl-semaphore) into ./bin/
	@mkdir -p bin
	@for c in $(COMPONENTS); do \
		echo "$(GO) build -o bin/semaphore-$$c ./components/$$c"; \
		$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o "bin/semaphore-$$c" "./components/$$c"; \
	done
	@echo "$(GO) build -o bin/kubectl-semaphore ./cmd/kubectl-semaphore"
	@$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/kubectl-semaphore ./cmd/kubectl-semaphore

# Without Docker and without a base image (internal/tooling/images, docs/images.md): reproducible, the
# same commit gives the same digests. VERSION goes into the binaries; IMAGES_FLAGS goes to the
# command, e.g. IMAGES_FLAGS='-push registry.example.net/semaphore' or '-platforms linux/amd64'.
.PHONY: images
images: ## Build the three images (OCI, linux/amd64 + linux/arm64) into .build/images
	@$(GO) run ./hack/images -version '$(VERSION)' $(IMAGES_FLAGS)

.PHONY: fmt
fmt: ## Format all Go code (gofmt, and goimports through golangci-lint when available)
	@bash ci/go-files.sh | xargs -0 -r gofmt -w
	@gl=$$(bash ci/golangci-lint.sh | tail -n 1); \
	if [ -n "$$gl" ]; then "$$gl" fmt; fi

.PHONY: generate
generate: ## Regenerate generated files: reference docs, chart READMEs and schemas, the charts' alerts and dashboards
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
	@$(GO) run ./hack/chartschema -sources $(SCHEMA_SOURCES) -umbrella $(UMBRELLA_CHART) $(MONITORING_COMPONENTS)

.PHONY: clean
clean: ## Remove build output (the tool cache in ~/.cache/semaphore is kept)
	rm -rf bin

##@ Checks

.PHONY: lint
lint: ## gofmt, go vet, golangci-lint (.golangci.yml) and lint-charts; all run before it fails (ci/lint.sh)
	@bash ci/lint.sh

.PHONY: lint-charts
lint-charts: ## helm lint --strict and helm template of every chart scenario, charts/**/ci/*-values.yaml
	@bash ci/lint-charts.sh

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

# `test` is what CI runs (.ci/run) and what the README tells contributors to run: these steps in
# order, all of them always (ci/test.sh).
TEST_STEPS := lint verify test-go lab-check test-alerts

.PHONY: test
test: ## Lint, verify, Go tests against real API servers, the lab check, alert tests (what CI runs)
	@bash ci/test.sh $(TEST_STEPS)

# What CI does on a fresh machine, for finding what a warm machine hides: .ci/run in a fresh clone
# of HEAD with a new, empty HOME (so empty Go build, golangci-lint and ~/.cache/semaphore caches);
# it shares the Go module cache (FRESH_MODULES=1: not that either) and the Debian packages that
# ci/ installs, and says so. As long as a cold make test: about half an hour on 2 cores.
.PHONY: test-fresh
test-fresh: ## Run .ci/run as CI on a fresh machine: a fresh clone of HEAD, every cache empty
	@bash ci/fresh-run

.PHONY: test-go
test-go: ## Only the Go tests (unit and integration) of PKGS, then which skipped and why (ci/test-go.sh)
	@bash ci/test-go.sh

# The pure tests alone, in about 1.5 minutes warm on 2 cores (most of it linking the test
# binaries): every test that needs kube-apiserver and etcd, CoreDNS, root and network namespaces,
# promtool or a build of the components skips under -short (testenv.SkipIfShort) before it looks
# for or builds anything.
.PHONY: test-short
test-short: ## Only the pure Go tests of PKGS (go test -short): no API servers, no root, nothing to build
	$(GO) test -short -count=1 $(PKGS)

.PHONY: test-alerts
test-alerts: ## Check the alert rules (alerts/*.yaml) and run their promtool unit tests (ci/test-alerts.sh)
	@bash ci/test-alerts.sh

.PHONY: bench
bench: ## Run every benchmark, a package at a time (BENCHTIME), against real API servers (ci/bench.sh)
	@bash ci/bench.sh

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
soak: ## Churn the lab for SOAK_DURATION, then check mesh, footprint and alerts (not in make test)
	@bash ci/lab -duration $(SOAK_DURATION) soak

.PHONY: lab-check
lab-check: ## Bring the lab up, assert what it shows, tear it down (ci/lab-check; as root, also without nodes)
	@bash ci/lab-check

# The upstream MCS conformance suite (third_party/mcs-api-conformance, unmodified) against the
# lab's clusters: aws and gcp, then aws, gcp and merit. Not part of `make test`. A running lab
# is used; otherwise one is brought up and taken down after (CONFORMANCE_KEEP_LAB=1 keeps it).
# CONFORMANCE_LABELS=Required runs only the specs every implementation must pass.
CONFORMANCE_LABELS ?=

.PHONY: conformance
conformance: ## Run the upstream MCS conformance suite against the lab; reports in .lab/conformance (docs/mcs.md)
	@CONFORMANCE_LABELS='$(CONFORMANCE_LABELS)' bash ci/conformance.sh

##@ Release

# A release into DIST (hack/release, docs/releasing.md): the images (as `make images` builds them),
# both charts with the release's version, kubectl-semaphore's archives for linux, darwin and
# windows on amd64 and arm64, SHA256SUMS, the krew manifest checked with krew, the release notes
# from CHANGELOG.md; pushed to REGISTRY when given (images, and charts to oci://REGISTRY/charts),
# then the commit is tagged. SNAPSHOT=1 builds the same from any tree, without a tag.
DIST ?= dist
REGISTRY ?=
SNAPSHOT ?=
# The release key (PEM, ECDSA P-256) whose public half is docs/release-key.pub; a snapshot
# without one is signed by a key made for it.
SIGNING_KEY ?=

.PHONY: release
release: ## Build a release: make release VERSION=vX.Y.Z [REGISTRY=host/path] [DIST=dist], or SNAPSHOT=1
	@$(GO) run ./hack/release -dist '$(DIST)' \
		$(if $(filter command line environment,$(origin VERSION)),-version '$(VERSION)') \
		$(if $(REGISTRY),-registry '$(REGISTRY)') $(if $(SIGNING_KEY),-signing-key '$(SIGNING_KEY)') $(if $(SNAPSHOT),-snapshot)
