package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// lab is one run of the lab: what it has started and how to stop it.
type lab struct {
	dir   string
	out   io.Writer
	start time.Time

	mu    sync.Mutex // guards state, which parts update from several goroutines
	state State

	clusters map[string]*testbed.Cluster
	bin      binaries
	// registry is the host:port of the lab's OCI registry (startRegistry); imageTag is the tag
	// of every image there.
	registry, imageTag string
	// withNodes is false when the lab must not create its nodes (-nodes=false).
	withNodes bool
	// soakFor is how long the soak churns the lab (soak.go); 0 for up and check.
	soakFor time.Duration
	// remoteEntries are the global.remotes entries of each cluster's umbrella release, as
	// kubectl semaphore link writes them.
	remoteEntries map[string][]remoteEntry

	cleanups []func()
	stopping atomic.Bool
	// exited receives the children that exit while the lab is not stopping.
	exited   chan *child
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
// scrapes. Each part that exposes something to look at adds its statusPart to newStatus.
func (l *lab) parts() []part {
	return []part{
		{"binaries", l.buildBinaries},
		{"registry", l.startRegistry},
		{"clusters", l.startClusters},
		{"nodes", l.startNodes},
		{"Calico IPAM blocks", l.startCalicoIPAM},
		{"semaphore-remote", l.installRemoteCharts},
		{"semaphore (umbrella chart)", l.installUmbrellas},
		{"CoreDNS", l.createCoreDNS},
		{"sample workloads", l.createSampleWorkloads},
		{"pods", l.waitForPods},
		{"Prometheus", l.startPrometheus},
	}
}

// up brings the lab up and prints its status. When check is set it tears the lab down at once
// and reports whether everything worked (after soaking it for soakFor, when that is set);
// otherwise it keeps the lab running until a signal.
func up(dir string, timeout time.Duration, withNodes, check bool, soakFor time.Duration) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	l, err := newLab(dir, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		return 1
	}
	defer l.teardown() // also on a panic; it runs once
	l.withNodes, l.soakFor = withNodes, soakFor
	job := "lab check"
	if soakFor > 0 {
		job = "lab soak"
	}
	before := machineNow()

	code := l.run(ctx, timeout, check)
	l.teardown()
	if check {
		// Down means gone: no process, network namespace or host link of the lab is left.
		if left := leftBehind(dir, before); len(left) > 0 {
			printProblems(l.out, left)
			code = 1
		} else {
			fmt.Fprintf(l.out, "%s: nothing left behind (processes, network namespaces, cgroups, links, sysctls, runtime files)\n", job)
		}
		if code == 0 {
			fmt.Fprintf(l.out, "%s: PASSED in %s\n", job, l.elapsed())
		} else {
			fmt.Fprintf(l.out, "%s: FAILED after %s\n", job, l.elapsed())
		}
	}
	return code
}

func (l *lab) run(ctx context.Context, timeout time.Duration, check bool) int {
	for _, p := range l.parts() {
		err := p.run(ctx)
		l.saveState()
		if ctx.Err() != nil {
			l.logf("interrupted")
			return 1
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "lab: %s: %v\n", p.name, err)
			l.printLogTails()
			return 1
		}
	}

	l.logf("waiting for the mirrors, network sets, DNS, controller readiness and Prometheus…")
	st, problems := waitReady(ctx, l.snapshot(), timeout, l.exited)
	if ctx.Err() != nil {
		l.logf("interrupted")
		return 1
	}
	l.mu.Lock()
	l.state.Phase = phaseUp
	l.mu.Unlock()
	l.saveState()
	l.logf("up")
	fmt.Fprintln(l.out)
	printStatus(l.out, l.snapshot(), st)
	printProblems(l.out, problems)
	if check && l.soakFor > 0 {
		if len(problems) == 0 {
			problems = l.soak(ctx, l.soakFor)
			printProblems(l.out, problems)
		}
		if len(problems) > 0 {
			l.printLogTails()
			return 1
		}
		return 0
	}
	if check {
		if len(problems) == 0 {
			problems = l.checkIdentities(ctx)
			printProblems(l.out, problems)
		}
		if len(problems) == 0 {
			problems = l.checkDashboards(ctx)
			printProblems(l.out, problems)
		}
		if len(problems) == 0 {
			problems = l.checkGlobalFailover(ctx)
			printProblems(l.out, problems)
		}
		if len(problems) == 0 {
			// Before the plugin's check, which cuts gcp off aws: the honest traffic between them
			// must flow through the hostile remote's flood.
			problems = l.checkHostileRemote(ctx)
			printProblems(l.out, problems)
		}
		if len(problems) == 0 {
			problems = l.checkWithPlugin(ctx)
			printProblems(l.out, problems)
		}
		if len(problems) > 0 {
			l.printLogTails()
			return 1
		}
		return 0
	}
	if len(problems) > 0 {
		fmt.Fprintf(l.out, "The lab stays up so you can look into it; the logs are in %s.\n", l.path("logs"))
	}
	fmt.Fprintf(l.out, "Stop it with Ctrl-C, or `make lab-down` (bash ci/lab down) from another terminal.\n\n")
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(l.out)
			return 0
		case c := <-l.exited:
			l.logf("%s exited unexpectedly (%v); see %s", c.name, c.err, c.log)
		}
	}
}

// newLab takes the lab directory: it refuses when a lab runs there, cleans up after one that
// died, and writes the pid file.
func newLab(dir string, out io.Writer) (*lab, error) {
	l := &lab{
		dir:      dir,
		out:      out,
		start:    time.Now(),
		clusters: map[string]*testbed.Cluster{},
		exited:   make(chan *child, 16),
	}
	if err := acquire(dir, out); err != nil {
		return nil, err
	}
	self, _ := procStart(os.Getpid())
	l.state = State{PID: os.Getpid(), PIDStart: self, Started: l.start, Phase: phaseStarting, Dir: dir}
	if err := l.prepare(); err != nil {
		l.teardown()
		return nil, err
	}
	l.logf("lab directory %s (pid %d)", dir, os.Getpid())
	return l, nil
}

func (l *lab) prepare() error {
	// The logs of the previous run are kept until now, for a look after it went down.
	if err := os.RemoveAll(l.path("logs")); err != nil {
		return err
	}
	for _, d := range []string{"logs", "bin"} {
		if err := os.MkdirAll(l.path(d), 0o755); err != nil {
			return err
		}
	}
	l.saveState()
	if err := l.startReaper(); err != nil {
		return fmt.Errorf("starting the reaper: %w", err)
	}
	return nil
}

// onTeardown registers f to run when the lab goes down, before everything registered earlier.
func (l *lab) onTeardown(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cleanups = append(l.cleanups, f)
}

// teardown stops everything the parts started, in reverse order, and removes the runtime
// state. It runs once.
func (l *lab) teardown() {
	l.tornDown.Do(func() {
		l.stopping.Store(true)
		l.logf("tearing down…")
		l.mu.Lock()
		l.state.Phase = phaseStopping
		cleanups := l.cleanups
		l.mu.Unlock()
		l.saveState()
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
		if err := removeRuntimeState(l.dir); err != nil {
			l.logf("removing the runtime state: %v", err)
		}
		l.logf("down; the logs stay in %s until the next start", l.path("logs"))
	})
}

// path is a path inside the lab directory.
func (l *lab) path(elem ...string) string {
	return filepath.Join(append([]string{l.dir}, elem...)...)
}

func (l *lab) elapsed() string {
	return time.Since(l.start).Round(100 * time.Millisecond).String()
}

// logf prints a progress line, stamped with the time since the lab started.
func (l *lab) logf(format string, args ...any) {
	fmt.Fprintf(l.out, "lab: [%6.1fs] %s\n", time.Since(l.start).Seconds(), fmt.Sprintf(format, args...))
}

// snapshot is a copy of the state, safe to read while parts update it.
func (l *lab) snapshot() *State {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.state
	st.Clusters = append([]ClusterState(nil), st.Clusters...)
	st.Controllers = append([]ControllerState(nil), st.Controllers...)
	st.DNS = append([]DNSState(nil), st.DNS...)
	st.Pods = append([]PodState(nil), st.Pods...)
	st.Processes = append([]Proc(nil), st.Processes...)
	return &st
}

func (l *lab) saveState() {
	if err := saveState(l.dir, l.snapshot()); err != nil {
		l.logf("writing the state: %v", err)
	}
}

// printLogTails prints the end of every log, so a failure in CI explains itself.
func (l *lab) printLogTails() {
	logs, _ := filepath.Glob(l.path("logs", "*.log"))
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
