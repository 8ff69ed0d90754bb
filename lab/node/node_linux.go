//go:build linux

package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kube-semaphore/semaphore/internal/harness/netnstopo"
)

// startTimeout bounds Start when ctx has no earlier deadline.
const startTimeout = 2 * time.Minute

// Node is a running node.
type Node struct {
	cfg   Config
	hs    []hierarchy
	procs []*proc

	stopOnce sync.Once
	stopErr  error
}

// Start starts containerd, kubelet and kube-proxy of the node cfg describes. It returns once
// containerd answers on its socket and kubelet and kube-proxy answer on their health ports;
// the caller waits for the Node to be Ready through the API. On error nothing of the node is
// left running.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", cfg.Name, err)
	}
	if err := checkTools(cfg); err != nil {
		return nil, fmt.Errorf("node %s: %w", cfg.Name, err)
	}
	netns := filepath.Join(netnstopo.Dir, cfg.Netns)
	if _, err := os.Stat(netns); err != nil {
		return nil, fmt.Errorf("node %s: network namespace: %w", cfg.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	hs, err := cgroupHierarchies()
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", cfg.Name, err)
	}
	// Held until containerd has made its mounts: no node's Stop may remove a mount point
	// meanwhile.
	unlock, err := lockMachine(hs)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", cfg.Name, err)
	}
	if pids := nodeProcs(hs, cfg.Name); len(pids) > 0 {
		unlock()
		return nil, fmt.Errorf("node %s runs already: processes %v are in its cgroup %s (one that died is cleaned up by node.Cleanup)", cfg.Name, pids, CgroupRoot(cfg.Name))
	}
	n := &Node{cfg: cfg, hs: hs}
	containerd, procsFiles, err := n.startContainerd(ctx, netns)
	unlock()
	if err == nil && cfg.Calico != nil {
		err = n.startCalico(ctx, netns, containerd, procsFiles)
	}
	if err == nil {
		err = n.startKubeletAndProxy(ctx, netns, containerd, procsFiles)
	}
	if err != nil {
		_ = n.Stop()
		return nil, fmt.Errorf("node %s: %w", cfg.Name, err)
	}
	return n, nil
}

// startContainerd prepares the node's cgroups, directories, configurations and mount points,
// and starts containerd in the network namespace at netns. It returns once containerd answers
// on its socket, with the cgroups' procs files that the node's other programs join.
func (n *Node) startContainerd(ctx context.Context, netns string) (*proc, []string, error) {
	cfg := n.cfg
	// What an earlier node of this name left (its processes are gone, see Start).
	if err := killCgroups(n.hs, cfg.Name, 10*time.Second); err != nil {
		return nil, nil, err
	}
	procsFiles, err := createCgroups(n.hs, cfg.Name)
	if err != nil {
		return nil, nil, err
	}
	if err := prepareDirs(cfg); err != nil {
		return nil, nil, err
	}
	// containerd in a mount namespace of its own, where the node's directories are bind-mounted
	// over the defaults, and in the node's network namespace (where it runs the CNI plugins).
	// The node has a /run of its own: what the machine's holds is none of its business, and
	// what the node's programs put there (mount(8)'s /run/mount) stays in it.
	p := paths{cfg.Dir}
	script := []string{
		"set -e",
		"echo 1 > /proc/sys/net/ipv4/ip_forward",
		"mount -n -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run",
	}
	for _, t := range cfg.mountTargets() {
		if underRun(t) {
			script = append(script, "mkdir -p "+shellQuote(t))
		}
		script = append(script, "mount -n --bind "+shellQuote(p.root(t))+" "+shellQuote(t))
	}
	script = append(script, "exec containerd --config "+shellQuote(p.config("containerd.toml")))
	containerd, err := n.start("containerd", procsFiles,
		"unshare", "--mount", "--propagation", "slave",
		"nsenter", "--net="+netns, "--",
		"sh", "-c", strings.Join(script, "\n"))
	if err != nil {
		return nil, nil, err
	}
	if err := waitContainerd(ctx, containerd, p.containerdSocket()); err != nil {
		return nil, nil, err
	}
	return containerd, procsFiles, nil
}

// prepareDirs empties the node's root and configuration directories, writes its
// configurations, and makes the machine's mount points it binds over.
func prepareDirs(cfg Config) error {
	for _, d := range []string{"root", "config"} {
		if err := os.RemoveAll(filepath.Join(cfg.Dir, d)); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
		return err
	}
	var nofile unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
		return err
	}
	if err := writeConfigs(cfg, nofile.Max); err != nil {
		return err
	}
	if err := makeMountpoints(machineMountpoints(cfg.mountTargets())); err != nil {
		return fmt.Errorf("the node's mount points: %w", err)
	}
	return nil
}

// startKubeletAndProxy starts kubelet and kube-proxy in containerd's mount namespace (kubelet
// mounts the pods' volumes where runc, under containerd, bind-mounts them into the
// containers), and returns once both answer on their health ports.
func (n *Node) startKubeletAndProxy(ctx context.Context, netns string, containerd *proc, procsFiles []string) error {
	cfg, p := n.cfg, paths{n.cfg.Dir}
	enter := enterNode(netns, containerd)
	args := append(enter,
		filepath.Join(cfg.BinDir, "kubelet"),
		"--config="+p.config("kubelet.yaml"),
		"--kubeconfig="+cfg.Kubeconfig,
		"--node-ip="+cfg.IP,
		"--hostname-override="+cfg.Name,
	)
	if cfg.ExternalCloudProvider {
		args = append(args, "--cloud-provider=external")
	}
	kubelet, err := n.start("kubelet", procsFiles, args...)
	if err != nil {
		return err
	}
	proxy, err := n.start("kube-proxy", procsFiles, append(enter,
		filepath.Join(cfg.BinDir, "kube-proxy"),
		"--config="+p.config("kube-proxy.yaml"),
	)...)
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, cfg.Netns, kubelet, "http://"+kubeletHealthz+"/healthz", true); err != nil {
		return err
	}
	return waitHTTP(ctx, cfg.Netns, proxy, "http://"+proxyHealthz+"/livez", false)
}

// enterNode is the command prefix that runs a program in the node: in containerd's mount
// namespace and the node's network namespace.
func enterNode(netns string, containerd *proc) []string {
	return []string{"nsenter", "--mount=/proc/" + strconv.Itoa(containerd.cmd.Process.Pid) + "/ns/mnt", "--net=" + netns, "--"}
}

// startCalico runs `calico-node -startup` to its end, then Felix and the tunnel address
// allocator, and returns once Felix is live (calico.go).
func (n *Node) startCalico(ctx context.Context, netns string, containerd *proc, procsFiles []string) error {
	enter := enterNode(netns, containerd)
	startup, err := n.start("calico-startup", procsFiles, calicoCommand(n.cfg, enter, "-startup")...)
	if err != nil {
		return err
	}
	select {
	case <-startup.done:
		if startup.err != nil {
			return fmt.Errorf("calico-node -startup: %w; the end of %s:\n%s", startup.err, startup.log, logTail(startup.log, 15))
		}
	case <-ctx.Done():
		return fmt.Errorf("calico-node -startup did not finish: %w; the end of %s:\n%s", ctx.Err(), startup.log, logTail(startup.log, 15))
	}
	felix, err := n.start("felix", procsFiles, restarting(calicoCommand(n.cfg, enter, "-felix"))...)
	if err != nil {
		return err
	}
	if !n.cfg.Calico.HostLocal {
		if _, err := n.start("calico-tunnel-addrs", procsFiles, calicoCommand(n.cfg, enter, "-allocate-tunnel-addrs")...); err != nil {
			return err
		}
	}
	return waitHTTP(ctx, n.cfg.Netns, felix, felixHealth, true)
}

// restarting is args run again a second after each exit, as calico-node's container runs
// Felix (runit): Felix exits to take a changed configuration (the Kubernetes datastore's
// first FelixConfiguration, written by calico-node -startup) and wants to be started again.
func restarting(args []string) []string {
	loop := `while :; do "$@"; echo "exited with status $?, starting again in a second"; sleep 1; done`
	return append([]string{"sh", "-c", loop, "sh"}, args...)
}

// checkTools checks that what the node runs is there.
func checkTools(cfg Config) error {
	var errs []error
	for _, tool := range []string{"sh", "unshare", "nsenter", "mount", "containerd", "containerd-shim-runc-v2", "runc", "iptables", "iptables-restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			if _, err2 := exec.LookPath("/usr/sbin/" + tool); err2 != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "portmap", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, plugin)); err != nil {
			errs = append(errs, fmt.Errorf("CNI plugin: %w", err))
		}
	}
	if len(errs) > 0 {
		errs = append(errs, errors.New("(bash ci/node-packages.sh installs them)"))
	}
	if cfg.Calico != nil {
		// Felix programs the node's IP sets with ipset.
		if _, err := exec.LookPath("ipset"); err != nil {
			if _, err2 := exec.LookPath("/usr/sbin/ipset"); err2 != nil {
				errs = append(errs, fmt.Errorf("%w (bash ci/node-packages.sh installs it)", err))
			}
		}
		for _, bin := range []string{"calico-node", "calico"} {
			if _, err := os.Stat(filepath.Join(cfg.Calico.BinDir, bin)); err != nil {
				errs = append(errs, fmt.Errorf("%w (bash ci/calico.sh builds it)", err))
			}
		}
	}
	for _, bin := range []string{"kubelet", "kube-proxy"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, bin)); err != nil {
			errs = append(errs, fmt.Errorf("%w (bash ci/kube-binaries.sh all builds it)", err))
		}
	}
	return errors.Join(errs...)
}

// PIDs are the node's daemons (containerd, kubelet, kube-proxy), to record for a reaper. What
// they started (shims, containers) is found through the node's cgroup: Cleanup.
func (n *Node) PIDs() []int {
	var pids []int
	for _, p := range n.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	return pids
}

// Stop stops the node: every process in its cgroup (containerd, its shims and every container,
// kubelet, kube-proxy) is killed, the cgroups are removed, the node's mounts go with its mount
// namespace, and Dir is removed; with the last node of the machine, the mount points Start
// created are removed too. The pods stay in the API as they were. Stop is idempotent.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() { n.stopErr = n.stop() })
	return n.stopErr
}

func (n *Node) stop() error {
	errs := []error{killCgroups(n.hs, n.cfg.Name, 20*time.Second)}
	for _, p := range n.procs {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			errs = append(errs, fmt.Errorf("%s (pid %d) did not exit", p.name, p.cmd.Process.Pid))
		}
	}
	errs = append(errs, removeUnusedMountpoints(n.hs, machineMountpoints(n.cfg.mountTargets())))
	if err := errors.Join(errs...); err != nil {
		// Dir stays: something may still use it.
		return fmt.Errorf("stopping node %s: %w", n.cfg.Name, err)
	}
	if err := os.RemoveAll(n.cfg.Dir); err != nil {
		return fmt.Errorf("stopping node %s: %w", n.cfg.Name, err)
	}
	return nil
}

// removeUnusedMountpoints removes the mount points nodes created for targets when no node
// has a cgroup on this machine any more.
func removeUnusedMountpoints(hs []hierarchy, targets []string) error {
	unlock, err := lockMachine(hs)
	if err != nil {
		return err
	}
	defer unlock()
	if len(nodeCgroups(hs)) == 0 {
		removeMountpoints(targets)
	}
	return nil
}

// Cleanup removes what a node that was not stopped left on this machine (its lab died, even
// by SIGKILL): it kills every process in the node's cgroups, removes them and, when no node
// is left, the mount points of its private directories (privateDirs: Config.PrivateDirs).
// The node's mounts went with its last process. It does not touch Config.Dir, and does nothing
// when there is nothing to do.
func Cleanup(name string, privateDirs ...string) error {
	if name == "" || strings.ContainsAny(name, "/") {
		return fmt.Errorf("node name %q", name)
	}
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	if err := killCgroups(hs, name, 20*time.Second); err != nil {
		return err
	}
	targets := append(append(append([]string(nil), privatePaths...), calicoPaths...), privateDirs...)
	return removeUnusedMountpoints(hs, machineMountpoints(targets))
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
