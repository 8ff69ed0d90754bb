package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/chart/README.md from the current output")

// TestParseValues lists the rows of each values.yaml of testdata/parse-values.yaml.
func TestParseValues(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "parse-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var tests []struct {
		Name   string  `json:"name"`
		Values string  `json:"values"`
		Rows   []value `json:"rows"`
	}
	if err := yaml.UnmarshalStrict(data, &tests); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.Name, func(t *testing.T) {
			got, err := parseValues([]byte(tt.Values))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.Rows, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parseValues (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseValuesRejectsNonMap(t *testing.T) {
	if _, err := parseValues([]byte("- a\n- b\n")); err == nil {
		t.Error("parseValues accepted a list at the top level")
	}
	if _, err := parseValues([]byte("a: [\n")); err == nil {
		t.Error("parseValues accepted broken YAML")
	}
}

// TestReadme renders testdata/chart and compares it with testdata/chart/README.md; run with
// -update to accept a change of the output.
func TestReadme(t *testing.T) {
	dir := filepath.Join("testdata", "chart")
	got, undocumented, err := readme(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"undocumented"}, undocumented); diff != "" {
		t.Errorf("undocumented keys (-want +got):\n%s", diff)
	}
	golden := filepath.Join(dir, "README.md")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("README (-want +got):\n%s", diff)
	}
}

// TestRunWritesOnlyChanges checks that run writes README.md, reports undocumented keys, and
// leaves an up-to-date README alone so that `make generate` is idempotent.
func TestRunWritesOnlyChanges(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"Chart.yaml", "values.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "chart", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var warn bytes.Buffer
	if err := run(dir, false, nil, &warn); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(warn.Bytes(), []byte("undocumented has no `# --` description")) {
		t.Errorf("no warning about the undocumented key, got %q", warn.String())
	}
	readme := filepath.Join(dir, "README.md")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(readme, old, old); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, false, nil, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(readme)
	if err != nil {
		t.Fatal(err)
	}
	if !st.ModTime().Equal(old) {
		t.Errorf("README.md rewritten although unchanged (mtime %v, want %v)", st.ModTime(), old)
	}
	var out bytes.Buffer
	if err := run(dir, true, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(written), out.String()); diff != "" {
		t.Errorf("-stdout differs from README.md (-file +stdout):\n%s", diff)
	}
}
