//go:build linux

package node

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// mountpointXattr marks a directory Start created on this machine as a mount point (see the
// package documentation), so that it is removed again, and only it.
const mountpointXattr = "trusted.semaphore-lab.mountpoint"

// makeMountpoints creates the directories of targets that do not exist, each missing parent
// too, and marks every directory it creates.
func makeMountpoints(targets []string) error {
	for _, t := range targets {
		dir := "/"
		for _, part := range strings.Split(strings.Trim(t, "/"), "/") {
			dir = filepath.Join(dir, part)
			err := os.Mkdir(dir, 0o755)
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			if err != nil {
				return err
			}
			if err := unix.Setxattr(dir, mountpointXattr, []byte("1"), 0); err != nil {
				// Unmarked, it is never removed: the file system takes no extended attributes.
				_ = os.Remove(dir)
				return &fs.PathError{Op: "setxattr " + mountpointXattr, Path: dir, Err: err}
			}
		}
	}
	return nil
}

// removeMountpoints removes the directories makeMountpoints created for targets, those still
// empty, deepest first. Only when no node runs on this machine: a directory that is a mount
// point in another mount namespace can be removed, which unmounts it there.
func removeMountpoints(targets []string) {
	var dirs []string
	for _, t := range targets {
		for dir := filepath.Clean(t); dir != "/" && dir != "."; dir = filepath.Dir(dir) {
			dirs = append(dirs, dir)
		}
	}
	slices.SortFunc(dirs, func(a, b string) int {
		if d := strings.Count(b, "/") - strings.Count(a, "/"); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	for _, dir := range slices.Compact(dirs) {
		if _, err := unix.Getxattr(dir, mountpointXattr, nil); err != nil {
			continue
		}
		_ = unix.Rmdir(dir) // fails, as it should, when something was put there since
	}
}
