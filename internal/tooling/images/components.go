package images

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// DefaultRegistry is where the charts pull the images from unless global.image.registry says
// otherwise.
const DefaultRegistry = "ghcr.io/kube-semaphore"

// Components returns the specs of the three component images, named as the charts expect them
// (<registry>/semaphore-<component>, see Ref). semaphore-wireguard runs as root: it creates
// WireGuard links and routes, which takes CAP_NET_ADMIN, and Kubernetes gives a capability only
// to a container process that runs as root. The others run as nonroot (65532).
func Components() []Spec {
	return []Spec{
		{
			Name:        ownership.ServiceMirror,
			Description: "Mirrors opted-in Services of remote clusters as local Services and EndpointSlices",
			Package:     "./components/service-mirror",
			User:        nonRootUser,
		},
		{
			Name:        ownership.Policy,
			Description: "Keeps Calico GlobalNetworkSets of labelled pods in remote clusters",
			Package:     "./components/policy",
			User:        nonRootUser,
		},
		{
			Name:        ownership.WireGuard,
			Description: "Per-remote-cluster WireGuard devices, peers and routes on every node",
			Package:     "./components/wireguard",
			User:        rootUser,
		},
	}
}

// Ref is the image's reference in registry with tag: <registry>/<Name>:<tag>.
func (s Spec) Ref(registry, tag string) string {
	return fmt.Sprintf("%s/%s:%s", registry, s.Name, tag)
}

// AppVersion is the appVersion of the chart in chartDir (charts/semaphore): the tag the charts
// use for the images unless global.image.tag says otherwise.
func AppVersion(chartDir string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return "", err
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(chartDir, "Chart.yaml"), err)
	}
	if c.AppVersion == "" {
		return "", fmt.Errorf("%s has no appVersion", filepath.Join(chartDir, "Chart.yaml"))
	}
	return c.AppVersion, nil
}
