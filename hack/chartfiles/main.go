// Command chartfiles copies the alert rules (alerts/*.yaml) and the dashboards
// (dashboards/*.json) into the charts that ship them (run by `make generate`): a file whose name
// starts with a component's name (service-mirror.yaml, wireguard.json) goes to that component's
// subchart, files/alerts or files/dashboards, every other one (semaphore.yaml, overview.json) to
// the umbrella chart. Copies whose source is gone are removed, and so are directories left empty.
// Test files (*_test.yaml) stay where they are.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// kinds are the source directories and the extension of their files.
var kinds = map[string]string{"alerts": ".yaml", "dashboards": ".json"}

func main() {
	umbrella := flag.String("umbrella", "charts/semaphore", "the umbrella chart")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: chartfiles [-umbrella DIR] [COMPONENT...] (each with a subchart of that name under the umbrella's charts/; all components by default)")
		flag.PrintDefaults()
	}
	flag.Parse()
	components := flag.Args()
	if len(components) == 0 {
		components = ownership.Components
	}
	logs, err := Sync(".", *umbrella, components)
	for _, l := range logs {
		fmt.Println("generate: " + l)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartfiles:", err)
		os.Exit(1)
	}
}

// Destination is where the chart copy of source (alerts/x.yaml, dashboards/y.json) goes.
func Destination(source, umbrella string, components []string) string {
	kind, base := filepath.Base(filepath.Dir(source)), filepath.Base(source)
	chart := umbrella
	for _, c := range components {
		if strings.HasPrefix(strings.TrimPrefix(base, "semaphore-"), c) {
			chart = filepath.Join(umbrella, "charts", c)
		}
	}
	return filepath.Join(chart, "files", kind, base)
}

// Sync brings the charts' copies under root in line with the sources and says what it changed.
func Sync(root, umbrella string, components []string) ([]string, error) {
	var logs []string
	keep := map[string]bool{}
	for kind, ext := range kinds {
		sources, err := filepath.Glob(filepath.Join(root, kind, "*"+ext))
		if err != nil {
			return logs, err
		}
		for _, src := range sources {
			if strings.HasSuffix(src, "_test"+ext) || strings.HasSuffix(src, ".test"+ext) {
				continue
			}
			rel, _ := filepath.Rel(root, src)
			dest := Destination(rel, umbrella, components)
			keep[dest] = true
			changed, err := copyIfChanged(src, filepath.Join(root, dest))
			if err != nil {
				return logs, err
			}
			if changed {
				logs = append(logs, "wrote "+dest)
			}
		}
	}
	charts := []string{umbrella}
	for _, c := range components {
		charts = append(charts, filepath.Join(umbrella, "charts", c))
	}
	for _, chart := range charts {
		removed, err := removeStale(root, chart, keep)
		logs = append(logs, removed...)
		if err != nil {
			return logs, err
		}
	}
	slices.Sort(logs)
	return logs, nil
}

func copyIfChanged(src, dest string) (bool, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return false, err
	}
	if old, err := os.ReadFile(dest); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return false, err
	}
	return true, os.WriteFile(dest, data, 0o644)
}

// removeStale removes the chart's copies that keep does not list, then its files directories
// that are left empty.
func removeStale(root, chart string, keep map[string]bool) ([]string, error) {
	var logs []string
	files := filepath.Join(root, chart, "files")
	for kind, ext := range kinds {
		copies, _ := filepath.Glob(filepath.Join(files, kind, "*"+ext))
		for _, c := range copies {
			rel, _ := filepath.Rel(root, c)
			if keep[rel] {
				continue
			}
			if err := os.Remove(c); err != nil {
				return logs, err
			}
			logs = append(logs, "removed "+rel+" (no source)")
		}
		_ = os.Remove(filepath.Join(files, kind)) // only when empty
	}
	_ = os.Remove(files) // only when empty
	return logs, nil
}
