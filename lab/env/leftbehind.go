package env

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/netnstopo"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/node"
)

// Machine is what the lab must leave of this machine as it found it, in the network and mount
// namespaces the lab itself runs in: lists of what is there, to which the lab must add
// nothing, and the sysctls kubelet changes, which must have their values back.
type Machine struct {
	views   []view
	sysctls map[string]string
}

// view is one list of what is on the machine (its items), or why it could not be read.
type view struct {
	what  string // what one item is: "link", "mount"
	items []string
	err   error
}

// machineViews are the lists MachineNow reads. Each reads only the calling process's
// namespaces, the ones Felix, calico-node and the nodes' daemons must leave alone: they run in
// the nodes' namespaces. A tool that is not installed leaves its list unread, and a list that
// was not read before the lab is not compared.
//
// Loaded BPF programs and maps cannot be listed without bpftool; what the lab could leave of
// them after its processes are gone is what is pinned in the BPF file system, which is listed.
var machineViews = []struct {
	what string
	read func() ([]string, error)
}{
	{"link", readLinks},
	{"mount", readMounts},
	{"BPF file", func() ([]string, error) { return listTree(bpfFS) }},
	{"ipset", fromCommand(nonEmptyLines, "ipset", "list", "-n")},
	{"nftables table", fromCommand(nftTables, "nft", "list", "tables")},
	{"iptables-save line", fromCommand(iptablesLines, "iptables-save")},
	{"iptables-legacy-save line", fromCommand(iptablesLines, "iptables-legacy-save")},
	{"ip6tables-save line", fromCommand(iptablesLines, "ip6tables-save")},
	{"ip6tables-legacy-save line", fromCommand(iptablesLines, "ip6tables-legacy-save")},
}

// bpfFS is where BPF programs and maps are pinned to outlive the process that loaded them.
const bpfFS = "/sys/fs/bpf"

// commandTimeout bounds each command MachineNow runs, so that a hung tool cannot hang the lab.
const commandTimeout = 10 * time.Second

// MachineNow is the machine as it is now.
func MachineNow() Machine {
	var m Machine
	for _, v := range machineViews {
		items, err := v.read()
		m.views = append(m.views, view{what: v.what, items: items, err: err})
	}
	// A sysctl that cannot be read counts as empty, before and after.
	values, _ := node.ReadSysctls()
	m.sysctls = map[string]string{}
	for _, s := range node.KubeletSysctls {
		m.sysctls[s] = values[s]
	}
	return m
}

// LeftBehind lists what a lab in dir left after it went down: processes, network namespaces
// and node cgroups of the lab, links, mounts, BPF files, ipsets, nftables tables and iptables
// chains and rules of this machine that were not there before, sysctls that differ, runtime
// files.
func LeftBehind(dir string, before Machine) []string {
	var out []string
	for _, p := range leftovers(dir, nil) {
		out = append(out, fmt.Sprintf("left behind: process %s (pid %d)", p.Name, p.PID))
	}
	entries, _ := os.ReadDir(netnstopo.Dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), layout.NetnsPrefix) {
			out = append(out, "left behind: network namespace "+e.Name())
		}
	}
	cgroups, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", node.CgroupRoot("*")))
	for _, cg := range append(cgroups, node.ShareCgroups()...) {
		out = append(out, "left behind: cgroup "+cg)
	}
	out = append(out, MachineNow().changesSince(before)...)
	for _, p := range runtimePaths {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			out = append(out, "left behind: "+filepath.Join(dir, p))
		}
	}
	return out
}

// changesSince lists what m has that before had not, and the sysctls whose values differ. A
// list that was read before but cannot be read now is reported: it could hide what was left.
func (m Machine) changesSince(before Machine) []string {
	var out []string
	for _, now := range m.views {
		i := slices.IndexFunc(before.views, func(v view) bool { return v.what == now.what })
		switch {
		case i < 0 || before.views[i].err != nil:
			// Not known before: nothing to compare with.
		case now.err != nil:
			out = append(out, fmt.Sprintf("left behind: unknown, the %ss could be read before the lab but not after: %v", now.what, now.err))
		default:
			for _, item := range added(before.views[i].items, now.items) {
				out = append(out, fmt.Sprintf("left behind: %s %s on this machine", now.what, item))
			}
		}
	}
	for _, s := range slices.Sorted(maps.Keys(before.sysctls)) {
		if v := before.sysctls[s]; m.sysctls[s] != v {
			out = append(out, fmt.Sprintf("left behind: sysctl %s is %s, was %s", s, m.sysctls[s], v))
		}
	}
	return out
}

// added lists the items of after that before has not, each as often as after has it more
// often: a second mount on a mount point, or a rule added twice, is one more.
func added(before, after []string) []string {
	had := map[string]int{}
	for _, s := range before {
		had[s]++
	}
	var out []string
	for _, s := range after {
		if had[s] > 0 {
			had[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}

// readLinks lists the names of the network interfaces.
func readLinks() ([]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ifc := range ifs {
		names = append(names, ifc.Name)
	}
	return names, nil
}

// readMounts lists the mount points of the mount namespace, but for the directory of the
// named network namespaces: the first `ip netns add` makes it a mount point, shared so that
// the namespaces mounted in it are seen in every mount namespace, and it stays one for good.
func readMounts() ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(mountPoints(string(data)), func(m string) bool {
		return strings.HasPrefix(m, netnstopo.Dir+" (")
	}), nil
}

// mountPoints are the mount points of a mountinfo file, each with its file system type
// ("/sys/fs/bpf (bpf)"), once for each mount there. They keep mountinfo's escapes (\040 for a
// space): they are only compared.
func mountPoints(mountinfo string) []string {
	var out []string
	for _, line := range nonEmptyLines(mountinfo) {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw
		pre, post, _ := strings.Cut(line, " - ")
		fields, fstype := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(fstype) == 0 {
			continue
		}
		out = append(out, fields[4]+" ("+fstype[0]+")")
	}
	return out
}

// listTree lists the paths below root. A root that does not exist has none; a directory below
// it that cannot be read is listed without what it holds.
func listTree(root string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if path == root {
			return err
		}
		if err == nil {
			paths = append(paths, path)
		}
		return nil // WalkDir reports a directory that cannot be read after it was listed
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return paths, err
}

// fromCommand reads a list from what a command prints, parsed by parse. The list is not read
// when the command is not installed, fails or hangs.
func fromCommand(parse func(string) []string, name string, args ...string) func() ([]string, error) {
	return func() ([]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if msg := strings.TrimSpace(stderr.String()); err != nil && msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
		}
		return parse(string(out)), nil
	}
}

// nonEmptyLines are the lines of s that are not blank, trimmed.
func nonEmptyLines(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// nftTables are the tables `nft list tables` prints ("table inet filter"), as family and name.
func nftTables(out string) []string {
	var tables []string
	for _, line := range nonEmptyLines(out) {
		tables = append(tables, strings.TrimPrefix(line, "table "))
	}
	return tables
}

// iptablesCounters are the packet and byte counters of a chain (":INPUT ACCEPT [12:3456]") or
// of a rule saved with them ("[12:3456] -A INPUT ..."), which traffic changes.
var iptablesCounters = regexp.MustCompile(`^\[\d+:\d+\] | \[\d+:\d+\]$`)

// iptablesLines are the chains and rules iptables-save prints, each after its table ("*nat
// -A POSTROUTING ..."), without comments and counters.
func iptablesLines(out string) []string {
	var lines []string
	table := ""
	for _, line := range nonEmptyLines(out) {
		switch {
		case strings.HasPrefix(line, "#") || line == "COMMIT":
		case strings.HasPrefix(line, "*"):
			table = line
		default:
			lines = append(lines, table+" "+iptablesCounters.ReplaceAllString(line, ""))
		}
	}
	return lines
}
