package dist

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
)

// ReleasedCharts are the charts a release packages, under charts/: the umbrella (with its
// subcharts) and semaphore-remote.
var ReleasedCharts = []string{"semaphore", "semaphore-remote"}

// ChartVersion is the chart version and appVersion of release version: without the v of the
// git tag, as the charts have always been versioned (and the images tagged: their default tag
// is the appVersion).
func ChartVersion(version string) string { return strings.TrimPrefix(version, "v") }

// PackageCharts packages every chart of ReleasedCharts from root's charts/ into dir, it and its
// subcharts with version and appVersion set to ChartVersion(version) and the umbrella's
// dependencies on them with it, as `helm package --version --app-version` does for one chart.
func PackageCharts(root, dir, version string) ([]Artifact, error) {
	v := ChartVersion(version)
	var out []Artifact
	for _, name := range ReleasedCharts {
		ch, err := loader.Load(filepath.Join(root, "charts", name))
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", name, err)
		}
		setVersion(ch, v)
		if err := ch.Validate(); err != nil {
			return nil, fmt.Errorf("chart %s: %w", name, err)
		}
		path, err := chartutil.Save(ch, dir)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", name, err)
		}
		out = append(out, Artifact{Name: filepath.Base(path)})
	}
	return out, nil
}

// setVersion sets the version and appVersion of ch and of every chart it depends on, and its
// dependencies' version constraints, to v.
func setVersion(ch *chart.Chart, v string) {
	ch.Metadata.Version = v
	if ch.Metadata.Type != "library" {
		ch.Metadata.AppVersion = v
	}
	for _, d := range ch.Metadata.Dependencies {
		d.Version = v
	}
	for _, sub := range ch.Dependencies() {
		setVersion(sub, v)
	}
}

// PushCharts pushes the packaged charts in dir to oci://<registry>/charts, over plain HTTP when
// plainHTTP, and returns each chart's reference with its digest.
func PushCharts(dir, reg string, charts []Artifact, plainHTTP bool) ([]string, error) {
	var opts []registry.ClientOption
	if plainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	var refs []string
	for _, a := range charts {
		data, err := os.ReadFile(filepath.Join(dir, a.Name))
		if err != nil {
			return nil, err
		}
		ch, err := loader.LoadArchive(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.Name, err)
		}
		ref := fmt.Sprintf("%s/charts/%s:%s", strings.TrimSuffix(reg, "/"), ch.Name(), ch.Metadata.Version)
		res, err := client.Push(data, ref)
		if err != nil {
			return nil, fmt.Errorf("pushing %s: %w", ref, err)
		}
		refs = append(refs, ref+"@"+res.Manifest.Digest)
	}
	return refs, nil
}

// PlainHTTP reports whether registry is talked to over plain HTTP: when insecure, or when it is
// on localhost or a loopback address, as the images' pushes do.
func PlainHTTP(registry string, insecure bool) bool {
	if insecure {
		return true
	}
	host := strings.SplitN(registry, "/", 2)[0]
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	addr, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && addr.IsLoopback()
}
