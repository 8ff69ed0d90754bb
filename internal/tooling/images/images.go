// Package images builds Semaphore's container images without Docker and without a base image:
// each image is one layer holding a static binary and the handful of files a static Go program
// needs (/etc/passwd and /etc/group with root and nonroot, the CA certificates, /tmp), built
// reproducibly (fixed timestamps and owners, sorted entries), so that one commit always gives
// the same digests. Every image is an OCI image index with one manifest per platform; it can be
// written to an OCI image layout directory (WriteLayout) or pushed to a registry (Push).
//
// A Go main package is cross-compiled for each platform (CGO_ENABLED=0, -trimpath, stripped,
// no build ID), through the ordinary Go build cache; prebuilt static binaries can be packaged
// too. `go run ./hack/images` (make images) builds the three components.
package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Spec describes one image: a Go main package compiled for each platform (Package), or
// prebuilt static binaries (Binaries). The binary is /<Name> in the image.
type Spec struct {
	// Name is the image's repository name under a registry and the binary's name in the image
	// (/<Name>): lower-case letters, digits, '.', '_' and '-'.
	Name string
	// Description becomes the org.opencontainers.image.description label, when set.
	Description string
	// Package is the Go main package to build, as `go build` takes it, relative to
	// Options.Dir (for example "./components/policy").
	Package string
	// Binaries are prebuilt static binaries by platform ("linux/amd64" -> path), used instead of
	// Package. Without Platforms, the image has exactly these platforms.
	Binaries map[string]string
	// User is the numeric "uid:gid" the image runs as (default nonRootUser).
	User string
	// Entrypoint defaults to ["/<Name>"].
	Entrypoint []string
	// Platforms are "os/arch" (or "linux/arm/v7"); default DefaultPlatforms, or with Binaries
	// the platforms it has.
	Platforms []string
	// Files are extra files, added to the image's one layer next to the base files.
	Files []File
}

// File is an extra regular file of an image.
type File struct {
	// Path is absolute (/etc/coredns/Corefile); missing parent directories are added (0755).
	Path string
	// Mode holds the permission bits (default 0644).
	Mode fs.FileMode
	Data []byte
}

// Options are what a build takes from the build machine and the repository. Build fills in
// a zero field as DefaultOptions would; resolve them once with DefaultOptions to build
// several images from the same values.
type Options struct {
	// Dir is the module root, where `go build` runs and Spec.Package is resolved (default ".").
	Dir string
	// Version is compiled into the binaries (internal/version.Version) and labelled
	// org.opencontainers.image.version (default: `git describe --tags --always --dirty`, or
	// "dev" outside git, as `make build` does).
	Version string
	// Revision is labelled org.opencontainers.image.revision (default: the commit of HEAD;
	// none outside git).
	Revision string
	// Epoch is every file's modification time and the images' creation time (default:
	// SourceDateEpoch).
	Epoch time.Time
	// CACertificates is the CA bundle copied into the images (default
	// /etc/ssl/certs/ca-certificates.crt, from Debian's ca-certificates package).
	CACertificates string
	// Progress, when set, receives one line per binary built or image assembled.
	Progress io.Writer
}

// Defaults of Spec and Options, and the image's fixed paths.
const (
	// nonRootUser is the default user: "nonroot" in the image's /etc/passwd.
	nonRootUser = "65532:65532"
	// rootUser is root, for the one component that needs it (semaphore-wireguard).
	rootUser = "0:0"
	// DefaultCACertificates is where Debian's ca-certificates package puts the CA bundle; it is
	// also the bundle's path in the images (SSL_CERT_FILE).
	DefaultCACertificates = "/etc/ssl/certs/ca-certificates.crt"
	// source is the org.opencontainers.image.source label of every image.
	source = "https://github.com/kube-semaphore/semaphore"
	// versionVar receives Options.Version through -ldflags -X.
	versionVar = "github.com/kube-semaphore/semaphore/internal/version.Version"
	pathEnv    = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// DefaultPlatforms are the platforms of an image built from a Go package.
var DefaultPlatforms = []string{"linux/amd64", "linux/arm64"}

// Labels (and index annotations) of every image.
const (
	labelTitle       = "org.opencontainers.image.title"
	labelDescription = "org.opencontainers.image.description"
	labelSource      = "org.opencontainers.image.source"
	labelVersion     = "org.opencontainers.image.version"
	labelRevision    = "org.opencontainers.image.revision"
)

// The image's /etc/passwd and /etc/group: root and nonroot, whose home is / (the images have no
// home directories and a read-only root file system in the charts).
const (
	passwd = "root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

var (
	nameRE = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*$`)
	userRE = regexp.MustCompile(`^[0-9]+:[0-9]+$`)
)

// DefaultOptions resolves every default of Options for the module at dir: the version and
// revision from git, the epoch from SourceDateEpoch, Debian's CA bundle.
func DefaultOptions(ctx context.Context, dir string) (Options, error) {
	return Options{Dir: dir}.complete(ctx)
}

func (o Options) complete(ctx context.Context) (Options, error) {
	if o.Dir == "" {
		o.Dir = "."
	}
	if o.Version == "" {
		o.Version = "dev"
		if v, err := gitOutput(ctx, o.Dir, "describe", "--tags", "--always", "--dirty"); err == nil && v != "" {
			o.Version = v
		}
	}
	if o.Revision == "" {
		if r, err := gitOutput(ctx, o.Dir, "rev-parse", "HEAD"); err == nil {
			o.Revision = r
		}
	}
	if o.Epoch.IsZero() {
		t, err := SourceDateEpoch(ctx, o.Dir)
		if err != nil {
			return o, err
		}
		o.Epoch = t
	}
	o.Epoch = o.Epoch.UTC()
	if o.CACertificates == "" {
		o.CACertificates = DefaultCACertificates
	}
	return o, nil
}

// SourceDateEpoch is the time every image built from dir carries: $SOURCE_DATE_EPOCH (seconds
// since 1970) when set, else the commit time of HEAD (`git log -1 --format=%ct`), else (outside
// git) 1970-01-01T00:00:00Z. It is in UTC, to the second.
func SourceDateEpoch(ctx context.Context, dir string) (time.Time, error) {
	if s, ok := os.LookupEnv("SOURCE_DATE_EPOCH"); ok && s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil || sec < 0 {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: not a number of seconds since 1970", s)
		}
		return time.Unix(sec, 0).UTC(), nil
	}
	out, err := gitOutput(ctx, dir, "log", "-1", "--format=%ct")
	if err != nil || out == "" {
		return time.Unix(0, 0).UTC(), nil //nolint:nilerr // outside git (or without git) the epoch is 0
	}
	sec, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("git log -1 --format=%%ct printed %q", out)
	}
	return time.Unix(sec, 0).UTC(), nil
}

func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Stderr = io.Discard
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// Build builds spec for each of its platforms and returns its multi-platform image index (OCI
// media types), in platform order. Everything it holds is in memory; nothing is written.
func Build(ctx context.Context, spec Spec, opts Options) (v1.ImageIndex, error) {
	opts, err := opts.complete(ctx)
	if err != nil {
		return nil, err
	}
	if err := spec.validate(); err != nil {
		return nil, err
	}
	certs, err := os.ReadFile(opts.CACertificates)
	if err != nil {
		return nil, fmt.Errorf("image %s: reading the CA certificates: %w (on Debian or Ubuntu, install the ca-certificates package)", spec.Name, err)
	}
	platforms, err := spec.platforms()
	if err != nil {
		return nil, err
	}
	labels := spec.labels(opts)
	var adds []mutate.IndexAddendum
	for _, p := range platforms {
		binary, err := spec.binary(ctx, p, opts)
		if err != nil {
			return nil, err
		}
		if err := checkStatic(binary, p); err != nil {
			return nil, fmt.Errorf("image %s, %s: %w", spec.Name, platformString(p), err)
		}
		img, err := spec.image(p, binary, certs, labels, opts)
		if err != nil {
			return nil, fmt.Errorf("image %s, %s: %w", spec.Name, platformString(p), err)
		}
		progress(opts, "images: assembled %s for %s", spec.Name, platformString(p))
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	idx = mutate.Annotations(idx, labels).(v1.ImageIndex)
	if _, err := idx.Digest(); err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	return idx, nil
}

func progress(opts Options, format string, args ...any) {
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, format+"\n", args...)
	}
}

func (s Spec) validate() error {
	if !nameRE.MatchString(s.Name) {
		return fmt.Errorf("image name %q: want lower-case letters, digits and single '.', '_' or '-' between them", s.Name)
	}
	if (s.Package == "") == (len(s.Binaries) == 0) {
		return fmt.Errorf("image %s: set exactly one of Package and Binaries", s.Name)
	}
	if s.User != "" && !userRE.MatchString(s.User) {
		return fmt.Errorf("image %s: user %q is not numeric uid:gid", s.Name, s.User)
	}
	return nil
}

// platforms parses the spec's platforms, in the order given (or sorted, from Binaries).
func (s Spec) platforms() ([]v1.Platform, error) {
	names := s.Platforms
	if len(names) == 0 {
		names = DefaultPlatforms
		if len(s.Binaries) > 0 {
			names = slices.Sorted(maps.Keys(s.Binaries))
		}
	}
	var out []v1.Platform
	seen := map[string]bool{}
	for _, n := range names {
		p, err := v1.ParsePlatform(n)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", s.Name, err)
		}
		if p.OS != "linux" || p.OSVersion != "" {
			return nil, fmt.Errorf("image %s: platform %q: only linux/<arch>[/<variant>] images are built", s.Name, n)
		}
		if _, ok := elfMachines[p.Architecture]; !ok {
			return nil, fmt.Errorf("image %s: platform %q: unknown architecture (known: %s)", s.Name, n, strings.Join(slices.Sorted(maps.Keys(elfMachines)), ", "))
		}
		if p.Variant != "" && (p.Architecture != "arm" || !slices.Contains([]string{"v5", "v6", "v7"}, p.Variant)) {
			return nil, fmt.Errorf("image %s: platform %q: the only variants built are arm's v5, v6 and v7", s.Name, n)
		}
		if seen[platformString(*p)] {
			return nil, fmt.Errorf("image %s: platform %q twice", s.Name, n)
		}
		seen[platformString(*p)] = true
		if len(s.Binaries) > 0 {
			if _, ok := s.Binaries[platformString(*p)]; !ok {
				return nil, fmt.Errorf("image %s: no binary for platform %s", s.Name, n)
			}
		}
		out = append(out, *p)
	}
	return out, nil
}

func platformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// binary returns the spec's binary for p: the prebuilt one, or one built with go build.
func (s Spec) binary(ctx context.Context, p v1.Platform, opts Options) ([]byte, error) {
	if s.Package == "" {
		b, err := os.ReadFile(s.Binaries[platformString(p)])
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", s.Name, err)
		}
		return b, nil
	}
	tmp, err := os.MkdirTemp("", "semaphore-images-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, s.Name)
	start := time.Now()
	if err := GoBuild(ctx, opts.Dir, s.Package, out, platformString(p), opts.Version); err != nil {
		return nil, fmt.Errorf("image %s: %w", s.Name, err)
	}
	progress(opts, "images: built %s for %s (%s)", s.Package, platformString(p), time.Since(start).Round(100*time.Millisecond))
	return os.ReadFile(out)
}

// GoBuild cross-compiles the main package pkg (relative to dir) for platform ("linux/arm64")
// into out, statically and reproducibly: CGO_ENABLED=0, -trimpath, no symbol table, no build
// ID, no VCS stamp, the default instruction set of the architecture, and version compiled into
// internal/version.Version. It goes through the Go build cache.
func GoBuild(ctx context.Context, dir, pkg, out, platform, version string) error {
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return err
	}
	ldflags := fmt.Sprintf("-s -w -buildid= -X %s=%s", versionVar, version)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = dir
	goarm := strings.TrimPrefix(p.Variant, "v")
	if p.Architecture == "arm" && goarm == "" {
		goarm = "7"
	}
	// Later entries win: whatever the environment says about these, they are fixed here.
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOFLAGS=-buildvcs=false",
		"GOAMD64=v1", "GOARM64=v8.0", "GOARM="+goarm, "GO386=sse2", "GOEXPERIMENT=")
	var output bytes.Buffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", pkg, platform, err, strings.TrimSpace(output.String()))
	}
	return nil
}

// elfMachines are the architectures images are built for, and their ELF machine.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"386":     elf.EM_386,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// checkStatic fails unless b is a static ELF executable for p's architecture: the image has no
// dynamic loader and no libraries.
func checkStatic(b []byte, p v1.Platform) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("the binary is not an ELF executable: %w", err)
	}
	defer f.Close()
	if want := elfMachines[p.Architecture]; f.Machine != want {
		return fmt.Errorf("the binary is for %s, not %s", f.Machine, want)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return errors.New("the binary is dynamically linked; the image has no libraries (build it with CGO_ENABLED=0)")
		}
	}
	return nil
}

func (s Spec) labels(opts Options) map[string]string {
	l := map[string]string{
		labelTitle:   s.Name,
		labelSource:  source,
		labelVersion: opts.Version,
	}
	if s.Description != "" {
		l[labelDescription] = s.Description
	}
	if opts.Revision != "" {
		l[labelRevision] = opts.Revision
	}
	return l
}

// image assembles the image of one platform: one layer, and its configuration.
func (s Spec) image(p v1.Platform, binary, certs []byte, labels map[string]string, opts Options) (v1.Image, error) {
	layer, err := s.layer(binary, certs, opts.Epoch)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: opts.Epoch},
			CreatedBy: "internal/tooling/images",
			Comment:   "base files and /" + s.Name,
		},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture = p.Architecture
	cf.OS = p.OS
	cf.Variant = p.Variant
	cf.Created = v1.Time{Time: opts.Epoch}
	user := s.User
	if user == "" {
		user = nonRootUser
	}
	entrypoint := s.Entrypoint
	if len(entrypoint) == 0 {
		entrypoint = []string{"/" + s.Name}
	}
	cf.Config = v1.Config{
		User:       user,
		Entrypoint: slices.Clone(entrypoint),
		Env:        []string{pathEnv, "SSL_CERT_FILE=" + DefaultCACertificates},
		WorkingDir: "/",
		Labels:     maps.Clone(labels),
	}
	return mutate.ConfigFile(img, cf)
}

// entry is one tar entry of the layer.
type entry struct {
	dir  bool
	mode int64
	data []byte
}

// layer is the image's one layer: the base files, spec.Files and the binary, as a gzipped tar
// with sorted entries, all owned by 0:0 without names and modified at epoch.
func (s Spec) layer(binary, certs []byte, epoch time.Time) (v1.Layer, error) {
	entries, err := s.entries(binary, certs)
	if err != nil {
		return nil, err
	}
	tarData, err := writeTar(entries, epoch)
	if err != nil {
		return nil, err
	}
	return compressedLayer(tarData)
}

// entries are the layer's files and directories, keyed by the path without its leading (and,
// for directories, trailing) slash: sorted, every directory comes before what it holds.
func (s Spec) entries(binary, certs []byte) (map[string]entry, error) {
	entries := map[string]entry{"tmp": {dir: true, mode: 0o1777}}
	files := append([]File{
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(group)},
		{Path: DefaultCACertificates, Mode: 0o644, Data: certs},
		{Path: "/" + s.Name, Mode: 0o755, Data: binary},
	}, s.Files...)
	for _, f := range files {
		p := path.Clean(f.Path)
		if !path.IsAbs(f.Path) || p == "/" {
			return nil, fmt.Errorf("file %q: want an absolute path", f.Path)
		}
		name := strings.TrimPrefix(p, "/")
		if _, dup := entries[name]; dup {
			return nil, fmt.Errorf("%s is in the image twice", p)
		}
		mode := int64(f.Mode.Perm())
		if mode == 0 {
			mode = 0o644
		}
		entries[name] = entry{mode: mode, data: f.Data}
	}
	return entries, addParents(entries)
}

// addParents adds the missing parent directories of entries (0755), and fails where a file
// would have to be a directory too.
func addParents(entries map[string]entry) error {
	for name := range maps.Clone(entries) {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if e, ok := entries[d]; ok && !e.dir {
				return fmt.Errorf("/%s is both a file and a directory", d)
			} else if !ok {
				entries[d] = entry{dir: true, mode: 0o755}
			}
		}
	}
	return nil
}

// writeTar writes entries as a tar in name order, every entry owned by 0:0 without names and
// modified at epoch.
func writeTar(entries map[string]entry, epoch time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		e := entries[name]
		h := &tar.Header{
			Name:    name,
			Mode:    e.mode,
			ModTime: epoch,
			Format:  tar.FormatUSTAR,
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("/%s: %w", name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// compressedLayer gzips tarData once, here: the layer's digest is that of these bytes. The
// gzip header has no name and no time.
func compressedLayer(tarData []byte) (v1.Layer, error) {
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(tarData); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	compressed := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
