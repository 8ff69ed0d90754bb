//go:build linux

package node

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// hierarchy is one mounted cgroup hierarchy.
type hierarchy struct {
	mount string
	// opts are the mount's super options, which name a v1 hierarchy's controllers.
	opts []string
	v2   bool
}

func (h hierarchy) has(controller string) bool { return slices.Contains(h.opts, controller) }

// dir is node name's cgroup in h.
func (h hierarchy) dir(name string) string { return filepath.Join(h.mount, cgroupPrefix+name) }

// cgroupHierarchies lists the cgroup hierarchies mounted in this mount namespace, each once.
func cgroupHierarchies() ([]hierarchy, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []hierarchy
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - cgroup cgroup rw,cpu
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, postFields := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(postFields) < 3 {
			continue
		}
		fstype := postFields[0]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		opts := strings.Split(postFields[2], ",")
		key := fstype + " " + strings.Join(controllers(opts), ",")
		if seen[key] {
			continue // the same hierarchy mounted twice
		}
		seen[key] = true
		out = append(out, hierarchy{mount: unescapeMountinfo(fields[4]), opts: opts, v2: fstype == "cgroup2"})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b hierarchy) int { return strings.Compare(a.mount, b.mount) })
	return out, nil
}

// controllers are the options of a cgroup v1 mount that name what it is.
func controllers(opts []string) []string {
	var out []string
	for _, o := range opts {
		switch {
		case o == "rw" || o == "ro" || o == "relatime" || o == "noatime" || o == "nosuid" || o == "nodev" || o == "noexec":
		case strings.HasPrefix(o, "release_agent=") || o == "clone_children" || o == "xattr" || o == "nsdelegate" || o == "noprefix":
		default:
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return out
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// v1 are the cgroup v1 hierarchies of hs.
func v1(hs []hierarchy) []hierarchy {
	return slices.DeleteFunc(slices.Clone(hs), func(h hierarchy) bool { return h.v2 })
}

// daemonsCgroup is the child of a node's cgroup that holds containerd (and its shims),
// kubelet and kube-proxy; kubelet puts the pods in "kubepods" next to it.
const daemonsCgroup = "daemons"

// createCgroups creates node name's cgroup and its daemons cgroup in every v1 hierarchy and
// returns the cgroup.procs files of the latter.
func createCgroups(hs []hierarchy, name string) ([]string, error) {
	var procs []string
	for _, h := range v1(hs) {
		root := h.dir(name)
		for _, dir := range []string{root, filepath.Join(root, daemonsCgroup)} {
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, err
			}
			if h.has("cpuset") {
				// A new cpuset has no CPUs and no memory nodes, and takes no process.
				for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
					v, err := os.ReadFile(filepath.Join(filepath.Dir(dir), file))
					if err != nil {
						return nil, err
					}
					if err := os.WriteFile(filepath.Join(dir, file), v, 0o644); err != nil {
						return nil, fmt.Errorf("%s: %w", filepath.Join(dir, file), err)
					}
				}
			}
		}
		procs = append(procs, filepath.Join(root, daemonsCgroup, "cgroup.procs"))
	}
	if len(procs) == 0 {
		return nil, errors.New("no cgroup v1 hierarchy is mounted: the lab's nodes need cgroup v1 (cgroup v2 is not supported yet)")
	}
	return procs, nil
}

// cgroupProcs lists the processes in dir and every cgroup below it.
func cgroupProcs(dir string) []int {
	var pids []int
	// A cgroup that goes away meanwhile has no processes: errors are skipped.
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, walkErr error) error {
		if walkErr != nil || !d.IsDir() {
			return nil //nolint:nilerr // see above
		}
		data, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// nodeProcs lists every process in node name's cgroups.
func nodeProcs(hs []hierarchy, name string) []int {
	var pids []int
	for _, h := range hs {
		pids = append(pids, cgroupProcs(h.dir(name))...)
	}
	slices.Sort(pids)
	return slices.Compact(pids)
}

// setFreezer writes state (FROZEN or THAWED) to dir's v1 freezer and, when freezing, waits a
// moment for it to take.
func setFreezer(dir, state string) {
	file := filepath.Join(dir, "freezer.state")
	if err := os.WriteFile(file, []byte(state), 0o644); err != nil || state != "FROZEN" {
		return
	}
	for range 100 {
		if v, err := os.ReadFile(file); err != nil || strings.TrimSpace(string(v)) == "FROZEN" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killCgroups kills every process in node name's cgroups and removes them. The freezer keeps
// the processes from forking or exiting while they are listed and killed.
func killCgroups(hs []hierarchy, name string, timeout time.Duration) error {
	var freezer string
	for _, h := range hs {
		if !h.v2 && h.has("freezer") {
			if _, err := os.Stat(h.dir(name)); err == nil {
				freezer = h.dir(name)
			}
		}
	}
	deadline := time.Now().Add(timeout)
	var killed []int
	for {
		if freezer != "" {
			setFreezer(freezer, "FROZEN")
		}
		pids := nodeProcs(hs, name)
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		killed = append(killed, pids...)
		if freezer != "" {
			// Killed tasks die once thawed.
			setFreezer(freezer, "THAWED")
		}
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s: processes %v still run after SIGKILL", name, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var errs []error
	for _, h := range hs {
		errs = append(errs, removeCgroup(h.dir(name), time.Until(deadline)))
	}
	slices.Sort(killed)
	errs = append(errs, waitExited(slices.Compact(killed), deadline))
	return errors.Join(errs...)
}

// waitExited waits until every process of pids has exited: it is gone or a zombie. A process
// leaves its cgroups before it has finished exiting (the kernel's do_exit calls cgroup_exit
// before exit_notify), so an empty cgroup does not mean its processes are done.
func waitExited(pids []int, deadline time.Time) error {
	for _, pid := range pids {
		for {
			state := procState(pid)
			if state == "" || state == "Z" || state == "X" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("process %d (state %s) has not exited after SIGKILL", pid, state)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// removeCgroup removes the cgroup dir and everything below it, bottom-up; an exiting process
// can keep a cgroup busy for a moment.
func removeCgroup(dir string, timeout time.Duration) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	deadline := time.Now().Add(max(timeout, time.Second))
	for _, d := range slices.Backward(dirs) { // WalkDir lists parents before children
		for {
			err := unix.Rmdir(d)
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				return fmt.Errorf("removing cgroup %s: %w", d, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// nodeCgroups lists the names of the nodes that have cgroups on this machine.
func nodeCgroups(hs []hierarchy) []string {
	var names []string
	for _, h := range hs {
		entries, _ := os.ReadDir(h.mount)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), cgroupPrefix) {
				names = append(names, strings.TrimPrefix(e.Name(), cgroupPrefix))
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// lockMachine takes the machine-wide lock of the lab's nodes (an flock on the directory of the
// first cgroup hierarchy, which every node on this machine shares), held while a node's mount
// points are made and used for the first time, or removed.
func lockMachine(hs []hierarchy) (unlock func(), err error) {
	if len(hs) == 0 {
		return nil, errors.New("no cgroup hierarchy is mounted")
	}
	f, err := os.Open(hs[0].mount)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", hs[0].mount, err)
	}
	return func() { f.Close() }, nil
}
