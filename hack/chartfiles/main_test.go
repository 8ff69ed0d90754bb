package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/ownership"
)

var components = ownership.Components

func TestDestinationRoutesByComponentName(t *testing.T) {
	for src, want := range map[string]string{
		"alerts/service-mirror.yaml":   "charts/semaphore/charts/service-mirror/files/alerts/service-mirror.yaml",
		"alerts/semaphore-policy.yaml": "charts/semaphore/charts/policy/files/alerts/semaphore-policy.yaml",
		"dashboards/wireguard.json":    "charts/semaphore/charts/wireguard/files/dashboards/wireguard.json",
		"alerts/semaphore.yaml":        "charts/semaphore/files/alerts/semaphore.yaml",
		"dashboards/overview.json":     "charts/semaphore/files/dashboards/overview.json",
	} {
		if got := Destination(src, "charts/semaphore", components); got != want {
			t.Errorf("Destination(%s) = %s, want %s", src, got, want)
		}
	}
}

// Copies follow their sources: new and changed ones are written, unchanged ones left alone,
// those without a source removed with their emptied directories; test files are not copied.
func TestSyncCopiesChangedFilesAndRemovesStaleOnes(t *testing.T) {
	root := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("alerts/wireguard.yaml", "groups: []\n")
	write("alerts/wireguard_test.yaml", "tests: []\n")
	write("dashboards/overview.json", "{}\n")
	write("charts/semaphore/charts/policy/files/alerts/policy.yaml", "old\n") // its source is gone

	logs, err := Sync(root, "charts/semaphore", components)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"removed charts/semaphore/charts/policy/files/alerts/policy.yaml (no source)",
		"wrote charts/semaphore/charts/wireguard/files/alerts/wireguard.yaml",
		"wrote charts/semaphore/files/dashboards/overview.json",
	}
	if !reflect.DeepEqual(logs, want) {
		t.Errorf("first sync: %q, want %q", logs, want)
	}
	if _, err := os.Stat(filepath.Join(root, "charts/semaphore/charts/policy/files")); !os.IsNotExist(err) {
		t.Errorf("the emptied files directory is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(root, "charts/semaphore/charts/wireguard/files/alerts/wireguard_test.yaml")); !os.IsNotExist(err) {
		t.Error("a test file was copied")
	}
	if logs, err := Sync(root, "charts/semaphore", components); err != nil || len(logs) != 0 {
		t.Errorf("second sync changed %q (%v), want nothing", logs, err)
	}
}
