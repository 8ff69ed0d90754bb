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
	vals := map[string]any{}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return false, err
	default:
		if err := yaml.Unmarshal(old, &vals); err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		if vals == nil {
			vals = map[string]any{}
		}
	}
	global, ok := vals["global"].(map[string]any)
	if vals["global"] != nil && !ok {
		return false, fmt.Errorf("%s: global is not a map", path)
	}
	if global == nil {
		global = map[string]any{}
		vals["global"] = global
	}
	remotes, ok := global["remotes"].([]any)
	if global["remotes"] != nil && !ok {
		return false, fmt.Errorf("%s: global.remotes is not a list", path)
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
