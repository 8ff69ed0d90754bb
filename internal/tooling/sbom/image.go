package sbom

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/kube-semaphore/semaphore/internal/tooling/images"
)

// Image names a container image for ForImage.
type Image struct {
	// Name is the image's name (semaphore-policy).
	Name string
	// Version is the release's version (vX.Y.Z), which is also its program's.
	Version string
	// Repository, when set, is where the image is published
	// (ghcr.io/kube-semaphore/semaphore-policy): the repository_url of the image's purl.
	Repository string
	// CACertificatesVersion is the version of Debian's ca-certificates package that the
	// image's CA bundle was taken from (DebianPackageVersion on the build machine), "" when
	// unknown: the bundle is then listed as a file with its SHA-256.
	CACertificatesVersion string
}

// ownFiles are the files internal/tooling/images writes into every image besides the program: ours,
// part of the release itself, not another's software.
var ownFiles = map[string]bool{"/etc/passwd": true, "/etc/group": true}

// ForImage is the SBOM of one platform's image img, as internal/tooling/images builds them: the image
// is the subject, a container component (purl pkg:oci/<name>@<digest>?arch=...), which depends
// on its program (the entrypoint, a Go binary: ForBinary's components) and on the image's other
// files that are not ours: the CA bundle as Debian's ca-certificates package
// (pkg:deb/debian/ca-certificates@<version>?arch=all) holding the file, and any other file as
// a file component with its SHA-256. created is the BOM's timestamp.
func ForImage(img v1.Image, desc Image, created time.Time) (*cdx.BOM, error) {
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	if len(cfg.Config.Entrypoint) == 0 {
		return nil, errors.New("the image has no entrypoint: no program to describe")
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	entrypoint := path.Clean(cfg.Config.Entrypoint[0])
	var prog *program
	var others []cdx.Component
	err = eachFile(img, func(name string, data []byte) error {
		switch {
		case name == entrypoint:
			p, err := readProgram(data, path.Base(name), desc.Version)
			prog = &p
			return err
		case ownFiles[name]:
			return nil
		case name == images.DefaultCACertificates:
			others = append(others, caBundle(name, data, desc.CACertificatesVersion))
		default:
			others = append(others, fileComponent(name, data))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if prog == nil {
		return nil, fmt.Errorf("the image has no file %s, its entrypoint", entrypoint)
	}
	subject := containerComponent(desc, digest, cfg.Architecture)
	refs := []string{prog.app.BOMRef}
	for _, c := range others {
		refs = append(refs, c.BOMRef)
	}
	bom := newBOM(subject, append(prog.components(), others...), created)
	bom.Dependencies = &[]cdx.Dependency{{Ref: subject.BOMRef, Dependencies: &refs}, prog.dependency()}
	return seal(bom)
}

// eachFile calls f with every regular file of img's file system (its layers flattened), by
// absolute path, in the order of the layers' tar.
func eachFile(img v1.Image, f func(name string, data []byte) error) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the image's files: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return fmt.Errorf("reading the image's %s: %w", hdr.Name, err)
		}
		if err := f(path.Join("/", hdr.Name), data); err != nil {
			return fmt.Errorf("the image's %s: %w", path.Join("/", hdr.Name), err)
		}
	}
}

// containerComponent is the image itself, identified by its manifest digest.
func containerComponent(desc Image, digest v1.Hash, arch string) cdx.Component {
	qualifiers := []string{"arch", arch}
	if desc.Repository != "" {
		qualifiers = append(qualifiers, "repository_url", desc.Repository)
	}
	c := cdx.Component{
		Type:       cdx.ComponentTypeContainer,
		Name:       desc.Name,
		Version:    desc.Version,
		PackageURL: purl("oci", desc.Name, digest.String(), qualifiers...),
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: digest.Hex}},
	}
	c.BOMRef = c.PackageURL
	return c
}

// caBundle is the CA bundle at name: Debian's ca-certificates package at version holding the
// file, or the file alone when the version is unknown.
func caBundle(name string, data []byte, version string) cdx.Component {
	file := fileComponent(name, data)
	if version == "" {
		return file
	}
	c := cdx.Component{
		Type:        cdx.ComponentTypeLibrary,
		Name:        "ca-certificates",
		Version:     version,
		Description: "Debian's bundle of the certificate authorities Mozilla trusts",
		PackageURL:  purl("deb", "debian/ca-certificates", version, "arch", "all"),
		Components:  &[]cdx.Component{file},
	}
	c.BOMRef = c.PackageURL
	return c
}

// fileComponent is a file of the image, by path and SHA-256.
func fileComponent(name string, data []byte) cdx.Component {
	return cdx.Component{
		BOMRef: "file:" + name,
		Type:   cdx.ComponentTypeFile,
		Name:   name,
		Hashes: &[]cdx.Hash{sha256Hash(data)},
	}
}
