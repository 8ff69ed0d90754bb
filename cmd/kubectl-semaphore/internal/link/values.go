package link

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// The values a link gives the consumer's umbrella release are everything the release needs to
// read the remote and reach its nodes: global.clusterName (the consumer's own name),
// global.remotes' entry of the remote, and wireguard.listenPorts' port of the remote, without
// which the chart does not render while semaphore-wireguard is enabled (the default).

// FirstListenPort is the first UDP port link gives a remote's WireGuard device when the values
// file has none for it: the next after Calico's WireGuard port (51820).
const FirstListenPort = 51821

// lastPort is the largest UDP port.
const lastPort = math.MaxUint16

// consumerValues are the values of the consumer's umbrella release that link sets for one
// remote.
type consumerValues struct {
	// path is the values file; "" for values that are only printed.
	path string
	f    *valuesFile
	// out is the file as link writes it; port the remote's listen port in it.
	out  []byte
	port int
}

// planValues puts the consumer's name (global.clusterName), the remote's entry e
// (global.remotes) and its listen port (wireguard.listenPorts) into the values file path, in
// memory: the file is written by write. The entry replaces the one of the same name, or comes
// after the others; every other value is kept. port is the listen port to give the remote, or
// 0 for the one the file already gives it, else the first from FirstListenPort that no other
// remote in the file has. A missing file has no values; path "" is none.
func planValues(path, consumer string, e Entry, port int) (*consumerValues, error) {
	f, err := readValuesFile(path)
	if err != nil {
		return nil, err
	}
	v := &consumerValues{path: path, f: f}
	if err := v.setClusterName(consumer); err != nil {
		return nil, err
	}
	if err := f.setRemote(e); err != nil {
		return nil, err
	}
	if v.port, err = v.setListenPort(e.Name, port); err != nil {
		return nil, err
	}
	if v.out, err = yaml.Marshal(f.vals); err != nil {
		return nil, err
	}
	return v, nil
}

// changed reports whether the file differs from what link writes.
func (v *consumerValues) changed() bool { return string(v.out) != string(v.f.text) }

// write writes the values file (and its directory) when it changed: rewritten whole (sorted
// keys, no comments), at once.
func (v *consumerValues) write() (changed bool, err error) {
	if !v.changed() {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(v.path), 0o755); err != nil {
		return false, err
	}
	return true, replaceFile(v.path, v.out)
}

// setClusterName makes global.clusterName consumer. A file for another cluster is refused:
// its release would read the remote under the other cluster's token.
func (v *consumerValues) setClusterName(consumer string) error {
	set, err := v.f.isOf(consumer)
	if err == nil && !set {
		v.f.global["clusterName"] = consumer
	}
	return err
}

// isOf reports whether the file names its cluster (global.clusterName), and refuses it when
// that is another than consumer: it holds the values of another cluster's release.
func (f *valuesFile) isOf(consumer string) (bool, error) {
	switch name, set := f.global["clusterName"]; {
	case !set || name == nil || name == "":
		return false, nil
	case name != consumer:
		return true, fmt.Errorf("%s holds the values of cluster %v (global.clusterName), not of the consumer %s: give the consumer's own values file", f.path, name, consumer)
	}
	return true, nil
}

// setRemote puts e into global.remotes: it replaces the entry of the same name, or comes after
// the others.
func (f *valuesFile) setRemote(e Entry) error {
	var entry map[string]any
	data, err := yaml.Marshal(e)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(data, &entry); err != nil {
		return err
	}
	replaced := false
	for i, r := range f.remotes {
		if _, ok := named(r, e.Name); ok {
			f.remotes[i], replaced = entry, true
		}
	}
	if !replaced {
		f.remotes = append(f.remotes, entry)
	}
	f.global["remotes"] = f.remotes
	return nil
}

// setListenPort gives remote a port in wireguard.listenPorts and returns it: want, else the
// port the file gives remote, else the first from FirstListenPort that no remote has. Each
// remote's device needs a port of its own, so want may not be another remote's.
func (v *consumerValues) setListenPort(remote string, want int) (int, error) {
	ports, err := mapAt(v.f.vals, v.path, "wireguard", "listenPorts")
	if err != nil {
		return 0, err
	}
	taken := map[int]string{}
	for name, p := range ports {
		if n, ok := portOf(p); ok && name != remote {
			taken[n] = name
		}
	}
	own, hasOwn := portOf(ports[remote])
	switch {
	case want != 0:
		if other, ok := taken[want]; ok {
			return 0, fmt.Errorf("%s gives port %d to remote %s (wireguard.listenPorts), and each remote's WireGuard device needs a port of its own: choose another port for %s", v.path, want, other, remote)
		}
	case hasOwn:
		want = own
	default:
		for want = FirstListenPort; isTaken(taken, want); want++ {
			if want == lastPort {
				return 0, fmt.Errorf("%s: no free UDP port from %d for remote %s (wireguard.listenPorts)", v.path, FirstListenPort, remote)
			}
		}
	}
	ports[remote] = want
	return want, nil
}

func isTaken(taken map[int]string, port int) bool {
	_, ok := taken[port]
	return ok
}

// portOf is value as a port number, when it is one (a YAML number is read as a float64).
func portOf(value any) (int, bool) {
	switch n := value.(type) {
	case float64:
		return int(n), n == math.Trunc(n) && n > 0 && n <= lastPort
	case int:
		return n, n > 0 && n <= lastPort
	case int64:
		return int(n), n > 0 && n <= lastPort
	}
	return 0, false
}

// replaceFile replaces the file path with data, at once: a reader sees the old file or the new
// one, never part of it.
func replaceFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// valuesFile is a values file as read: its path, values and text, and its global (added when
// missing) with the remotes in it.
type valuesFile struct {
	path    string
	vals    map[string]any
	text    []byte
	global  map[string]any
	remotes []any
}

// readValuesFile reads the values file path; a missing file, or path "", has no values.
func readValuesFile(path string) (*valuesFile, error) {
	var text []byte
	var err error
	if path != "" {
		text, err = os.ReadFile(path)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return parseValues(path, text)
}

// parseValues reads text, the values file path ("" for none).
func parseValues(path string, text []byte) (*valuesFile, error) {
	f := &valuesFile{path: path, vals: map[string]any{}, text: text}
	if err := yaml.Unmarshal(text, &f.vals); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.vals == nil {
		f.vals = map[string]any{}
	}
	var err error
	if f.global, err = mapAt(f.vals, path, "global"); err != nil {
		return nil, err
	}
	var ok bool
	f.remotes, ok = f.global["remotes"].([]any)
	if f.global["remotes"] != nil && !ok {
		return nil, fmt.Errorf("%s: global.remotes is not a list", path)
	}
	return f, nil
}

// mapAt is the map under keys (nested) of m, each added when missing; a value that is not a
// map is refused, naming the file path.
func mapAt(m map[string]any, path string, keys ...string) (map[string]any, error) {
	for i, key := range keys {
		child, ok := m[key].(map[string]any)
		switch {
		case m[key] == nil:
			child = map[string]any{}
			m[key] = child
		case !ok:
			return nil, fmt.Errorf("%s: %s is not a map", path, strings.Join(keys[:i+1], "."))
		}
		m = child
	}
	return m, nil
}

// named is remote r of global.remotes when it is an entry named name.
func named(r any, name string) (map[string]any, bool) {
	m, ok := r.(map[string]any)
	return m, ok && m["name"] == name
}

// EntryIn is the global.remotes entry named name in the values file path, nil when the file or
// the entry does not exist.
func EntryIn(path, name string) (*Entry, error) {
	f, err := readValuesFile(path)
	if err != nil {
		return nil, err
	}
	return f.entry(name)
}

// entry is the global.remotes entry named name, nil when there is none.
func (f *valuesFile) entry(name string) (*Entry, error) {
	for _, r := range f.remotes {
		m, ok := named(r, name)
		if !ok {
			continue
		}
		data, err := yaml.Marshal(m)
		if err != nil {
			return nil, err
		}
		var e Entry
		if err := yaml.Unmarshal(data, &e); err != nil {
			return nil, fmt.Errorf("%s: the global.remotes entry %s: %w", f.path, name, err)
		}
		return &e, nil
	}
	return nil, nil
}
