package link

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// removeFrom takes remote aws out of the values file path of consumer gcp and writes it, as
// Unlink does: what the file had, and whether it was written.
func removeFrom(t *testing.T, path string) (*valuesRemoval, bool) {
	t.Helper()
	r, err := planRemoval(path, "gcp", "aws")
	if err != nil {
		t.Fatal(err)
	}
	changed, err := r.write()
	if err != nil {
		t.Fatal(err)
	}
	return r, changed
}

// Taking a remote out of a values file removes its global.remotes entry and its
// wireguard.listenPorts port, each with the comments on it, and keeps every other value and
// comment, in its order; a file without them, or none, is not written.
func TestRemoveRemoteKeepsTheRestAndItsComments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gcp.yaml")
	// The file without aws is the file less the parts of aws.
	const (
		head      = "# gcp's values: kept\nglobal:\n  clusterName: gcp # kept\n  remotes:\n"
		awsEntry  = "    # aws: removed with it\n    - name: aws\n      server: https://aws:6443\n      tokenSecret: {name: semaphore-remote-aws, key: token}\n"
		merit     = "    # merit: kept\n    - name: merit\n      server: \"https://merit:6443\"\n      tokenSecret: {name: semaphore-remote-merit, key: token}\nwireguard:\n  listenPorts:\n"
		awsPort   = "    aws: 51821 # removed with it\n"
		meritPort = "    merit: 51822 # kept\n  keepalive: 5s\nzebra: last\n"
		before    = head + awsEntry + merit + awsPort + meritPort
		after     = head + merit + meritPort
	)
	if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	r, changed := removeFrom(t, path)
	if !changed || r.entry == nil || r.entry.Server != "https://aws:6443" || !r.hadPort || r.port != 51821 {
		t.Errorf("removed entry %+v and port %d (%v), written %v; want aws's", r.entry, r.port, r.hadPort, changed)
	}
	if got, _ := os.ReadFile(path); string(got) != after {
		t.Errorf("values file:\n%s\nwant:\n%s", got, after)
	}

	r, changed = removeFrom(t, path)
	if changed || r.entry != nil || r.hadPort {
		t.Errorf("again: removed %+v, port %v, written %v; want nothing to remove", r.entry, r.hadPort, changed)
	}
	missing := filepath.Join(t.TempDir(), "none.yaml")
	if r, changed := removeFrom(t, missing); changed || r.entry != nil || r.hadPort {
		t.Errorf("a missing file: removed %+v, port %v, written %v", r.entry, r.hadPort, changed)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a missing values file was created")
	}
}

// The last remote taken out leaves empty lists; a port without an entry, or an entry without a
// port, is taken out alone.
func TestRemoveRemoteAlone(t *testing.T) {
	for before, after := range map[string]string{
		"global:\n  remotes:\n    - {name: aws, server: x}\nwireguard:\n  listenPorts: {aws: 51821}\n": "global:\n  remotes: []\nwireguard:\n  listenPorts: {}\n",
		"wireguard:\n  listenPorts:\n    aws: 51821\n    merit: 51822\n":                               "wireguard:\n  listenPorts:\n    merit: 51822\n",
		"global:\n  remotes:\n  - name: aws\n    server: x\n":                                          "global:\n  remotes: []\n",
	} {
		path := filepath.Join(t.TempDir(), "gcp.yaml")
		if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, changed := removeFrom(t, path); !changed {
			t.Errorf("%q: not written", before)
		}
		if got, _ := os.ReadFile(path); string(got) != after {
			t.Errorf("%q became %q, want %q", before, got, after)
		}
	}
}

// A file of another cluster, one that is no values file, and one whose edit would change other
// values (an alias of the entry, a key given twice) are refused.
func TestRemoveRemoteRefuses(t *testing.T) {
	for text, want := range map[string]string{
		"global:\n  clusterName: merit\n  remotes: [{name: aws}]\n":                        "holds the values of cluster merit (global.clusterName), not of the consumer gcp",
		"global:\n  remotes: {name: aws}\n":                                                "global.remotes is not a list",
		"global:\n  remotes:\n    - &aws {name: aws, server: x}\nbackup: *aws\n":           "taking out remote aws: ", // its alias would be left without its anchor
		"global:\n  remotes: [{name: aws}]\n---\nglobal:\n  remotes: [{name: merit}]\n":    "several YAML documents",
		"global:\n  remotes: [{name: aws}]\nwireguard:\n  listenPorts: {aws: 1, aws: 2}\n": "would change other values",
	} {
		path := filepath.Join(t.TempDir(), "gcp.yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := planRemoval(path, "gcp", "aws")
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: %v, want an error naming the file and saying %q", text, err, want)
		}
	}
}
