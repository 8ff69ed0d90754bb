package images_test

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
)

// root is the module root, seen from this package's directory.
const root = "../../.."

// The three component images for both default platforms, built once for all the tests here
// (a cold build compiles every dependency for arm64 too), with options resolved once.
var (
	buildOnce sync.Once
	built     map[string]v1.ImageIndex // by spec name
	buildOpts images.Options
	buildErr  error
)

func components(t *testing.T) (map[string]v1.ImageIndex, images.Options) {
	t.Helper()
	testenv.SkipIfShort(t, "building every component for two platforms")
	buildOnce.Do(func() {
		ctx := context.Background()
		buildOpts, buildErr = images.DefaultOptions(ctx, root)
		if buildErr != nil {
			return
		}
		built = map[string]v1.ImageIndex{}
		for _, spec := range images.Components() {
			start := time.Now()
			idx, err := images.Build(ctx, spec, buildOpts)
			if err != nil {
				buildErr = err
				return
			}
			built[spec.Name] = idx
			t.Logf("built %s in %s", spec.Name, time.Since(start).Round(time.Millisecond))
		}
	})
	if buildErr != nil {
		t.Fatalf("building the component images: %v", buildErr)
	}
	return built, buildOpts
}

func digest(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// images returns idx's images by platform ("linux/amd64").
func imagesOf(t *testing.T, idx v1.ImageIndex) map[string]v1.Image {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1.Image{}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		out[d.Platform.OS+"/"+d.Platform.Architecture] = img
	}
	return out
}

// fileOf returns the content of path (without its leading slash) in img's only layer.
func fileOf(t *testing.T, img v1.Image, path string) []byte {
	t.Helper()
	_, data := layerContents(t, img)
	b, ok := data[path]
	if !ok {
		t.Fatalf("no %s in the layer", path)
	}
	return b
}

// layerContents returns the tar headers of img's only layer, in order, and the content of
// each entry by name.
func layerContents(t *testing.T, img v1.Image) ([]*tar.Header, map[string][]byte) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want exactly one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var headers []*tar.Header
	data := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return headers, data
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		headers = append(headers, h)
		data[h.Name] = b
	}
}

// Building the same spec again, from the same commit, gives the same digests: nothing of the
// build's time, place or user gets into an image. A spec of prebuilt binaries that are the
// same binaries gives the same image as the Go package.
func TestSameCommitGivesTheSameDigests(t *testing.T) {
	built, opts := components(t)
	spec := images.Components()[1] // semaphore-policy
	want := digest(t, built[spec.Name])

	again, err := images.Build(t.Context(), spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := digest(t, again); got != want {
		t.Errorf("second build of %s: index digest %s, first build %s", spec.Name, got, want)
	}

	dir := t.TempDir()
	prebuilt := spec
	prebuilt.Package = ""
	prebuilt.Binaries = map[string]string{}
	for platform, img := range imagesOf(t, built[spec.Name]) {
		path := filepath.Join(dir, strings.ReplaceAll(platform, "/", "-"))
		if err := os.WriteFile(path, fileOf(t, img, spec.Name), 0o755); err != nil {
			t.Fatal(err)
		}
		prebuilt.Binaries[platform] = path
	}
	fromBinaries, err := images.Build(t.Context(), prebuilt, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := digest(t, fromBinaries); got != want {
		t.Errorf("%s from its prebuilt binaries: index digest %s, from the package %s", spec.Name, got, want)
	}
}

// Every component image is an OCI index of linux/amd64 and linux/arm64 images, each configured
// to run its binary as its user (root only for semaphore-wireguard), labelled, created at the
// commit's time, and made of one layer that holds exactly the base files and the binary, owned
// by root, with fixed modes and times.
func TestComponentImagesHoldTheirBinaryAndBaseFilesOnly(t *testing.T) {
	built, opts := components(t)
	certs, err := os.ReadFile(images.DefaultCACertificates)
	if err != nil {
		t.Fatal(err)
	}
	wantUsers := map[string]string{
		"semaphore-service-mirror": "65532:65532",
		"semaphore-policy":         "65532:65532",
		"semaphore-wireguard":      "0:0",
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, spec := range images.Components() {
		t.Run(spec.Name, func(t *testing.T) {
			idx := built[spec.Name]
			if mt, _ := idx.MediaType(); mt != types.OCIImageIndex {
				t.Errorf("index media type %s, want %s", mt, types.OCIImageIndex)
			}
			byPlatform := imagesOf(t, idx)
			if got := slices.Sorted(maps.Keys(byPlatform)); !slices.Equal(got, []string{"linux/amd64", "linux/arm64"}) {
				t.Fatalf("platforms %v", got)
			}
			for platform, img := range byPlatform {
				t.Run(platform, func(t *testing.T) {
					m, err := img.Manifest()
					if err != nil {
						t.Fatal(err)
					}
					if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
						t.Errorf("manifest media types %s, config %s; want OCI", m.MediaType, m.Config.MediaType)
					}
					if len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
						t.Fatalf("layers %+v, want one %s", m.Layers, types.OCILayer)
					}
					cf, err := img.ConfigFile()
					if err != nil {
						t.Fatal(err)
					}
					arch := strings.TrimPrefix(platform, "linux/")
					if cf.OS != "linux" || cf.Architecture != arch {
						t.Errorf("config platform %s/%s, want %s", cf.OS, cf.Architecture, platform)
					}
					if !cf.Created.Equal(opts.Epoch) {
						t.Errorf("created %s, want the commit's time %s", cf.Created, opts.Epoch)
					}
					wantConfig := v1.Config{
						User:       wantUsers[spec.Name],
						Entrypoint: []string{"/" + spec.Name},
						Env: []string{
							"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
							"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
						},
						WorkingDir: "/",
						Labels: map[string]string{
							"org.opencontainers.image.title":       spec.Name,
							"org.opencontainers.image.description": spec.Description,
							"org.opencontainers.image.source":      "https://github.com/kube-semaphore/semaphore",
							"org.opencontainers.image.version":     opts.Version,
							"org.opencontainers.image.revision":    opts.Revision,
						},
					}
					if opts.Revision == "" {
						delete(wantConfig.Labels, "org.opencontainers.image.revision")
					}
					if diff := cmp.Diff(wantConfig, cf.Config); diff != "" {
						t.Errorf("config (-want +got):\n%s", diff)
					}

					type file struct {
						Name       string
						Type       byte
						Mode       int64
						UID, GID   int
						Uname      string
						Gname      string
						ModTime    time.Time
						Size       int64
						LinkTarget string
					}
					dir := func(n string, mode int64) file {
						return file{Name: n, Type: tar.TypeDir, Mode: mode, ModTime: opts.Epoch}
					}
					reg := func(n string, mode, size int64) file {
						return file{Name: n, Type: tar.TypeReg, Mode: mode, ModTime: opts.Epoch, Size: size}
					}
					headers, data := layerContents(t, img)
					var got []file
					for _, h := range headers {
						got = append(got, file{h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime.UTC(), h.Size, h.Linkname})
					}
					binary, passwd, group, gotCerts := data[spec.Name], data["etc/passwd"], data["etc/group"], data["etc/ssl/certs/ca-certificates.crt"]
					want := []file{
						dir("etc/", 0o755),
						reg("etc/group", 0o644, int64(len(group))),
						reg("etc/passwd", 0o644, int64(len(passwd))),
						dir("etc/ssl/", 0o755),
						dir("etc/ssl/certs/", 0o755),
						reg("etc/ssl/certs/ca-certificates.crt", 0o644, int64(len(certs))),
						reg(spec.Name, 0o755, int64(len(binary))),
						dir("tmp/", 0o1777),
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("layer entries (-want +got):\n%s", diff)
					}
					if want := "root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n"; string(passwd) != want {
						t.Errorf("/etc/passwd:\n%s\nwant:\n%s", passwd, want)
					}
					if want := "root:x:0:\nnonroot:x:65532:\n"; string(group) != want {
						t.Errorf("/etc/group:\n%s\nwant:\n%s", group, want)
					}
					if !bytes.Equal(gotCerts, certs) {
						t.Errorf("the CA bundle in the image (%d bytes) is not the build machine's (%d bytes)", len(gotCerts), len(certs))
					}
					f, err := elf.NewFile(bytes.NewReader(binary))
					if err != nil {
						t.Fatalf("/%s is not ELF: %v", spec.Name, err)
					}
					if f.Machine != machines[arch] {
						t.Errorf("/%s is for %s, want %s", spec.Name, f.Machine, machines[arch])
					}
				})
			}
		})
	}
}

// The binary of this machine's platform, taken out of each image, runs here: -h prints the
// component's environment variables and exits 0.
func TestBinaryFromTheImageRunsHere(t *testing.T) {
	built, _ := components(t)
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, spec := range images.Components() {
		t.Run(spec.Name, func(t *testing.T) {
			img, ok := imagesOf(t, built[spec.Name])[platform]
			if !ok {
				t.Skipf("no %s image to run on this machine", platform)
			}
			path := filepath.Join(t.TempDir(), spec.Name)
			if err := os.WriteFile(path, fileOf(t, img, spec.Name), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(t.Context(), path, "-h")
			cmd.Env = []string{}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s -h: %v\n%s", spec.Name, err, out)
			}
			for _, want := range []string{"Environment variables:", "SEMAPHORE_LOCAL_CLUSTER"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("%s -h does not print %q:\n%s", spec.Name, want, out)
				}
			}
		})
	}
}

// Pushed to a registry (one served in-process on loopback), every image pulls back by its
// reference as the same index, with both platforms.
func TestPushedImagesPullBackUnchanged(t *testing.T) {
	built, _ := components(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	reg := strings.TrimPrefix(srv.URL, "http://")
	for _, spec := range images.Components() {
		idx := built[spec.Name]
		ref := spec.Ref(reg, "0.1.0")
		if err := images.Push(t.Context(), ref, idx, true); err != nil {
			t.Fatal(err)
		}
		r, err := name.ParseReference(ref, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		pulled, err := remote.Index(r, remote.WithContext(t.Context()))
		if err != nil {
			t.Fatalf("pulling %s: %v", ref, err)
		}
		if got, want := digest(t, pulled), digest(t, idx); got != want {
			t.Errorf("%s: pulled index %s, pushed %s", ref, got, want)
		}
		for _, p := range []string{"linux/amd64", "linux/arm64"} {
			platform, _ := v1.ParsePlatform(p)
			img, err := remote.Image(r, remote.WithContext(t.Context()), remote.WithPlatform(*platform))
			if err != nil {
				t.Fatalf("pulling %s for %s: %v", ref, p, err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.Architecture != platform.Architecture {
				t.Errorf("%s for %s: config architecture %s", ref, p, cf.Architecture)
			}
			if got, want := digest(t, img), digest(t, imagesOf(t, idx)[p]); got != want {
				t.Errorf("%s for %s: pulled %s, pushed %s", ref, p, got, want)
			}
		}
	}
}

// WriteLayout writes an OCI layout that lists every image under its reference; writing it again
// with fewer images leaves only their blobs, and a directory that is not a layout is refused.
func TestWriteLayoutListsImagesByReference(t *testing.T) {
	built, _ := components(t)
	dir := filepath.Join(t.TempDir(), "images")
	byRef := map[string]v1.ImageIndex{}
	for _, spec := range images.Components() {
		byRef[spec.Ref(images.DefaultRegistry, "0.1.0")] = built[spec.Name]
	}
	if err := images.WriteLayout(dir, byRef); err != nil {
		t.Fatal(err)
	}
	checkLayout(t, dir, byRef)
	all := countFiles(t, filepath.Join(dir, "blobs"))

	one := "ghcr.io/kube-semaphore/semaphore-policy:0.1.0"
	if err := images.WriteLayout(dir, map[string]v1.ImageIndex{one: byRef[one]}); err != nil {
		t.Fatal(err)
	}
	checkLayout(t, dir, map[string]v1.ImageIndex{one: byRef[one]})
	// One image: its index, two manifests, two configs, two layers.
	if n := countFiles(t, filepath.Join(dir, "blobs")); n != 7 {
		t.Errorf("after rewriting the layout with one image: %d blobs (before: %d), want 7", n, all)
	}

	notLayout := t.TempDir()
	if err := os.WriteFile(filepath.Join(notLayout, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := images.WriteLayout(notLayout, byRef); err == nil {
		t.Errorf("WriteLayout into a directory that is not a layout: no error")
	}
}

func checkLayout(t *testing.T, dir string, want map[string]v1.ImageIndex) {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]v1.Hash{}
	for _, d := range im.Manifests {
		ref := d.Annotations["org.opencontainers.image.ref.name"]
		got[ref] = d.Digest
		child, err := idx.ImageIndex(d.Digest)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		for p, img := range imagesOf(t, child) {
			layers, err := img.Layers()
			if err != nil {
				t.Fatalf("%s for %s: %v", ref, p, err)
			}
			for _, l := range layers {
				rc, err := l.Compressed()
				if err != nil {
					t.Fatalf("%s for %s: layer: %v", ref, p, err)
				}
				rc.Close()
			}
		}
	}
	wantDigests := map[string]v1.Hash{}
	for ref, idx := range want {
		wantDigests[ref] = digest(t, idx)
	}
	if diff := cmp.Diff(wantDigests, got); diff != "" {
		t.Errorf("layout %s, images by ref.name (-want +got):\n%s", dir, diff)
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The umbrella chart, with its default registry and tag, runs exactly the images Components
// names (<registry>/semaphore-<component>:<appVersion>), as the user each image runs as.
func TestComponentImagesAreTheOnesTheChartsRun(t *testing.T) {
	chartDir := filepath.Join(root, "charts", "semaphore")
	tag, err := images.AppVersion(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(chartDir, "ci", "all-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(raw, &vals); err != nil {
		t.Fatal(err)
	}
	delete(vals["global"].(map[string]any), "image") // the chart's default registry and tag
	m, err := helmchart.RenderManifest(chartDir, "semaphore", "semaphore", vals)
	if err != nil {
		t.Fatal(err)
	}
	workloads, err := m.Workloads()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, w := range workloads {
		c := w.Pod.Spec.Containers[0]
		uid, gid := "?", "?"
		if sc := w.Pod.Spec.SecurityContext; sc != nil {
			uid, gid = idOf(sc.RunAsUser, uid), idOf(sc.RunAsGroup, gid)
		}
		if sc := c.SecurityContext; sc != nil {
			uid, gid = idOf(sc.RunAsUser, uid), idOf(sc.RunAsGroup, gid)
		}
		got[c.Image] = uid + ":" + gid
	}
	want := map[string]string{}
	for _, spec := range images.Components() {
		want[spec.Ref(images.DefaultRegistry, tag)] = spec.User
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("images the chart runs and their users (-ours +chart's):\n%s", diff)
	}
}

func idOf(id *int64, otherwise string) string {
	if id == nil {
		return otherwise
	}
	return fmt.Sprint(*id)
}

// SOURCE_DATE_EPOCH, when set, is the images' time; otherwise the commit's, and outside git 0.
func TestSourceDateEpoch(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if got, err := images.SourceDateEpoch(t.Context(), root); err != nil || !got.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("with SOURCE_DATE_EPOCH=1700000000: %v, %v", got, err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	if _, err := images.SourceDateEpoch(t.Context(), root); err == nil {
		t.Errorf("SOURCE_DATE_EPOCH=yesterday: no error")
	}
	t.Setenv("SOURCE_DATE_EPOCH", "")
	if got, err := images.SourceDateEpoch(t.Context(), t.TempDir()); err != nil || !got.Equal(time.Unix(0, 0)) {
		t.Errorf("outside git: %v, %v; want 1970-01-01", got, err)
	}
	out, err := exec.CommandContext(t.Context(), "git", "-C", root, "log", "-1", "--format=%ct").Output()
	if err != nil {
		t.Skipf("no git history here: %v", err)
	}
	want := strings.TrimSpace(string(out))
	if got, err := images.SourceDateEpoch(t.Context(), root); err != nil || fmt.Sprint(got.Unix()) != want {
		t.Errorf("in the repository: %v, %v; want the commit time %s", got, err, want)
	}
}

// A binary the image could not run is refused before anything is built: one that needs a
// dynamic loader, or one for another architecture; and so is a build without a CA bundle.
func TestBuildRefusesWhatTheImageCannotRun(t *testing.T) {
	host, err := exec.LookPath("git") // dynamically linked on any ordinary Linux machine
	if err != nil {
		t.Skip(err)
	}
	opts := images.Options{Dir: root, Version: "test", Epoch: time.Unix(0, 0)}
	for _, tc := range []struct {
		what string
		spec images.Spec
		opts images.Options
		want string
	}{
		{"dynamic binary", images.Spec{Name: "dynamic", Binaries: map[string]string{"linux/" + runtime.GOARCH: host}}, opts, "dynamically linked"},
		{"other architecture", images.Spec{Name: "other", Binaries: map[string]string{otherArch(): host}}, opts, "the binary is for"},
		{"no CA bundle", images.Spec{Name: "nocerts", Binaries: map[string]string{"linux/" + runtime.GOARCH: host}},
			images.Options{Dir: root, Version: "test", Epoch: time.Unix(0, 0), CACertificates: filepath.Join(t.TempDir(), "missing.crt")}, "ca-certificates"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			_, err := images.Build(t.Context(), tc.spec, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one that says %q", err, tc.want)
			}
		})
	}
}

func otherArch() string {
	if runtime.GOARCH == "arm64" {
		return "linux/amd64"
	}
	return "linux/arm64"
}
