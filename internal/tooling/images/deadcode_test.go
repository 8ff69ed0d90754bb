package images_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
)

// No component binary calls a method by reflection (text/template's field evaluation,
// reflect.Value.MethodByName): one such call makes the linker keep every exported method of
// every type that reaches an interface, client-go's informers and clients for every API group
// among them, and the binary grows from about 30 MB to 50 MB, 10 MiB more resident in every
// process. The linker's dependency dump marks such calls <ReflectMethod>.
func TestBinariesCallNoMethodByReflection(t *testing.T) {
	for _, spec := range images.Components() {
		t.Run(spec.Name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), "go", "build", "-ldflags=-dumpdep", "-o", "/dev/null", spec.Package)
			cmd.Dir = testbed.RepoRoot()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go build -ldflags=-dumpdep %s: %v\n%.2000s", spec.Package, err, out)
			}
			var calls []string
			for line := range strings.Lines(string(out)) {
				if strings.Contains(line, "<ReflectMethod>") && len(calls) < 10 {
					calls = append(calls, strings.TrimSpace(line))
				}
			}
			if len(calls) > 0 {
				t.Errorf("%s calls methods by reflection, which keeps every exported method in the binary:\n%s",
					spec.Package, strings.Join(calls, "\n"))
			}
		})
	}
}
