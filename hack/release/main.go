// Command release builds a release of Semaphore into one directory (run by `make release`):
//
//	release -version vX.Y.Z [-dist DIR] [-registry REGISTRY [-insecure]] [-download-url URL]
//	release -snapshot [-version vX.Y.Z] ...
//
// From a clean tree it builds the three images (hack/images, the same program as `make images`)
// into DIR/images, both charts packaged with the release's version, kubectl-semaphore's archives
// for every platform it is released for, SHA256SUMS over the archives and charts, the plugin's
// krew manifest (validated, and every archive installed, with krew's own tools), an SBOM of
// every program and image, the release notes from CHANGELOG.md, and a signature of every file by
// the release key; with -registry it pushes the images and the charts (oci://REGISTRY/charts)
// and signs the images there; it then tags the commit. -snapshot builds the same without a tag:
// from any tree, with the notes of [Unreleased], and a snapshot version unless one is given.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	var c config
	flag.StringVar(&c.version, "version", "", "the release's version, vX.Y.Z (with -snapshot: default v0.0.0-snapshot.g<commit>)")
	flag.StringVar(&c.dist, "dist", "dist", "directory the artifacts go to; it must not hold anything yet")
	flag.StringVar(&c.registry, "registry", "", "push the images and the charts (oci://REGISTRY/charts) to this registry (host[:port][/path])")
	flag.BoolVar(&c.insecure, "insecure", false, "push over plain HTTP (a registry on localhost or a loopback address gets it anyway)")
	flag.StringVar(&c.downloadURL, "download-url", "", "where the plugin's archives are downloaded from, in the krew manifest (default: the project's GitHub release of the version)")
	flag.BoolVar(&c.snapshot, "snapshot", false, "build without tagging, from any tree")
	flag.StringVar(&c.signingKey, "signing-key", "", "the release key (PEM, ECDSA P-256) that signs the files and the pushed images; its public half must be docs/release-key.pub (with -snapshot: default a key made for the one build)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: release -version vX.Y.Z [flags] | release -snapshot [flags]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	// Helm's chart loader logs every symbolic link it follows (each chart's charts/common).
	log.SetOutput(io.Discard)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, c, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

// config is what the flags ask for.
type config struct {
	version, dist, registry, downloadURL, signingKey string
	insecure, snapshot                               bool
}

func run(ctx context.Context, c config, stdout, stderr io.Writer) error {
	p, err := c.plan(ctx)
	if err != nil {
		return err
	}
	for _, step := range p.steps() {
		fmt.Fprintf(stderr, "release: %s\n", step.name)
		if err := step.run(ctx, stdout, stderr); err != nil {
			return fmt.Errorf("%s: %w", step.name, err)
		}
	}
	fmt.Fprintf(stdout, "release %s: %s\n", p.version, p.dist)
	return nil
}
