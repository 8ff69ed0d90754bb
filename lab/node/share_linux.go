//go:build linux

package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// sharePrefix starts the name of a CPU share's cgroup: apart from the nodes' (cgroupPrefix),
// so that no node code takes a share for a node.
const sharePrefix = "semaphore-share-"

// Share holds processes of the lab to one share of the machine's processors: a cgroup of the
// v1 cpu controller whose cpu.shares weigh all its processes together as one, against each
// node (a cgroup of the same weight) and each process outside, and of the cpuacct controller,
// which counts the time they use. Nothing is capped while the processors have time to spare;
// under contention the share gets its weight's part and no more, however many threads it
// runs. That is how the lab stands for a cluster on machines of its own: what it does on the
// one machine the lab has does not take the others' processors.
type Share struct {
	// dirs are the share's cgroups, one in each hierarchy of the cpu and cpuacct controllers
	// (mounted together or apart); usage is cpuacct.usage in the one that counts.
	dirs  []string
	usage string
}

// NewShare makes the share name with weight shares (cpu.shares: 1024 is a process's or a
// node's).
func NewShare(name string, shares int) (*Share, error) {
	if name == "" || strings.ContainsAny(name, "/") {
		return nil, fmt.Errorf("share name %q", name)
	}
	hs, err := cgroupHierarchies()
	if err != nil {
		return nil, err
	}
	s := &Share{}
	weighed := false
	for _, h := range v1(hs) {
		if !h.has("cpu") && !h.has("cpuacct") {
			continue
		}
		dir := filepath.Join(h.mount, sharePrefix+name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, errors.Join(err, s.Close())
		}
		s.dirs = append(s.dirs, dir)
		if h.has("cpuacct") {
			s.usage = filepath.Join(dir, "cpuacct.usage")
		}
		if h.has("cpu") {
			weighed = true
			if err := os.WriteFile(filepath.Join(dir, "cpu.shares"), []byte(strconv.Itoa(shares)), 0o644); err != nil {
				return nil, errors.Join(fmt.Errorf("setting %s's cpu.shares: %w", dir, err), s.Close())
			}
		}
	}
	if !weighed {
		return nil, errors.Join(errors.New("no cgroup v1 hierarchy with the cpu controller is mounted"), s.Close())
	}
	return s, nil
}

// Add moves process pid, every thread of it, into the share; its children start there.
func (s *Share) Add(pid int) error {
	for _, dir := range s.dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("moving process %d into %s: %w", pid, dir, err)
		}
	}
	return nil
}

// Usage is the processor time the share's processes have used while in it (0 where no
// cpuacct controller is mounted).
func (s *Share) Usage() time.Duration {
	data, err := os.ReadFile(s.usage)
	if err != nil {
		return 0
	}
	ns, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return time.Duration(ns)
}

// Close moves the share's processes back to the root of each hierarchy and removes the share.
func (s *Share) Close() error {
	var errs []error
	for _, dir := range s.dirs {
		errs = append(errs, closeShare(dir))
	}
	return errors.Join(errs...)
}

func closeShare(dir string) error {
	root := filepath.Join(filepath.Dir(dir), "cgroup.procs")
	var errs []error
	for _, pid := range cgroupProcs(dir) {
		// A process that exited meanwhile has nothing to move.
		if err := os.WriteFile(root, []byte(strconv.Itoa(pid)), 0o644); err != nil && procState(pid) != "" {
			errs = append(errs, fmt.Errorf("moving process %d out of %s: %w", pid, dir, err))
		}
	}
	return errors.Join(append(errs, removeCgroup(dir, 5*time.Second))...)
}

// RemoveShares removes every share on this machine, moving its processes out first: what a
// lab that died left.
func RemoveShares() error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range shareDirs(hs) {
		errs = append(errs, closeShare(d))
	}
	return errors.Join(errs...)
}

// ShareCgroups lists the shares' cgroups on this machine.
func ShareCgroups() []string {
	hs, _ := cgroupHierarchies()
	return shareDirs(hs)
}

func shareDirs(hs []hierarchy) []string {
	var dirs []string
	for _, h := range v1(hs) {
		found, _ := filepath.Glob(filepath.Join(h.mount, sharePrefix+"*"))
		dirs = append(dirs, found...)
	}
	return dirs
}
