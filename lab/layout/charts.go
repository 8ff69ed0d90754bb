package layout

// The releases, as docs/getting-started.md installs them: semaphore-remote in a namespace of
// its own, the umbrella in the semaphore namespace (which also holds the mirrors).
const (
	RemoteRelease   = "semaphore-remote"
	RemoteNamespace = "semaphore-remote"
	UmbrellaRelease = "semaphore"
)

// WireGuardComponent is semaphore-wireguard's Controller.Component.
const WireGuardComponent = "semaphore-wireguard"

const (
	// GuideFile is the getting-started guide, which the lab follows to install and link the
	// clusters, and whose check it runs once the lab is up.
	GuideFile = "docs/getting-started.md"
	// GuideCheckSection is the guide's last section, which checks every cluster.
	GuideCheckSection = "8. Check"
	// GuideDir (in the lab directory) is the directory the guide's commands run in: the
	// values files it writes and reads are there.
	GuideDir = "guide"
)

// ChartsRepo is the repository of the registry that holds the charts (oci://<registry>/charts).
const ChartsRepo = "charts"

// ImagesRepo is the repository path of our images in the registry, as the charts' default
// registry has them (ghcr.io/kube-semaphore/semaphore-<component>): global.image.registry is
// <registry>/kube-semaphore.
const ImagesRepo = "kube-semaphore"
