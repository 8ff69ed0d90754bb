package conformance

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The suite runs against the run's contexts with Semaphore named in its report, ginkgo's
// label filter when there is one, and the caller's flags last (so that they win).
func TestTheSuitesFlags(t *testing.T) {
	r := Run{
		Kubeconfig: "/lab/kubeconfig", Contexts: []string{"aws", "gcp"}, LabelFilter: "Required",
		Version: "v1.2.3", Args: []string{"-ginkgo.focus=DNS"},
	}
	args := r.args()
	for _, want := range []string{
		"-kubeconfig=/lab/kubeconfig", "-contexts=aws,gcp", "-organization=kube-semaphore",
		"-project=Semaphore", "-version=v1.2.3", "-url=https://github.com/kube-semaphore/semaphore",
		"-ginkgo.label-filter=Required", "-ginkgo.timeout=1h0m0s", "-test.timeout=0",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("%s missing from %q", want, args)
		}
	}
	if args[len(args)-1] != "-ginkgo.focus=DNS" {
		t.Errorf("the caller's flags are not last: %q", args)
	}
	r.LabelFilter = ""
	for _, a := range r.args() {
		if a == "-ginkgo.label-filter=" {
			t.Errorf("an empty label filter is passed: %q", r.args())
		}
	}
}

// ReadReport reads the report.yaml the suite writes (field names lower-cased by yaml.v3).
func TestReadReport(t *testing.T) {
	dir := t.TempDir()
	report := `groups:
    - name: Required
      tests:
        - desc: Connectivity to a service that is not exported should be inaccessible
          passed: true
          conformant: true
          message: ""
    - name: Optional
      tests:
        - desc: A DNS query
          failed: true
          conformant: true
          message: ' - Timed out'
suitefailure: ""
dnsdomain: clusterset.local
passed: 1
total: 2
`
	if err := os.WriteFile(filepath.Join(dir, "report.yaml"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Passed != 1 || r.Total != 2 || len(r.Groups) != 2 || !r.Groups[0].Tests[0].Passed ||
		!r.Groups[1].Tests[0].Failed || r.Groups[1].Tests[0].Message != " - Timed out" {
		t.Errorf("report: %+v", r)
	}
}
