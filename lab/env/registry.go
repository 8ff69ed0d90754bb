package env

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// The lab's OCI registry: go-containerregistry's, in the lab's own process, on loopback. It
// holds our images (built by internal/tooling/images, as `make images` builds them) and both charts
// (pushed by the helm CLI); the nodes pull from it at the same address, which the lab forwards
// into each of them. It keeps everything in memory: a new lab pushes everything again.

// startRegistry serves the registry on a free port of 127.0.0.1, pushes the images and the
// charts to it, and signs and verifies the lab's release.
func (l *Lab) startRegistry(ctx context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	logf, err := os.Create(l.Path("logs", "registry.log"))
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{
		Handler:           registry.New(registry.Logger(log.New(logf, "", log.LstdFlags))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			l.Logf("registry: %v", err)
		}
	}()
	l.onTeardown(func() {
		_ = srv.Close()
		logf.Close()
	})
	l.registry = ln.Addr().String()
	l.labRelease.Registry = l.registry
	l.update(func(rec *layout.Record) { rec.Registry = l.registry })
	if err := l.pushImages(ctx); err != nil {
		return err
	}
	charts, err := l.labRelease.PushCharts(ctx)
	if err != nil {
		return err
	}
	l.Logf("registry on %s holds the images (%s/...) and the charts (oci://%s/%s/...)", l.registry, layout.ImagesRepo, l.registry, layout.ChartsRepo)
	if err := l.labRelease.Sign(ctx, charts); err != nil {
		return fmt.Errorf("signing the lab's release: %w", err)
	}
	return l.labRelease.Verify(ctx)
}

// The lab's own images, besides the three components'.
const (
	// pauseImage is every pod's sandbox (containerd's sandbox_image): lab/cmd/pause.
	pauseImage = "semaphore-lab-pause"
	// sampleImage is the sample workloads' program: lab/cmd/sample.
	sampleImage = "semaphore-lab-sample"
	// corednsImage is CoreDNS as ci/coredns.sh builds it.
	corednsImage = "coredns"
)

// pushImages builds our images for this machine's platform, as `make images` builds them for
// every platform, and pushes them to the registry: the components' tagged as the charts expect
// them (the charts' appVersion), and the lab's own. The components' go into the release's OCI
// image layout too, as `make release` writes them: what their SBOMs describe and their
// signatures sign.
func (l *Lab) pushImages(ctx context.Context) error {
	root := testbed.RepoRoot()
	opts, err := images.DefaultOptions(ctx, root)
	if err != nil {
		return err
	}
	opts.Version = l.labRelease.Version
	components := images.Components()
	specs := append(slices.Clone(components),
		images.Spec{Name: pauseImage, Package: "./lab/cmd/pause"},
		images.Spec{Name: sampleImage, Package: "./lab/cmd/sample"},
		images.Spec{Name: corednsImage, Binaries: map[string]string{labPlatform: l.bin.coredns}},
	)
	released := map[string]v1.ImageIndex{}
	for i, spec := range specs {
		if spec.Binaries == nil {
			spec.Platforms = []string{labPlatform}
		}
		idx, err := images.Build(ctx, spec, opts)
		if err != nil {
			return fmt.Errorf("image %s: %w", spec.Name, err)
		}
		if err := images.Push(ctx, l.imageRef(spec.Name), idx, true); err != nil {
			return fmt.Errorf("pushing %s: %w", l.imageRef(spec.Name), err)
		}
		if i < len(components) {
			released[l.imageRef(spec.Name)] = idx
		}
	}
	return images.WriteLayout(l.labRelease.ImagesLayout(), released)
}

// imageRef is the reference of image name in the lab's registry.
func (l *Lab) imageRef(name string) string { return l.labRelease.ImageRef(name) }
