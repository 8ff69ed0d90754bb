package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/chart/README.md from the current output")

func TestParseValues(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []value
	}{{
		name: "empty file",
		src:  "",
	}, {
		name: "description over several lines, file comment above the first key",
		src:  "# values of x\n# -- first line\n# second line\nfoo: 1\n",
		want: []value{{Key: "foo", Type: "int", Default: "`1`", Description: "first line second line"}},
	}, {
		name: "undocumented keys are listed without a description",
		src:  "foo: bar\n",
		want: []value{{Key: "foo", Type: "string", Default: "`\"bar\"`"}},
	}, {
		name: "the last -- block wins",
		src:  "# -- stale\n#\n# -- fresh\nfoo: true\n",
		want: []value{{Key: "foo", Type: "bool", Default: "`true`", Description: "fresh"}},
	}, {
		name: "type and default overrides",
		src:  "# -- (string) the tag\n# @default -- the app version\ntag:\n",
		want: []value{{Key: "tag", Type: "string", Default: "the app version", Description: "the tag"}},
	}, {
		name: "a parenthesised word that is no type stays in the description",
		src:  "# -- (required) the name\nname: \"\"\n",
		want: []value{{Key: "name", Type: "string", Default: "`\"\"`", Description: "(required) the name"}},
	}, {
		name: "null without override",
		src:  "# -- nothing\nx: null\n",
		want: []value{{Key: "x", Type: "null", Default: "`null`", Description: "nothing"}},
	}, {
		name: "a map without described keys is one row",
		src:  "# -- resources\nres:\n  limits: {memory: 64Mi}\n  requests: {cpu: 1}\n",
		want: []value{{Key: "res", Type: "object", Default: "`{\"limits\":{\"memory\":\"64Mi\"},\"requests\":{\"cpu\":1}}`", Description: "resources"}},
	}, {
		name: "a map with described keys is recursed, a dedented comment belongs to the next key",
		src:  "a:\n  b:\n    # -- deep\n    c: [1, 2]\n# -- next\nd: x\n",
		want: []value{
			{Key: "a.b.c", Type: "list", Default: "`[1,2]`", Description: "deep"},
			{Key: "d", Type: "string", Default: "`\"x\"`", Description: "next"},
		},
	}, {
		name: "a described section gets its own row",
		src:  "# -- the section\ns:\n  # -- on or off\n  on: false\n",
		want: []value{
			{Key: "s", Type: "object", Description: "the section"},
			{Key: "s.on", Type: "bool", Default: "`false`", Description: "on or off"},
		},
	}, {
		name: "keys with dots are quoted in the path",
		src:  "ann:\n  # -- scrape\n  prometheus.io/scrape: \"true\"\n",
		want: []value{{Key: `ann."prometheus.io/scrape"`, Type: "string", Default: "`\"true\"`", Description: "scrape"}},
	}, {
		name: "aliases are resolved",
		src:  "base: &b {x: 1}\n# -- copy\ncopy: *b\n",
		want: []value{
			{Key: "base", Type: "object", Default: "`{\"x\":1}`"},
			{Key: "copy", Type: "object", Default: "`{\"x\":1}`", Description: "copy"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseValues([]byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
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
