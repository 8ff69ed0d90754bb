package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// The committed schemas are what the sources compose to (what `make verify` checks too, here
// without running generate).
func TestComposeYieldsTheCommittedFiles(t *testing.T) {
	root := filepath.Join("..", "..")
	charts := Plan(filepath.Join(root, "charts", "schema"), filepath.Join(root, "charts", "semaphore"), ownership.Components)
	if len(charts) != 1+len(ownership.Components) {
		t.Fatalf("%d charts planned", len(charts))
	}
	for _, c := range charts {
		got, err := Compose(c)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(c.File())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s is not what its sources compose to; run make generate (-committed +composed):\n%s", c.File(), diff)
		}
	}
}

// writeFiles writes files (path: content) under a new directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for path, content := range files {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// An own part adds keys to shared objects; the document's keys follow the own part, the properties
// values.yaml (semaphore-common, which it lacks, stays after global), nested keys the shared
// source first. Strings come out in ASCII.
func TestComposeMergesOwnIntoShared(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"shared.json": `{"properties": {"global": {"$ref": "#/definitions/global"}, "semaphore-common": {"type": "object"},
			"uninstall": {"type": "object", "properties": {"cleanUp": {"type": "boolean"}}}},
			"definitions": {"global": {"type": "object"}}}`,
		"own.json": `{"$schema": "s", "title": "t", "properties": {"workers": {"type": "integer", "minimum": 1},
			"uninstall": {"properties": {"keep": {"type": "boolean", "description": "µs"}}, "description": "d"}}}`,
		"chart/values.yaml": "workers: 2\nglobal: {}\nuninstall: {}\n",
	})
	got, err := Compose(Chart{filepath.Join(dir, "chart"), []string{filepath.Join(dir, "shared.json"), filepath.Join(dir, "own.json")}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "$schema": "s",
  "title": "t",
  "properties": {
    "workers": {
      "type": "integer",
      "minimum": 1
    },
    "global": {
      "$ref": "#/definitions/global"
    },
    "semaphore-common": {
      "type": "object"
    },
    "uninstall": {
      "type": "object",
      "properties": {
        "cleanUp": {
          "type": "boolean"
        },
        "keep": {
          "type": "boolean",
          "description": "\u00b5s"
        }
      },
      "description": "d"
    }
  },
  "definitions": {
    "global": {
      "type": "object"
    }
  }
}
`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("composed (-want +got):\n%s", diff)
	}
}

// A value that a shared source and the own part both set is an error that names it and both.
func TestComposeRefusesAClash(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"shared.json": `{"properties": {"affinity": {"type": "object", "description": "shared"}}}`,
		"own.json":    `{"properties": {"affinity": {"description": "own"}}}`,
	})
	shared, own := filepath.Join(dir, "shared.json"), filepath.Join(dir, "own.json")
	_, err := Compose(Chart{filepath.Join(dir, "chart"), []string{shared, own}})
	if err == nil {
		t.Fatal("the clash is composed")
	}
	for _, w := range []string{"properties.affinity.description", shared, own} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error %q does not name %s", err, w)
		}
	}
}
