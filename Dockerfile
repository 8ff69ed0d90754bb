# syntax=docker/dockerfile:1
#
# One image per component, one target each; the charts expect them as
# <registry>/semaphore-<component>:<tag>:
#
#   docker build --target service-mirror --build-arg VERSION=$(git describe --tags --always --dirty) \
#     -t ghcr.io/kube-semaphore/semaphore-service-mirror:<tag> .
#   (likewise --target policy and --target wireguard)
#
# The binaries are static (CGO_ENABLED=0) and are built exactly like `make build` builds them
# (same -trimpath and -ldflags, VERSION lands in build_info), so what runs in the image is what
# the tests ran. The build runs on the build machine's platform and cross-compiles for
# TARGETOS/TARGETARCH, which keeps multi-platform builds (--platform linux/amd64,linux/arm64)
# fast: the code is pure Go.

ARG GO_VERSION=1.26
# Debian 13 distroless: ca-certificates, tzdata, /etc/passwd with root and nonroot (65532), no
# shell, no package manager. Pin a digest (image@sha256:...) in release builds.
ARG BASE_IMAGE=gcr.io/distroless/static-debian13

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# Modules first, so that changing the code does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY components/ components/
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    set -eu; \
    for c in service-mirror policy wireguard; do \
        CGO_ENABLED=0 GOOS="$TARGETOS" GOARCH="$TARGETARCH" go build -trimpath \
            -ldflags "-s -w -X github.com/kube-semaphore/semaphore/internal/metrics.Version=${VERSION}" \
            -o "/out/semaphore-$c" "./components/$c"; \
    done

FROM ${BASE_IMAGE}:nonroot AS service-mirror
ARG VERSION=dev
LABEL org.opencontainers.image.title="semaphore-service-mirror" \
      org.opencontainers.image.description="Mirrors opted-in Services of remote clusters as local Services and EndpointSlices" \
      org.opencontainers.image.source="https://github.com/kube-semaphore/semaphore" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/semaphore-service-mirror /semaphore-service-mirror
# Numeric, so that the kubelet can check runAsNonRoot without reading /etc/passwd.
USER 65532:65532
ENTRYPOINT ["/semaphore-service-mirror"]

FROM ${BASE_IMAGE}:nonroot AS policy
ARG VERSION=dev
LABEL org.opencontainers.image.title="semaphore-policy" \
      org.opencontainers.image.description="Keeps Calico GlobalNetworkSets of labelled pods in remote clusters" \
      org.opencontainers.image.source="https://github.com/kube-semaphore/semaphore" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/semaphore-policy /semaphore-policy
USER 65532:65532
ENTRYPOINT ["/semaphore-policy"]

# semaphore-wireguard runs as root (uid 0), the one exception. It creates WireGuard links and
# routes and opens /dev/net/tun, which takes CAP_NET_ADMIN in the host's network namespace, and
# Kubernetes can only give a capability to a container process that runs as root: a non-root
# process would need ambient capabilities (no Kubernetes API for them) or file capabilities on
# the binary (which no_new_privs, i.e. allowPrivilegeEscalation: false, ignores). Root here is
# still confined: the chart drops every capability but NET_ADMIN (so no CAP_DAC_OVERRIDE, no
# CAP_SYS_ADMIN), and denies privileged mode and privilege escalation. Root also owns the host
# key directory, which keeps the private keys (0600) unreadable to every other non-root process.
FROM ${BASE_IMAGE} AS wireguard
ARG VERSION=dev
LABEL org.opencontainers.image.title="semaphore-wireguard" \
      org.opencontainers.image.description="Per-remote-cluster WireGuard devices, peers and routes on every node" \
      org.opencontainers.image.source="https://github.com/kube-semaphore/semaphore" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/semaphore-wireguard /semaphore-wireguard
USER 0:0
ENTRYPOINT ["/semaphore-wireguard"]
