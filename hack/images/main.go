// Command images builds the three component images without Docker (internal/tooling/images) and writes
// them as one OCI image layout, optionally pushing them to a registry as well (run by
// `make images`):
//
//	images [-out DIR] [-platforms linux/amd64,linux/arm64] [-push REGISTRY [-insecure]] [-tag TAG] [-version VERSION]
//
// The images are named <registry>/semaphore-<component>:<tag>, as the charts expect them: the
// registry is ghcr.io/kube-semaphore, or REGISTRY with -push; the tag is the appVersion of
// charts/semaphore. It prints each image's reference and index digest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kube-semaphore/semaphore/internal/tooling/dist"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
)

func main() {
	out := flag.String("out", "", "directory of the OCI image layout (default: .build/images in the module root)")
	platforms := flag.String("platforms", strings.Join(images.DefaultPlatforms, ","), "comma-separated platforms of every image")
	push := flag.String("push", "", "also push the images to this registry (host[:port][/path]), which then names them")
	insecure := flag.Bool("insecure", false, "push over plain HTTP (a registry on localhost or a loopback address gets it anyway)")
	tag := flag.String("tag", "", "tag of every image (default: the appVersion of charts/semaphore)")
	version := flag.String("version", "", "version compiled into the binaries and labelled (default: git describe --tags --always --dirty)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: images [flags]\n\n"+
			"Builds the images of semaphore-service-mirror, semaphore-policy and semaphore-wireguard into an OCI image layout.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, config{
		out: *out, platforms: *platforms, push: *push, insecure: *insecure, tag: *tag, version: *version,
	}, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	out, platforms, push, tag, version string
	insecure                           bool
}

func run(ctx context.Context, c config, stdout, stderr io.Writer) error {
	start := time.Now()
	p, err := c.plan(ctx)
	if err != nil {
		return err
	}
	p.opts.Progress = stderr
	built := map[string]v1.ImageIndex{}
	var refs []string
	for _, spec := range images.Components() {
		spec.Platforms = p.platforms
		idx, err := images.Build(ctx, spec, p.opts)
		if err != nil {
			return err
		}
		ref := spec.Ref(p.registry, p.tag)
		built[ref] = idx
		refs = append(refs, ref)
	}
	if err := images.WriteLayout(p.out, built); err != nil {
		return err
	}
	for _, ref := range refs {
		d, err := built[ref].Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s  %s\n", ref, d)
	}
	fmt.Fprintf(stdout, "OCI image layout: %s (%d images, %s, version %s, created %s)\n",
		p.out, len(refs), strings.Join(p.platforms, " "), p.opts.Version, p.opts.Epoch.Format(time.RFC3339))
	if c.push != "" {
		for _, ref := range refs {
			if err := images.Push(ctx, ref, built[ref], c.insecure); err != nil {
				return err
			}
			d, _ := built[ref].Digest()
			fmt.Fprintf(stdout, "pushed %s@%s\n", ref, d)
		}
	}
	fmt.Fprintf(stderr, "images: done in %s\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// plan is what the flags ask for, with the defaults filled in.
type plan struct {
	opts          images.Options
	tag, registry string
	out           string
	platforms     []string
}

// plan fills in the defaults of the flags: from the module's root, the build options, the
// chart's appVersion and the layout's directory.
func (c config) plan(ctx context.Context) (plan, error) {
	p := plan{registry: images.DefaultRegistry, tag: c.tag, out: c.out}
	root, err := dist.ModuleRoot(ctx)
	if err != nil {
		return p, err
	}
	if p.opts, err = images.DefaultOptions(ctx, root); err != nil {
		return p, err
	}
	if c.version != "" {
		p.opts.Version = c.version
	}
	if p.tag == "" {
		if p.tag, err = images.AppVersion(filepath.Join(root, "charts", "semaphore")); err != nil {
			return p, err
		}
	}
	if c.push != "" {
		p.registry = strings.TrimSuffix(c.push, "/")
	}
	if p.out == "" {
		p.out = filepath.Join(root, ".build", "images")
	}
	for pl := range strings.SplitSeq(c.platforms, ",") {
		if pl = strings.TrimSpace(pl); pl != "" {
			p.platforms = append(p.platforms, pl)
		}
	}
	if len(p.platforms) == 0 {
		return p, errors.New("-platforms: no platform")
	}
	return p, nil
}
