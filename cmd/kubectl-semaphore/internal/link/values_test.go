package link_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/link"
)

// WriteValues builds one values file from several links: a missing file is created, an entry
// of another remote is kept, the entry of the same remote is replaced, and a file that already
// holds the entry is not rewritten. A file that is no values file is refused, untouched.
func TestWriteValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "remotes.yaml")
	entry := func(name, server string) link.Entry {
		return link.Entry{Name: name, Server: server, CAData: "Q0EK", TokenSecret: link.SecretKey{Name: link.SecretName(name), Key: link.TokenKey}}
	}
	steps := []struct {
		entry   link.Entry
		changed bool
		want    string
	}{
		{entry("aws", "https://aws:6443"), true, "global:\n  remotes:\n  - caData: Q0EK\n    name: aws\n    server: https://aws:6443\n    tokenSecret:\n      key: token\n      name: semaphore-remote-aws\n"},
		{entry("merit", "https://merit:6443"), true, "global:\n  remotes:\n  - caData: Q0EK\n    name: aws\n    server: https://aws:6443\n    tokenSecret:\n      key: token\n      name: semaphore-remote-aws\n  - caData: Q0EK\n    name: merit\n    server: https://merit:6443\n    tokenSecret:\n      key: token\n      name: semaphore-remote-merit\n"},
		{entry("aws", "https://aws-2:6443"), true, "global:\n  remotes:\n  - caData: Q0EK\n    name: aws\n    server: https://aws-2:6443\n    tokenSecret:\n      key: token\n      name: semaphore-remote-aws\n  - caData: Q0EK\n    name: merit\n    server: https://merit:6443\n    tokenSecret:\n      key: token\n      name: semaphore-remote-merit\n"},
		{entry("aws", "https://aws-2:6443"), false, ""},
	}
	for i, s := range steps {
		changed, err := link.WriteValues(path, s.entry)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if changed != s.changed {
			t.Errorf("step %d: changed %v, want %v", i, changed, s.changed)
		}
		if s.want == "" {
			continue
		}
		if data, _ := os.ReadFile(path); string(data) != s.want {
			t.Errorf("step %d: file\n%s\nwant\n%s", i, data, s.want)
		}
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	for _, content := range []string{"global: [1, 2]\n", "global:\n  remotes: {aws: 1}\n", "- a list\n"} {
		if err := os.WriteFile(bad, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := link.WriteValues(bad, entry("aws", "https://aws:6443")); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
			t.Errorf("%q: error %v, want one naming the file", content, err)
		}
		if data, _ := os.ReadFile(bad); string(data) != content {
			t.Errorf("%q: rewritten to %q", content, data)
		}
	}
}
