package link

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeValues plans the consumer gcp's values for e in the values file path and writes them,
// as Run does: the port link gives the remote, and whether the file changed.
func writeValues(t *testing.T, path string, e Entry, port int) (int, bool) {
	t.Helper()
	v, err := planValues(path, "gcp", e, port)
	if err != nil {
		t.Fatal(err)
	}
	changed, err := v.write()
	if err != nil {
		t.Fatal(err)
	}
	return v.port, changed
}

func entry(name, server string) Entry {
	return Entry{Name: name, Server: server, CAData: "Q0EK", TokenSecret: SecretKey{Name: SecretName(name), Key: TokenKey}}
}

// The values file of a consumer is built from several links: a missing file is created (with
// its directory), an entry of another remote is kept, the entry of the same remote is
// replaced, and a file that already holds the values is not rewritten. Each remote gets a
// listen port, and the file the consumer's name. A file that is no values file is refused,
// untouched.
func TestWriteValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "values", "gcp.yaml")
	const (
		aws   = "  - caData: Q0EK\n    name: aws\n    server: https://aws:6443\n    tokenSecret:\n      key: token\n      name: semaphore-remote-aws\n"
		aws2  = "  - caData: Q0EK\n    name: aws\n    server: https://aws-2:6443\n    tokenSecret:\n      key: token\n      name: semaphore-remote-aws\n"
		merit = "  - caData: Q0EK\n    name: merit\n    server: https://merit:6443\n    tokenSecret:\n      key: token\n      name: semaphore-remote-merit\n"
	)
	steps := []struct {
		entry   Entry
		changed bool
		want    string
	}{
		{entry("aws", "https://aws:6443"), true, "global:\n  clusterName: gcp\n  remotes:\n" + aws + "wireguard:\n  listenPorts:\n    aws: 51821\n"},
		{entry("merit", "https://merit:6443"), true, "global:\n  clusterName: gcp\n  remotes:\n" + aws + merit + "wireguard:\n  listenPorts:\n    aws: 51821\n    merit: 51822\n"},
		{entry("aws", "https://aws-2:6443"), true, "global:\n  clusterName: gcp\n  remotes:\n" + aws2 + merit + "wireguard:\n  listenPorts:\n    aws: 51821\n    merit: 51822\n"},
		{entry("aws", "https://aws-2:6443"), false, ""},
	}
	for i, s := range steps {
		if _, changed := writeValues(t, path, s.entry, 0); changed != s.changed {
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
	for _, content := range []string{"global: [1, 2]\n", "global:\n  remotes: {aws: 1}\n", "- a list\n", "wireguard: 1\n", "wireguard:\n  listenPorts: [51821]\n"} {
		if err := os.WriteFile(bad, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := planValues(bad, "gcp", entry("aws", "https://aws:6443"), 0); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
			t.Errorf("%q: error %v, want one naming the file", content, err)
		}
		if data, _ := os.ReadFile(bad); string(data) != content {
			t.Errorf("%q: rewritten to %q", content, data)
		}
	}
}

// A remote's listen port is stable: the one the file gives it is kept, whatever other remotes
// come and go; a new remote gets the first port from 51821 that no other remote has, the
// ports of remotes link did not write included. A port asked for wins, unless another
// remote has it.
func TestListenPorts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gcp.yaml")
	if err := os.WriteFile(path, []byte("wireguard:\n  listenPorts:\n    merit: 51821\n    azure: 51823\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		remote     string
		ask, want  int
		wantChange bool
	}{
		{"aws", 0, 51822, true},         // 51821 is merit's
		{"aws", 0, 51822, false},        // kept
		{"ibm", 0, 51824, true},         // 51823 is azure's
		{"aws", 52000, 52000, true},     // asked for
		{"aws", 0, 52000, false},        // kept, not moved back to a free lower one
		{"oracle", 0, 51822, true},      // aws's old port is free again
		{"merit", 51821, 51821, true},   // its own (the entry is new, the port is not)
		{"merit", 51821, 51821, false},  // nothing left to change
		{"ibm", 51824, 51824, false},    // its own, asked for
		{"azure", 51823, 51823, true},   // likewise
		{"azure", 0, 51823, false},      // kept
		{"oracle", 51822, 51822, false}, // its own
	} {
		port, changed := writeValues(t, path, entry(s.remote, "https://"+s.remote), s.ask)
		if port != s.want || changed != s.wantChange {
			t.Errorf("%s (asking %d): port %d, changed %v; want %d, %v", s.remote, s.ask, port, changed, s.want, s.wantChange)
		}
	}
	before, _ := os.ReadFile(path)
	if _, err := planValues(path, "gcp", entry("aws", "https://aws"), 51821); err == nil || !strings.Contains(err.Error(), "gives port 51821 to remote merit") {
		t.Errorf("another remote's port: error %v, want one naming the remote that has it", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("a refused port rewrote the file:\n%s", after)
	}
}

// A values file is one consumer's: link writes the consumer's name into a file without one,
// and refuses, writing nothing, a file of another cluster, whose release would read the remote
// with this consumer's token.
func TestValuesOfAnotherClusterAreRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aws.yaml")
	content := "global:\n  clusterName: aws\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := planValues(path, "gcp", entry("merit", "https://merit"), 0); err == nil || !strings.Contains(err.Error(), "values of cluster aws (global.clusterName), not of the consumer gcp") {
		t.Errorf("error %v, want one naming both clusters", err)
	}
	if data, _ := os.ReadFile(path); string(data) != content {
		t.Errorf("rewritten to %q", data)
	}
}

// Without a values file, the values to print are the same, for the consumer alone: its name,
// the entry and the first port.
func TestPrintedValues(t *testing.T) {
	v, err := planValues("", "gcp", entry("aws", "https://aws:6443"), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "global:\n  clusterName: gcp\n  remotes:\n  - caData: Q0EK\n    name: aws\n    server: https://aws:6443\n    tokenSecret:\n      key: token\n      name: semaphore-remote-aws\nwireguard:\n  listenPorts:\n    aws: 51821\n"
	if string(v.out) != want {
		t.Errorf("values\n%s\nwant\n%s", v.out, want)
	}
}
