package device

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// keySuffix ends the name of every key file: <dir>/<device>.key.
const keySuffix = ".key"

// KeyFile is the file in dir holding the private key of device name.
func KeyFile(dir, name string) string { return filepath.Join(dir, name+keySuffix) }

// KeyNames are, sorted, the devices whose name starts with prefix that have a key file in dir.
func KeyNames(dir, prefix string) ([]string, error) {
	files, err := filepath.Glob(KeyFile(dir, prefix+"*"))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(filepath.Base(f), keySuffix)
	}
	return names, nil
}

// keyFileMode is the only access a private key file may grant: owner read/write.
const keyFileMode = 0o600

// LoadOrCreateKey returns the private key kept in <dir>/<name>.key, creating the file
// (mode 0600, base64 like `wg genkey` writes it) and dir (mode 0700) on first use.
// created reports whether a new key was generated.
//
// An existing file is never regenerated: its public key is published in node
// annotations, so a file that grants group or other access, or does not hold a valid
// key, is an error naming the file for an operator to fix.
func LoadOrCreateKey(dir, name string) (key wgtypes.Key, created bool, err error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, os.PathSeparator) {
		return wgtypes.Key{}, false, fmt.Errorf("invalid key name %q", name)
	}
	path := KeyFile(dir, name)

	key, err = readKey(path)
	if err == nil {
		return key, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return wgtypes.Key{}, false, err
	}

	if err := os.MkdirAll(dir, 0o700); err != nil {
		return wgtypes.Key{}, false, fmt.Errorf("create key directory %s: %w", dir, err)
	}
	key, err = wgtypes.GeneratePrivateKey()
	if err != nil {
		return wgtypes.Key{}, false, fmt.Errorf("generate key for %s: %w", path, err)
	}
	if err := writeKeyOnce(path, key); err != nil {
		if errors.Is(err, os.ErrExist) {
			// Someone else created it between our read and our write: theirs wins.
			key, err = readKey(path)
			return key, false, err
		}
		return wgtypes.Key{}, false, err
	}
	return key, true, nil
}

// ImportKey makes <dir>/<to>.key hold the key of <dir>/<from>.key, unless it exists already or
// there is no such key to import; imported reports whether it did. The source is checked as
// strictly as our own key files and left in place.
func ImportKey(dir, from, to string) (imported bool, err error) {
	if _, err := os.Stat(KeyFile(dir, to)); !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	key, err := readKey(KeyFile(dir, from))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := writeKeyOnce(KeyFile(dir, to), key); err != nil {
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// readKey reads and checks a key file; a missing file is an os.ErrNotExist error.
func readKey(path string) (wgtypes.Key, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return wgtypes.Key{}, err
		}
		return wgtypes.Key{}, fmt.Errorf("key file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return wgtypes.Key{}, fmt.Errorf("key file %s: not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&^keyFileMode != 0 {
		return wgtypes.Key{}, fmt.Errorf("key file %s: mode %04o grants more than owner read/write; fix it with chmod 600 (the key is not regenerated: its public key is published)", path, perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return wgtypes.Key{}, fmt.Errorf("key file %s: %w", path, err)
	}
	key, err := wgtypes.ParseKey(strings.TrimSpace(string(b)))
	if err != nil {
		// Do not wrap err: it could echo key material into logs.
		return wgtypes.Key{}, fmt.Errorf("key file %s: does not hold a base64 WireGuard private key", path)
	}
	return key, nil
}

// writeKeyOnce writes key to path atomically and without replacing an existing file: a
// temporary file is written and synced, then hard-linked into place (the link fails with
// os.ErrExist if path appeared meanwhile). A crash leaves either no file or a whole one.
func writeKeyOnce(path string, key wgtypes.Key) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*") // created 0600
	if err != nil {
		return fmt.Errorf("create key file %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(keyFileMode); err != nil {
		tmp.Close()
		return fmt.Errorf("create key file %s: %w", path, err)
	}
	if _, err := tmp.WriteString(key.String() + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("write key file %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write key file %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write key file %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return err
		}
		return fmt.Errorf("create key file %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the new name durable; best effort
		d.Close()
	}
	return nil
}
