package dist

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/internal/tooling/images"
	"github.com/kube-semaphore/semaphore/internal/tooling/sbom"
)

// PluginPlatforms are the platforms kubectl-semaphore is released for.
var PluginPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"}

// pluginPackage is the kubectl plugin's main package.
const pluginPackage = "./cmd/kubectl-semaphore"

// Artifact is a file of a release, in the release's directory.
type Artifact struct {
	// Name is the file's name in the release's directory.
	Name string
	// Platform is the platform of a plugin archive ("linux/amd64"), "" for the others.
	Platform string
	// SBOM is the file of a plugin archive's SBOM (its program's), "" for the others.
	SBOM string
}

// PluginArchiveName is the name of the plugin's archive for platform: a zip for Windows, a
// gzipped tar for the others, as krew and the users of each expect.
func PluginArchiveName(version, platform string) string {
	os, arch, _ := strings.Cut(platform, "/")
	ext := ".tar.gz"
	if os == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("kubectl-semaphore_%s_%s_%s%s", version, os, arch, ext)
}

// PluginArtifact is the plugin's archive for platform, as BuildPluginArchives writes it: its
// name, its platform and the name of its SBOM.
func PluginArtifact(version, platform string) Artifact {
	a := Artifact{Name: PluginArchiveName(version, platform), Platform: platform}
	a.SBOM = SBOMName(strings.TrimSuffix(strings.TrimSuffix(a.Name, ".zip"), ".tar.gz"))
	return a
}

// BuildPluginArchives builds kubectl-semaphore of the module at root for every platform, as
// reproducibly as the images' binaries (images.GoBuild), and writes each archive, with the
// binary and the LICENSE, into dir, with the SBOM of the binary (Artifact.SBOM). Files in them
// are dated epoch.
func BuildPluginArchives(ctx context.Context, root, dir, version string, epoch time.Time, platforms []string) ([]Artifact, error) {
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "semaphore-plugin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var out []Artifact
	for _, platform := range platforms {
		a, err := pluginArchive(ctx, root, tmp, dir, version, platform, epoch, license)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// pluginArchive builds the plugin for platform in tmp and writes its archive into dir.
func pluginArchive(ctx context.Context, root, tmp, dir, version, platform string, epoch time.Time, license []byte) (Artifact, error) {
	binary := "kubectl-semaphore"
	if strings.HasPrefix(platform, "windows/") {
		binary += ".exe"
	}
	bin := filepath.Join(tmp, strings.ReplaceAll(platform, "/", "-"), binary)
	if err := images.GoBuild(ctx, root, pluginPackage, bin, platform, version); err != nil {
		return Artifact{}, err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return Artifact{}, err
	}
	files := []file{{name: binary, mode: 0o755, data: data}, {name: "LICENSE", mode: 0o644, data: license}}
	archive := tarGz
	if strings.HasPrefix(platform, "windows/") {
		archive = zipOf
	}
	b, err := archive(files, epoch)
	if err != nil {
		return Artifact{}, err
	}
	a := PluginArtifact(version, platform)
	bom, err := sbom.ForBinary(bin, "kubectl-semaphore", version, epoch)
	if err != nil {
		return Artifact{}, err
	}
	if err := writeSBOM(dir, a.SBOM, bom); err != nil {
		return Artifact{}, err
	}
	return a, os.WriteFile(filepath.Join(dir, a.Name), b, 0o644)
}
