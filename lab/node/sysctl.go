package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KubeletSysctls are the machine-wide sysctls kubelet sets when they differ from what it wants
// (setupKernelTunables in kubelet's container manager, 1.36), as paths under /proc/sys.
var KubeletSysctls = []string{
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
}

// procSys is where sysctls are read and written.
var procSys = "/proc/sys"

// SaveSysctls records the values of KubeletSysctls in the file at path, before the first node
// of the machine starts. When path exists already, it is left as it is: it is the record of a
// lab that died without restoring them, and the values now may be kubelet's.
func SaveSysctls(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	values, err := ReadSysctls()
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(values, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadSysctls reads the values of KubeletSysctls, by name; those that cannot be read are left
// out, and named in the error.
func ReadSysctls() (map[string]string, error) {
	values := map[string]string{}
	var errs []error
	for _, s := range KubeletSysctls {
		v, err := os.ReadFile(filepath.Join(procSys, s))
		if err != nil {
			errs = append(errs, fmt.Errorf("reading sysctl %s: %w", s, err))
			continue
		}
		values[s] = strings.TrimSpace(string(v))
	}
	return values, errors.Join(errs...)
}

// RestoreSysctls sets the sysctls SaveSysctls recorded in the file at path back, and removes
// it once all are. Without the file it does nothing. Call it after the last node stopped:
// a running kubelet sets them again.
func RestoreSysctls(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var values map[string]string
	if err := json.Unmarshal(data, &values); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var errs []error
	for s, v := range values {
		if !isKubeletSysctl(s) {
			errs = append(errs, fmt.Errorf("%s: %q is not a sysctl kubelet sets", path, s))
			continue
		}
		if err := os.WriteFile(filepath.Join(procSys, s), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring sysctl %s=%s: %w", s, v, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.Remove(path)
}

func isKubeletSysctl(s string) bool {
	for _, k := range KubeletSysctls {
		if s == k {
			return true
		}
	}
	return false
}
