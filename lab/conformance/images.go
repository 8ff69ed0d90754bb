// Package conformance runs the upstream MCS conformance suite (sigs.k8s.io/mcs-api/conformance,
// vendored unmodified in third_party/mcs-api-conformance) against the lab's clusters: it puts
// the two images the suite's pods run into the lab's registry (PushImages), compiles the suite
// into a test binary (BuildSuite) and runs that against some of the lab's clusters, which
// writes the suite's reports (Run). `make conformance` does all three (lab/cmd/conformance,
// ci/conformance.sh; docs/mcs.md).
package conformance

import (
	"context"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
)

// The suite's pods run two public images (its k8s_objects.go): the hello Deployment's
// alpine/socat runs `/bin/sh -c` with a script of echo, grep -E, tr and awk that starts socat
// listeners (TCP-LISTEN, UDP-LISTEN, fork, SYSTEM:'echo ...'); the request pod's
// nicolaka/netshoot runs `/bin/sh -ec` with a sleep loop, and the suite execs into it `sh -c`
// with OpenBSD's nc (-v -w 2 -4), nslookup (-type=A, AAAA, SRV), grep, tail and awk. This
// machine pulls from no public registry, so the lab has images by those names of its own with
// the same programs, from Debian's packages (ci/conformance-debs.sh), assembled by
// internal/tooling/images like every image of ours, and pushed into the lab's registry, which every
// node's containerd takes for docker.io (lab/node).
//
// /bin/sh is dash, not busybox's: busybox's sh runs its own applets before anything on PATH,
// and its nc takes none of the suite's flags. The applets the images need are scripts that run
// busybox, which internal/tooling/images puts at /busybox (the image's one static binary).

// SocatImage and NetshootImage are the suite's images as it names them, on docker.io.
const (
	SocatImage    = "alpine/socat:1.7.4.4"
	NetshootImage = "nicolaka/netshoot:v0.15"
)

// image is one of the suite's images.
type image struct {
	name, description string
	// programs are its executables besides busybox: path in the image -> path in the
	// packages' root. Their shared libraries come along.
	programs map[string]string
	// entrypoint is the original's: the suite sets the hello pods' command, and only the
	// request pod's arguments, which netshoot, having no entrypoint, runs as they are (busybox's
	// env, here).
	entrypoint []string
}

// shell is /bin/sh in both images.
const shell = "bin/dash"

var suiteImages = []image{
	{
		name:        SocatImage,
		description: "socat, dash and busybox from Debian: the lab's stand-in for alpine/socat, for the MCS conformance suite",
		programs:    map[string]string{"/bin/sh": shell, "/usr/bin/socat": "usr/bin/socat"},
		entrypoint:  []string{"/usr/bin/socat"},
	},
	{
		name:        NetshootImage,
		description: "OpenBSD's nc, dash and busybox (nslookup) from Debian: the lab's stand-in for nicolaka/netshoot, for the MCS conformance suite",
		programs:    map[string]string{"/bin/sh": shell, "/usr/bin/nc": "bin/nc.openbsd"},
		entrypoint:  []string{"/busybox", "env"},
	},
}

// applets are busybox's programs in both images, each a script in /usr/bin that runs busybox:
// what the suite's commands call, and a few for looking around by hand (kubectl exec).
var applets = []string{
	"awk", "cat", "cut", "env", "grep", "head", "hostname", "ls", "nslookup", "ps", "sed", "sleep",
	"sort", "tail", "tr", "wc",
}

// PushImages builds the suite's two images for this machine's platform from Debian's packages
// (ci/conformance-debs.sh fetches them, once) and pushes them to the plain-HTTP registry at
// registry (host:port) under their docker.io names. progress receives what fetching the
// packages says (nothing once they are cached).
func PushImages(ctx context.Context, registry string, progress io.Writer) error {
	root, err := testbed.CIToolPath(progress, "conformance-debs.sh")
	if err != nil {
		return err
	}
	opts, err := images.DefaultOptions(ctx, testbed.RepoRoot())
	if err != nil {
		return err
	}
	for _, img := range suiteImages {
		idx, err := img.build(ctx, root, opts)
		if err != nil {
			return err
		}
		if err := images.Push(ctx, registry+"/"+img.name, idx, true); err != nil {
			return err
		}
	}
	return nil
}

// build builds the image from the packages unpacked in root.
func (img image) build(ctx context.Context, root string, opts images.Options) (v1.ImageIndex, error) {
	spec, err := img.spec(root)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", img.name, err)
	}
	idx, err := images.Build(ctx, spec, opts)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", img.name, err)
	}
	return idx, nil
}

// spec is the image's internal/tooling/images spec, with its files from the packages unpacked in root.
func (img image) spec(root string) (images.Spec, error) {
	files, err := withLibraries(root, img.programs)
	if err != nil {
		return images.Spec{}, err
	}
	for _, a := range applets {
		files = append(files, images.File{
			Path: path.Join("/usr/bin", a),
			Mode: 0o755,
			Data: fmt.Appendf(nil, "#!/bin/sh\nexec /busybox %s \"$@\"\n", a),
		})
	}
	return images.Spec{
		Name:        "busybox",
		Description: img.description,
		Binaries:    map[string]string{"linux/" + runtime.GOARCH: filepath.Join(root, "bin", "busybox")},
		// As the images it stands in for: socat listens on port 42.
		User:       "0:0",
		Entrypoint: img.entrypoint,
		Files:      files,
	}, nil
}
