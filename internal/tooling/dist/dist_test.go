package dist_test

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	helmregistry "helm.sh/helm/v3/pkg/registry"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/citool"
	"github.com/kube-semaphore/semaphore/internal/tooling/dist"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
	"github.com/kube-semaphore/semaphore/internal/tooling/signing"
)

// A release's notes are its CHANGELOG.md section, without the heading, the link definitions or
// the next section; a version without a section, or an empty one, is refused.
func TestReleaseNotesAreTheVersionsSection(t *testing.T) {
	changelog := "# Changelog\n\nIntro.\n\n## [Unreleased]\n\n### Added\n\n- next\n\n" +
		"## [1.2.0] - 2026-11-28\n\n### Changed\n\n- renamed a value\n\n## [1.1.0] - 2026-10-01\n\n\n" +
		"[1.2.0]: https://example.net/compare/v1.1.0...v1.2.0\n"
	for release, want := range map[string]string{
		dist.Unreleased: "### Added\n\n- next\n",
		"1.2.0":         "### Changed\n\n- renamed a value\n",
	} {
		got, err := dist.ReleaseNotes(changelog, release)
		if err != nil || got != want {
			t.Errorf("notes of %s: %q, %v; want %q", release, got, err, want)
		}
	}
	for _, release := range []string{"1.1.0", "1.3.0"} {
		if _, err := dist.ReleaseNotes(changelog, release); err == nil {
			t.Errorf("notes of %s: no error", release)
		}
	}
}

// The charts are packaged with the release's version, as their version and appVersion, their
// subcharts' and the umbrella's dependencies on them; so the images they name are the release's.
func TestChartsArePackagedWithTheReleaseVersion(t *testing.T) {
	dir := t.TempDir()
	charts, err := dist.PackageCharts(testbed.RepoRoot(), dir, "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != len(dist.ReleasedCharts) {
		t.Fatalf("packaged %v, want %v", charts, dist.ReleasedCharts)
	}
	for _, a := range charts {
		ch, err := loader.Load(filepath.Join(dir, a.Name))
		if err != nil {
			t.Fatal(err)
		}
		checkVersion(t, ch, "1.2.3")
	}
	m, err := helmchart.RenderManifest(filepath.Join(dir, "semaphore-1.2.3.tgz"), "semaphore", "semaphore", map[string]any{"global": map[string]any{"clusterName": "aws"}})
	if err != nil {
		t.Fatal(err)
	}
	workloads, err := m.Workloads()
	if err != nil || len(workloads) == 0 {
		t.Fatalf("workloads %v, %v", workloads, err)
	}
	for _, w := range workloads {
		for _, c := range w.Pod.Spec.Containers {
			if !strings.HasSuffix(c.Image, ":1.2.3") {
				t.Errorf("%s %s: image %s, want the release's tag 1.2.3", w.Kind, w.Name, c.Image)
			}
		}
	}
}

// checkVersion checks that ch, every chart it holds, and its dependencies, have version v.
func checkVersion(t *testing.T, ch *chart.Chart, v string) {
	t.Helper()
	if ch.Metadata.Version != v || (ch.Metadata.Type != "library" && ch.Metadata.AppVersion != v) {
		t.Errorf("chart %s: version %s, appVersion %s; want %s", ch.Name(), ch.Metadata.Version, ch.Metadata.AppVersion, v)
	}
	for _, d := range ch.Metadata.Dependencies {
		if d.Version != v {
			t.Errorf("chart %s: dependency %s version %s, want %s", ch.Name(), d.Name, d.Version, v)
		}
	}
	for _, sub := range ch.Dependencies() {
		checkVersion(t, sub, v)
	}
}

// The packaged charts are pushed to oci://<registry>/charts, from where helm pulls them as
// they were packaged.
func TestChartsArePushedToTheRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	reg := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	charts, err := dist.PackageCharts(testbed.RepoRoot(), dir, "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	refs, err := dist.PushCharts(dir, reg, charts, dist.PlainHTTP(reg, false))
	if err != nil {
		t.Fatal(err)
	}
	client, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP())
	if err != nil {
		t.Fatal(err)
	}
	for i, ref := range refs {
		name, _, _ := strings.Cut(ref, "@")
		pulled, err := client.Pull(name)
		if err != nil {
			t.Fatalf("helm pull oci://%s: %v", name, err)
		}
		want, _ := os.ReadFile(filepath.Join(dir, charts[i].Name))
		if !bytes.Equal(pulled.Chart.Data, want) || !strings.HasSuffix(ref, "@"+pulled.Manifest.Digest) {
			t.Errorf("oci://%s: pulled %d bytes, digest %s; pushed %d bytes as %s", name, len(pulled.Chart.Data), pulled.Manifest.Digest, len(want), ref)
		}
	}
}

// The plugin's archives are the same bytes when built twice; SHA256SUMS checks with sha256sum;
// krew's own validator accepts the manifest, and krew installs each archive offline as a user of
// its platform would.
func TestPluginArchivesAreReproducibleAndKrewInstallsThem(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the plugin and builds krew")
	}
	ctx, root := context.Background(), testbed.RepoRoot()
	platforms := []string{"linux/amd64", "windows/arm64"}
	epoch := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	dirs := []string{t.TempDir(), t.TempDir()}
	var archives []dist.Artifact
	for _, dir := range dirs {
		var err error
		if archives, err = dist.BuildPluginArchives(ctx, root, dir, "v1.2.3", epoch, platforms); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range archives {
		first, _ := os.ReadFile(filepath.Join(dirs[0], a.Name))
		second, _ := os.ReadFile(filepath.Join(dirs[1], a.Name))
		if len(first) == 0 || !bytes.Equal(first, second) {
			t.Errorf("%s: %d and %d bytes, not the same", a.Name, len(first), len(second))
		}
	}
	dir := dirs[0]
	for _, a := range archives {
		data, err := os.ReadFile(filepath.Join(dir, a.SBOM))
		if err != nil || !bytes.Contains(data, []byte(`"bomFormat": "CycloneDX"`)) {
			t.Errorf("%s: SBOM %s: %v, %.80s", a.Name, a.SBOM, err, data)
		}
	}
	sums, err := dist.WriteChecksums(dir, archives)
	if err != nil {
		t.Fatal(err)
	}
	check := exec.Command("sha256sum", "-c", dist.ChecksumsFile)
	check.Dir = dir
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c: %v\n%s", err, out)
	}
	manifest, err := dist.KrewManifest("v1.2.3", dist.DownloadURL("v1.2.3"), archives, sums)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, dist.KrewManifestName)
	if err := os.WriteFile(path, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	krew, err := citool.Path(os.Stderr, root, "krew.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := dist.ValidateKrewManifest(ctx, krew, path, dir, archives); err != nil {
		t.Error(err)
	}
}

// Every file SignFiles signs gets a <file>.sig that the key's public half verifies, and that a
// changed file fails.
func TestSignedFilesVerifyWithThePublicKey(t *testing.T) {
	dir := t.TempDir()
	files := []string{"SHA256SUMS", "semaphore-1.2.3.tgz"}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("the content of "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	key, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := dist.SignFiles(dir, key, files); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		sig, err := os.ReadFile(filepath.Join(dir, f+".sig"))
		if err != nil {
			t.Fatal(err)
		}
		if err := signing.VerifyBlob(&key.PublicKey, []byte("the content of "+f), sig); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if signing.VerifyBlob(&key.PublicKey, []byte("another content"), sig) == nil {
			t.Errorf("%s: its signature verifies another content", f)
		}
	}
}
