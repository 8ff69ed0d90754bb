package env

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// etcdPort is the port of the etcd an API server stores in (--etcd-servers), or etcd serves
// (--listen-client-urls): envtest picks free ports, so the port is what pairs the two.
var etcdPort = regexp.MustCompile(`--(?:etcd-servers|listen-client-urls)=\S*:(\d+)`)

// APIServerProcesses are the processes of cluster's API server: kube-apiserver and the etcd it
// stores in, both children of the lab (envtest's). The lab holds a cluster that turns hostile
// to a CPU share with them (lab/scenarios).
func (l *Lab) APIServerProcesses(cluster string) ([]int, error) {
	children, err := testbed.ChildProcesses(os.Getpid())
	if err != nil {
		return nil, err
	}
	dir := l.Path("clusters", cluster) + string(os.PathSeparator)
	var apiserver int
	var port string
	for _, pid := range children {
		cmd := testbed.ProcessCmdline(pid)
		if testbed.ProcessName(pid) == "kube-apiserver" && strings.Contains(cmd, dir) {
			if m := etcdPort.FindStringSubmatch(cmd); m != nil {
				apiserver, port = pid, m[1]
			}
		}
	}
	if apiserver == 0 {
		return nil, fmt.Errorf("no kube-apiserver of %s among the lab's processes", cluster)
	}
	for _, pid := range children {
		if m := etcdPort.FindStringSubmatch(testbed.ProcessCmdline(pid)); m != nil && testbed.ProcessName(pid) == "etcd" && m[1] == port {
			return []int{apiserver, pid}, nil
		}
	}
	return nil, fmt.Errorf("no etcd of %s (port %s) among the lab's processes", cluster, port)
}
