// Package env brings the lab's environment up and takes it down: the binaries, the registry
// with our images and charts, the three clusters (control planes and, as root, nodes running
// containerd, kubelet, kube-proxy and Calico in network namespaces, see lab/node),
// semaphore-remote and the umbrella chart installed with the helm CLI, each cluster's CoreDNS,
// the sample workloads and Prometheus.
//
// New takes a lab directory and returns the Lab, the handle the rest of the lab works with;
// Up brings the parts up, in the one ordered list of parts, and Teardown takes down what they
// started, in reverse. The Lab keeps its run record in state.json (layout.Record): what `lab status`
// reads, and what Down, the reaper and the next lab need to clean up after one that died.
// LeftBehind says what a lab left on the machine after it went down.
//
// The names and addresses every part, the status and the checks agree on (the clusters, the
// nodes, the namespaces, the sample workloads), and the run record's form, are lab/layout's.
package env

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/release"
)

// Lab is one run of the lab: what it has started and how to stop it.
type Lab struct {
	dir   string
	out   io.Writer
	start time.Time

	mu     sync.Mutex // guards record, which parts update from several goroutines
	record layout.Record

	clusters map[string]*testbed.Cluster
	bin      binaries
	// registry is the host:port of the lab's OCI registry (startRegistry).
	registry string
	// labRelease is the release the lab installs (lab/release): its version, of its images, charts
	// and plugin, and the tag of every image in the registry.
	labRelease release.Builder
	// withNodes is false when the lab must not create its nodes (-nodes=false).
	withNodes bool

	cleanups []func()
	stopping atomic.Bool
	// exited says which child exited, how, and where its log is, for each that exits while
	// the lab is not stopping.
	exited   chan error
	tornDown sync.Once
}

// binaries are the programs the lab runs on this machine (our own run in images, as pods).
type binaries struct {
	// kube is the directory of etcd and the Kubernetes binaries.
	kube    string
	coredns string
	helm    string
	// plugin is kubectl-semaphore, which links the clusters.
	plugin string
	// egress is the egress proxy (lab/cmd/egress), through which the API servers reach the
	// nodes and pods.
	egress string
	// loadBalancer is the stand-in for a cloud's UDP load balancer (lab/cmd/loadbalancer) in
	// front of a private network's gateway nodes.
	loadBalancer string
	// calico is the directory of Calico's binaries and the release's manifests (ci/calico.sh).
	calico string
}

// part is one piece of the lab. Parts come up in order; each registers with onTeardown how
// to take down what it started, and teardown runs those in reverse.
type part struct {
	name string
	run  func(ctx context.Context) error
}

// parts are the pieces of the lab, in the order they come up: the registry holds the images
// and charts before anything installs or pulls them; the nodes run before the charts are
// installed (and so before their pods are scheduled); Prometheus comes after the pods it
// scrapes. What a part exposes to look at is a part of the status (lab/status).
func (l *Lab) parts() []part {
	return []part{
		{"binaries", l.buildBinaries},
		{"registry", l.startRegistry},
		{"clusters", l.startClusters},
		{"nodes", l.startNodes},
		{"cluster IDs", l.setClusterIDs},
		{"the charts, as docs/getting-started.md installs them", l.installWithGuide},
		{"load balancers", l.startLoadBalancers},
		{"CoreDNS", l.createCoreDNS},
		{"sample workloads", l.createSampleWorkloads},
		{"pods", l.waitForPods},
		{"Prometheus", l.startPrometheus},
	}
}

// New takes the lab directory dir for a new lab, which prints its progress on out: it refuses
// when a lab runs there, cleans up after one that died, writes the pid file and starts the
// reaper. withNodes false keeps the lab from creating its nodes (-nodes=false).
func New(dir string, out io.Writer, withNodes bool) (*Lab, error) {
	l := &Lab{
		dir:       dir,
		out:       out,
		start:     time.Now(),
		clusters:  map[string]*testbed.Cluster{},
		exited:    make(chan error, 16),
		withNodes: withNodes,
	}
	l.labRelease = release.Builder{Dir: l.Path(releaseDir), Tmp: l.Path("tmp"), Platform: labPlatform, Logf: l.Logf}
	if err := acquire(dir, out); err != nil {
		return nil, err
	}
	self, _ := testbed.ReadProcessStat(os.Getpid())
	l.record = layout.Record{PID: os.Getpid(), PIDStart: self.Start, Started: l.start, Phase: layout.PhaseStarting, Dir: dir}
	if err := l.prepare(); err != nil {
		l.Teardown()
		return nil, err
	}
	l.Logf("lab directory %s (pid %d)", dir, os.Getpid())
	return l, nil
}

func (l *Lab) prepare() error {
	// The logs of the previous run are kept until now, for a look after it went down.
	if err := os.RemoveAll(l.Path("logs")); err != nil {
		return err
	}
	for _, d := range []string{"logs", "bin"} {
		if err := os.MkdirAll(l.Path(d), 0o755); err != nil {
			return err
		}
	}
	l.saveRecord()
	if err := l.startReaper(); err != nil {
		return fmt.Errorf("starting the reaper: %w", err)
	}
	return nil
}

// Up brings the parts up in order. It stops at the first that fails, naming it in the error,
// or when ctx is done (returning ctx's error).
func (l *Lab) Up(ctx context.Context) error {
	for _, p := range l.parts() {
		err := p.run(ctx)
		l.saveRecord()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return nil
}

// MarkUp records that the lab is up: every part started and the status was waited for.
func (l *Lab) MarkUp() {
	l.mu.Lock()
	l.record.Phase = layout.PhaseUp
	l.mu.Unlock()
	l.saveRecord()
}

// onTeardown registers f to run when the lab goes down, before everything registered earlier.
func (l *Lab) onTeardown(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cleanups = append(l.cleanups, f)
}

// Teardown stops everything the parts started, in reverse order, and removes the runtime
// state. It runs once.
func (l *Lab) Teardown() {
	l.tornDown.Do(func() {
		l.stopping.Store(true)
		l.Logf("tearing down…")
		l.mu.Lock()
		l.record.Phase = layout.PhaseStopping
		cleanups := l.cleanups
		l.mu.Unlock()
		l.saveRecord()
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
		if err := removeRuntimeState(l.dir); err != nil {
			l.Logf("removing the runtime state: %v", err)
		}
		l.Logf("down; the logs stay in %s until the next start", l.Path("logs"))
	})
}

// Path is a path inside the lab directory.
func (l *Lab) Path(elem ...string) string {
	return filepath.Join(append([]string{l.dir}, elem...)...)
}

// Out is where the lab prints what it does and finds.
func (l *Lab) Out() io.Writer { return l.out }

// Elapsed is the time since the lab started.
func (l *Lab) Elapsed() string {
	return time.Since(l.start).Round(100 * time.Millisecond).String()
}

// Logf prints a progress line, stamped with the time since the lab started.
func (l *Lab) Logf(format string, args ...any) {
	fmt.Fprintf(l.out, "lab: [%6.1fs] %s\n", time.Since(l.start).Seconds(), fmt.Sprintf(format, args...))
}

// Cluster is the running cluster named name.
func (l *Lab) Cluster(name string) *testbed.Cluster { return l.clusters[name] }

// WithNodes tells whether the lab was asked to run its nodes (it may still have to do
// without: Record().NodesSkipped says).
func (l *Lab) WithNodes() bool { return l.withNodes }

// NodesRun tells whether the lab's nodes run: it was asked to run them, and could.
func (l *Lab) NodesRun() bool { return l.withNodes && !l.Record().NodesSkipped() }

// Exited receives, for each child that exits while the lab is not stopping, which it was, how
// it exited and where its log is.
func (l *Lab) Exited() <-chan error { return l.exited }

// Record is a copy of the run record, safe to read while parts update it.
func (l *Lab) Record() *layout.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := l.record
	rec.Clusters = append([]layout.ClusterRecord(nil), rec.Clusters...)
	rec.Controllers = append([]layout.Controller(nil), rec.Controllers...)
	rec.DNS = append([]layout.DNSServer(nil), rec.DNS...)
	rec.Pods = append([]layout.Pod(nil), rec.Pods...)
	rec.Processes = append([]layout.Process(nil), rec.Processes...)
	return &rec
}

// update changes the run record under its lock, and saves it.
func (l *Lab) update(change func(rec *layout.Record)) {
	l.mu.Lock()
	change(&l.record)
	l.mu.Unlock()
	l.saveRecord()
}

func (l *Lab) saveRecord() {
	if err := layout.SaveRecord(l.dir, l.Record()); err != nil {
		l.Logf("writing the state: %v", err)
	}
}

// PrintLogTails prints the end of every log, so a failure in CI explains itself.
func (l *Lab) PrintLogTails() {
	logs, _ := filepath.Glob(l.Path("logs", "*.log"))
	for _, p := range logs {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 25 {
			lines = lines[len(lines)-25:]
		}
		fmt.Fprintf(l.out, "\n--- last lines of %s\n%s\n", p, strings.Join(lines, "\n"))
	}
}
