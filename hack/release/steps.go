package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/kube-semaphore/semaphore/internal/tooling/citool"
	"github.com/kube-semaphore/semaphore/internal/tooling/dist"
	"github.com/kube-semaphore/semaphore/internal/tooling/signing"
)

// step is one part of a release, run in order.
type step struct {
	name string
	run  func(ctx context.Context, stdout, stderr io.Writer) error
}

func (p *plan) steps() []step {
	steps := []step{
		{"images", p.images},
		{"SBOMs of the images", p.imageSBOMs},
		{"charts", p.packageCharts},
		{"kubectl-semaphore archives and their SBOMs", p.pluginArchives},
		{dist.ChecksumsFile, p.checksums},
		{"krew manifest", p.krewManifest},
		{"release notes", p.releaseNotes},
		{"signatures", p.sign},
	}
	if !p.snapshot {
		steps = append(steps, step{"tag", p.tag})
	}
	return steps
}

// images builds the images with `make images`'s program, into dist/images, tagged with the
// charts' appVersion so that the released charts name them; pushed with -registry.
func (p *plan) images(ctx context.Context, stdout, stderr io.Writer) error {
	args := []string{"run", "./hack/images", "-out", filepath.Join(p.dist, "images"), "-version", p.version, "-tag", dist.ChartVersion(p.version)}
	if p.registry != "" {
		args = append(args, "-push", p.registry)
	}
	if p.insecure {
		args = append(args, "-insecure")
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = p.root, stdout, stderr
	return cmd.Run()
}

func (p *plan) packageCharts(_ context.Context, stdout, _ io.Writer) error {
	var err error
	if p.charts, err = dist.PackageCharts(p.root, p.dist, p.version); err != nil {
		return err
	}
	if p.registry == "" {
		return nil
	}
	refs, err := dist.PushCharts(p.dist, p.registry, p.charts, dist.PlainHTTP(p.registry, p.insecure))
	for _, ref := range refs {
		fmt.Fprintf(stdout, "pushed oci://%s\n", ref)
	}
	return err
}

func (p *plan) pluginArchives(ctx context.Context, _, _ io.Writer) error {
	var err error
	p.archives, err = dist.BuildPluginArchives(ctx, p.root, p.dist, p.version, p.epoch, dist.PluginPlatforms)
	return err
}

func (p *plan) imageSBOMs(ctx context.Context, _, _ io.Writer) error {
	var err error
	p.sboms, err = dist.ImageSBOMs(ctx, filepath.Join(p.dist, "images"), p.dist, p.version, p.registry, p.epoch)
	return err
}

// checksums lists every file of the release but the krew manifest, which holds them.
func (p *plan) checksums(context.Context, io.Writer, io.Writer) error {
	files := slices.Concat(p.archives, p.charts, p.sboms)
	for _, a := range p.archives {
		files = append(files, dist.Artifact{Name: a.SBOM})
	}
	var err error
	p.sums, err = dist.WriteChecksums(p.dist, files)
	return err
}

// sign writes the release key's public half and signs every file of the release; with
// -registry, the pushed images too.
func (p *plan) sign(ctx context.Context, stdout, _ io.Writer) error {
	public, err := signing.PublicKeyPEM(&p.key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.dist, dist.PublicKeyFile), public, 0o644); err != nil {
		return err
	}
	files := []string{dist.ChecksumsFile, dist.KrewManifestName, "RELEASE_NOTES.md"}
	for name := range p.sums {
		files = append(files, name)
	}
	if err := dist.SignFiles(p.dist, p.key, files); err != nil {
		return err
	}
	if p.registry == "" {
		return nil
	}
	signed, err := dist.SignPushedImages(ctx, p.key, filepath.Join(p.dist, "images"), p.registry, dist.PlainHTTP(p.registry, p.insecure))
	for _, ref := range signed {
		fmt.Fprintf(stdout, "signed %s\n", ref)
	}
	return err
}

// krewManifest writes the plugin's krew manifest and checks it with krew's own tools.
func (p *plan) krewManifest(ctx context.Context, _, stderr io.Writer) error {
	manifest, err := dist.KrewManifest(p.version, p.downloadURL, p.archives, p.sums)
	if err != nil {
		return err
	}
	path := filepath.Join(p.dist, dist.KrewManifestName)
	if err := os.WriteFile(path, manifest, 0o644); err != nil {
		return err
	}
	krewDir, err := citool.Path(stderr, p.root, "krew.sh")
	if err != nil {
		return err
	}
	return dist.ValidateKrewManifest(ctx, krewDir, path, p.dist, p.archives)
}

func (p *plan) releaseNotes(context.Context, io.Writer, io.Writer) error {
	notes := fmt.Sprintf("# Semaphore %s\n\n%s", p.version, p.notes)
	return os.WriteFile(filepath.Join(p.dist, "RELEASE_NOTES.md"), []byte(notes), 0o644)
}

// tag tags the commit the release was built from; pushing the tag is the releaser's.
func (p *plan) tag(ctx context.Context, stdout, _ io.Writer) error {
	if _, err := git(ctx, p.root, "tag", "-a", p.version, "-m", "Semaphore "+p.version); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tagged %s: push it with git push origin %s\n", p.version, p.version)
	return nil
}
