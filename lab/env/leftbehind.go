package env

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kube-semaphore/semaphore/internal/netnstopo"
	"github.com/kube-semaphore/semaphore/lab/node"
)

// Machine is what the lab must leave of this machine as it found it: the names of its network
// interfaces (in the lab's own network namespace), and the sysctls kubelet changes.
type Machine struct {
	links   []string
	sysctls map[string]string
}

// MachineNow is the machine as it is now.
func MachineNow() Machine {
	ifs, _ := net.Interfaces()
	var m Machine
	for _, ifc := range ifs {
		m.links = append(m.links, ifc.Name)
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
// and node cgroups of the lab, links of this machine that were not there before, sysctls
// that differ, runtime files.
func LeftBehind(dir string, before Machine) []string {
	var out []string
	for _, p := range leftovers(dir, nil) {
		out = append(out, fmt.Sprintf("left behind: process %s (pid %d)", p.Name, p.PID))
	}
	entries, _ := os.ReadDir(netnstopo.Dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), NetnsPrefix) {
			out = append(out, "left behind: network namespace "+e.Name())
		}
	}
	cgroups, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", node.CgroupRoot("*")))
	for _, cg := range cgroups {
		out = append(out, "left behind: cgroup "+cg)
	}
	now := MachineNow()
	for _, name := range now.links {
		if !slices.Contains(before.links, name) {
			out = append(out, "left behind: link "+name+" on this machine")
		}
	}
	for s, v := range before.sysctls {
		if now.sysctls[s] != v {
			out = append(out, fmt.Sprintf("left behind: sysctl %s is %s, was %s", s, now.sysctls[s], v))
		}
	}
	for _, p := range runtimePaths {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			out = append(out, "left behind: "+filepath.Join(dir, p))
		}
	}
	return out
}
