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
	vals, old, err := readValues(path)
	if err != nil {
		return false, err
	}
	global, remotes, err := remotesOf(path, vals)
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
	for i, r := range remotes {
		if m, ok := r.(map[string]any); ok && m["name"] == e.Name {
			remotes[i], replaced = entry, true
		}
	}
	if !replaced {
		remotes = append(remotes, entry)
	}
	global["remotes"] = remotes
	out, err := yaml.Marshal(vals)
	if err != nil {
		return false, err
	}
	if string(out) == string(old) {
		return false, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	return true, os.Rename(tmp.Name(), path)
}

// readValues reads the values file path (empty values when it is missing) and returns its
// text too.
func readValues(path string) (map[string]any, []byte, error) {
	vals := map[string]any{}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, err
	default:
		if err := yaml.Unmarshal(old, &vals); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if vals == nil {
			vals = map[string]any{}
		}
	}
	return vals, old, nil
}

// remotesOf returns global of vals (added when missing) and its remotes.
func remotesOf(path string, vals map[string]any) (global map[string]any, remotes []any, err error) {
	global, ok := vals["global"].(map[string]any)
	if vals["global"] != nil && !ok {
		return nil, nil, fmt.Errorf("%s: global is not a map", path)
	}
	if global == nil {
		global = map[string]any{}
		vals["global"] = global
	}
	remotes, ok = global["remotes"].([]any)
	if global["remotes"] != nil && !ok {
		return nil, nil, fmt.Errorf("%s: global.remotes is not a list", path)
	}
	return global, remotes, nil
}

// EntryIn is the global.remotes entry named name in the values file path, nil when the file or
// the entry does not exist.
func EntryIn(path, name string) (*Entry, error) {
	vals, _, err := readValues(path)
	if err != nil {
		return nil, err
	}
	_, remotes, err := remotesOf(path, vals)
	if err != nil {
		return nil, err
	}
	for _, r := range remotes {
		if m, ok := r.(map[string]any); ok && m["name"] == name {
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
	}
	return nil, nil
}
