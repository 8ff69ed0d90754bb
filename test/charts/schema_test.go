package charts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/testbed"
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
// installable alone, so it needs its own copy): they must not drift apart.
func TestGlobalSchemaIsTheSameEverywhere(t *testing.T) {
	read := func(path string) any {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(testbed.RepoRoot(), path))
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Properties map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(data, &schema); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return schema.Properties["global"]
	}
	want := read("charts/semaphore/values.schema.json")
	for _, sub := range ownership.Components {
		path := "charts/semaphore/charts/" + sub + "/values.schema.json"
		if diff := cmp.Diff(want, read(path)); diff != "" {
			t.Errorf("%s: global differs from the umbrella's (-umbrella +%s):\n%s", path, sub, diff)
		}
	}
}
