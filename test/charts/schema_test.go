package charts_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// validValues are, per chart (by name), its directory and a minimal valid set of values that each
// bad case breaks one thing of.
var validValues = map[string]struct{ dir, values string }{
	"semaphore":        {umbrellaChart, awsGlobals + "wireguard:\n  listenPorts:\n    aws: 51821\n"},
	"semaphore-remote": {remoteChart, "consumers:\n  - name: gcp\n"},
}

// badValuesCase is one case of testdata/bad-values.yaml.
type badValuesCase struct {
	Name  string `json:"name"`
	Chart string `json:"chart"`
	// Values break one thing of the chart's valid values.
	Values string `json:"values"`
	// ErrorNames are strings the error must contain (case-insensitive): at least the field.
	ErrorNames []string `json:"errorNames"`
}

// Bad values are refused before anything is installed, with an error that names the value at
// fault: the schema (closed objects, patterns, enums) or, for what a schema cannot say, the
// chart's own checks. The cases are in testdata/bad-values.yaml.
func TestBadValuesAreRefused(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "bad-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []badValuesCase `json:"cases"`
	}
	if err := yaml.UnmarshalStrict(data, &file); err != nil {
		t.Fatal(err)
	}
	for _, tt := range file.Cases {
		t.Run(tt.Name, func(t *testing.T) { checkRefused(t, tt) })
	}
}

func checkRefused(t *testing.T, tt badValuesCase) {
	t.Helper()
	valid, ok := validValues[tt.Chart]
	if !ok {
		t.Fatalf("no valid values for chart %q", tt.Chart)
	}
	chart, base := valid.dir, valid.values
	// The base values themselves are valid.
	if _, err := render(t, chart, releaseName, releaseNamespace, valuesOf(t, nil, base)); err != nil {
		t.Fatalf("the valid base values are refused: %v", err)
	}
	_, err := render(t, chart, releaseName, releaseNamespace, valuesOf(t, nil, base, tt.Values))
	if err == nil {
		t.Fatalf("%s is accepted", tt.Values)
	}
	msg := err.Error()
	t.Logf("%s\n-> %s", tt.Values, msg)
	var missing []string
	for _, w := range tt.ErrorNames {
		if !strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		t.Errorf("the error does not name %q", missing)
	}
	if len(msg) > 1500 {
		t.Errorf("the error is %d characters long; a user reads it in a terminal", len(msg))
	}
}

// The umbrella and every subchart carry the same schema for global values (a subchart is
// installable alone, so it needs its own copy): properties.global, resolved where it is a $ref,
// must not drift apart.
func TestGlobalSchemaIsTheSameEverywhere(t *testing.T) {
	global := func(chart string) any {
		t.Helper()
		schema := readJSON(t, filepath.Join(chart, "values.schema.json"))
		g := resolve(t, schema, property(schema, "global"))
		if _, ok := property(g, "clusterName").(map[string]any); !ok {
			t.Fatalf("%s: global (resolved) has no property clusterName: %v", chart, g)
		}
		return g
	}
	want := global(umbrellaChart)
	for _, sub := range ownership.Components {
		if diff := cmp.Diff(want, global(subchartDir(sub))); diff != "" {
			t.Errorf("%s: global differs from the umbrella's (-umbrella +%s):\n%s", sub, sub, diff)
		}
	}
}

// What the shared schema sources say (charts/schema: every-chart.json for the umbrella and every
// subchart, every-component.json for every subchart) is in each of those charts' schemas, as it
// is there or added to by the chart's own part (a description, a property), never changed.
func TestSharedSchemaIsInEveryChart(t *testing.T) {
	sources := filepath.Join(testbed.RepoRoot(), "charts", "schema")
	everyChart := readJSON(t, filepath.Join(sources, "every-chart.json"))
	everyComponent := readJSON(t, filepath.Join(sources, "every-component.json"))
	if props, _ := everyComponent["properties"].(map[string]any); len(props) < 10 {
		t.Fatalf("every-component.json has only %v", everyComponent["properties"])
	}
	charts := map[string][]map[string]any{umbrellaChart: {everyChart}}
	for _, sub := range ownership.Components {
		charts[subchartDir(sub)] = []map[string]any{everyChart, everyComponent}
	}
	for chart, shared := range charts {
		file := filepath.Join(chart, "values.schema.json")
		schema := readJSON(t, file)
		for _, want := range shared {
			if path := differs(want, schema, ""); path != "" {
				rel, _ := filepath.Rel(testbed.RepoRoot(), file)
				t.Errorf("%s: %s is not what charts/schema says (make generate)", rel, path)
			}
		}
	}
}

func subchartDir(name string) string { return filepath.Join(umbrellaChart, "charts", name) }

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// property is schema.properties[name], nil when there is none.
func property(schema any, name string) any {
	m, _ := schema.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	return props[name]
}

// resolve follows v's local $ref ("#/definitions/global") within doc, as often as there is one.
func resolve(t *testing.T, doc map[string]any, v any) any {
	t.Helper()
	for range 10 {
		m, _ := v.(map[string]any)
		ref, ok := m["$ref"].(string)
		if !ok {
			return v
		}
		if !strings.HasPrefix(ref, "#/") {
			t.Fatalf("$ref %q is not local", ref)
		}
		v = any(doc)
		for _, k := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			m, _ := v.(map[string]any)
			if v = m[k]; v == nil {
				t.Fatalf("$ref %q leads nowhere", ref)
			}
		}
	}
	t.Fatal("$ref after $ref")
	return nil
}

// differs is the dotted path of the first value of want that got lacks or has otherwise ("" when
// got has all of want; got may have more).
func differs(want, got any, path string) string {
	w, ok := want.(map[string]any)
	if !ok {
		if cmp.Equal(want, got) {
			return ""
		}
		return path
	}
	g, ok := got.(map[string]any)
	if !ok {
		return path
	}
	for _, k := range slices.Sorted(maps.Keys(w)) {
		if p := differs(w[k], g[k], strings.TrimPrefix(path+"."+k, ".")); p != "" {
			return p
		}
	}
	return ""
}
