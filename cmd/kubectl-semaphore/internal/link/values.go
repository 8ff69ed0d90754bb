package link

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// Values is a values file of the semaphore umbrella holding global.remotes: [e].
func Values(e Entry) ([]byte, error) {
	return yaml.Marshal(map[string]any{"global": map[string]any{"remotes": []Entry{e}}})
}

// WriteValues puts e into global.remotes of the values file path: it replaces the entry of the
// same name, or adds e after the others, and keeps every other value. A missing file is
// created. The file is rewritten whole (sorted keys, no comments), and not at all when it
// already holds e.
func WriteValues(path string, e Entry) (changed bool, err error) {
	f, err := readValuesFile(path)
	if err != nil {
		return false, err
	}
	var entry map[string]any
	data, err := yaml.Marshal(e)
	if err != nil {
		return false, err
	}
	if err := yaml.Unmarshal(data, &entry); err != nil {
		return false, err
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
	out, err := yaml.Marshal(f.vals)
	if err != nil {
		return false, err
	}
	if string(out) == string(f.text) {
		return false, nil
	}
	return true, replaceFile(path, out)
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

// valuesFile is a values file as read: its values and text, and its global (added when
// missing) with the remotes in it.
type valuesFile struct {
	vals    map[string]any
	text    []byte
	global  map[string]any
	remotes []any
}

// readValuesFile reads the values file path; a missing file has no values.
func readValuesFile(path string) (*valuesFile, error) {
	f := &valuesFile{vals: map[string]any{}}
	var err error
	f.text, err = os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if err := yaml.Unmarshal(f.text, &f.vals); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if f.vals == nil {
			f.vals = map[string]any{}
		}
	}
	global, ok := f.vals["global"].(map[string]any)
	if f.vals["global"] != nil && !ok {
		return nil, fmt.Errorf("%s: global is not a map", path)
	}
	if global == nil {
		global = map[string]any{}
		f.vals["global"] = global
	}
	f.global = global
	f.remotes, ok = global["remotes"].([]any)
	if global["remotes"] != nil && !ok {
		return nil, fmt.Errorf("%s: global.remotes is not a list", path)
	}
	return f, nil
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
			return nil, fmt.Errorf("%s: the global.remotes entry %s: %w", path, name, err)
		}
		return &e, nil
	}
	return nil, nil
}
