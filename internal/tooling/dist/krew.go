package dist

import (
	"strings"

	"sigs.k8s.io/yaml"
)

// KrewManifestName is the file of the plugin's krew manifest: krew requires it to be named after
// the plugin (`kubectl semaphore`).
const KrewManifestName = "semaphore.yaml"

// krewPlugin is a krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2 Plugin),
// with the fields the plugin uses.
type krewPlugin struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   krewMetadata   `json:"metadata"`
	Spec       krewPluginSpec `json:"spec"`
}

type krewMetadata struct {
	Name string `json:"name"`
}

type krewPluginSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Platforms        []krewPlatform `json:"platforms"`
}

type krewPlatform struct {
	Selector krewSelector `json:"selector"`
	URI      string       `json:"uri"`
	SHA256   string       `json:"sha256"`
	Bin      string       `json:"bin"`
}

type krewSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// Homepage is the project's home, the krew manifest's homepage and where releases are
// downloaded from by default.
const Homepage = "https://github.com/kube-semaphore/semaphore"

// KrewManifest is the krew manifest of release version: a platform per plugin archive, each
// downloaded from baseURL/<archive> and checked against its sha256 of sums.
func KrewManifest(version, baseURL string, archives []Artifact, sums map[string]string) ([]byte, error) {
	p := krewPlugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   krewMetadata{Name: "semaphore"},
		Spec: krewPluginSpec{
			Version:          version,
			Homepage:         Homepage,
			ShortDescription: "Link Semaphore clusters, check them, and see the mesh",
			Description: "Semaphore connects Kubernetes clusters over a flat network with no sidecars: WireGuard between nodes,\n" +
				"remote Services mirrored locally, remote pods in Calico network sets. This plugin links clusters\n" +
				"(link), checks that they work together (check), and shows the mesh (status, graph).\n",
		},
	}
	for _, a := range archives {
		goos, arch, _ := strings.Cut(a.Platform, "/")
		bin := "kubectl-semaphore"
		if goos == "windows" {
			bin += ".exe"
		}
		p.Spec.Platforms = append(p.Spec.Platforms, krewPlatform{
			Selector: krewSelector{MatchLabels: map[string]string{"os": goos, "arch": arch}},
			URI:      strings.TrimSuffix(baseURL, "/") + "/" + a.Name,
			SHA256:   sums[a.Name],
			Bin:      bin,
		})
	}
	return yaml.Marshal(p)
}

// DownloadURL is where the files of release version are downloaded from by default: the
// project's releases.
func DownloadURL(version string) string { return Homepage + "/releases/download/" + version }
