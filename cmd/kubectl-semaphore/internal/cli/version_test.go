package cli_test

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/cli"
	"github.com/kube-semaphore/semaphore/internal/version"
)

// version says the plugin's version, Go version and platform, on one line or as JSON or YAML
// with the same fields; another format is refused.
func TestVersionPrintsTheClientsVersionInEveryFormat(t *testing.T) {
	run := func(args ...string) (string, int) {
		var out, errOut bytes.Buffer
		code := cli.Main(append([]string{"version"}, args...), &out, &errOut)
		return out.String() + errOut.String(), code
	}
	line, code := run()
	if code != 0 || line != "kubectl-semaphore "+version.Version+" ("+runtime.Version()+", "+runtime.GOOS+"/"+runtime.GOARCH+")\n" {
		t.Errorf("version: %d %q", code, line)
	}
	want := map[string]string{"version": version.Version, "goVersion": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH}
	for format, decode := range map[string]func([]byte, any) error{"json": json.Unmarshal, "yaml": func(b []byte, v any) error { return yaml.Unmarshal(b, v) }} {
		out, code := run("-o", format)
		var got map[string]string
		if err := decode([]byte(out), &got); err != nil || code != 0 || len(got) != len(want) {
			t.Errorf("version -o %s: %d %q %v", format, code, out, err)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("version -o %s: %s is %q, want %q", format, k, got[k], v)
			}
		}
	}
	if out, code := run("-o", "xml"); code == 0 || !strings.Contains(out, "xml") {
		t.Errorf("version -o xml: %d %q, want a refusal naming it", code, out)
	}
}
