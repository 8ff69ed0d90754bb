package measure

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// Process is a component's binary reading one remote for a benchmark.
type Process struct {
	cmd   *exec.Cmd
	local *testenv.Cluster
	agent string
	// Log is the file that holds the binary's output.
	Log string
}

// Binary prepares pkg's binary, built here, to run in the local cluster with leader election
// in leaseNS, reading remote, logging warnings and errors only to a file in dir, with extra
// settings; its writes are counted in local's audit log by its user agent, agent.
func Binary(b *testing.B, pkg, agent, dir string, local, remote *testenv.Cluster, leaseNS string, extra ...string) *Process {
	return BinaryReading(b, pkg, agent, dir, local, []*testenv.Cluster{remote}, leaseNS, extra...)
}

// BinaryReading is Binary reading several remotes.
func BinaryReading(b *testing.B, pkg, agent, dir string, local *testenv.Cluster, remotes []*testenv.Cluster, leaseNS string, extra ...string) *Process {
	bin := testenv.BuildBinary(b, pkg)
	remotesDir := filepath.Join(dir, "remotes")
	names := make([]string, 0, len(remotes))
	for _, r := range remotes {
		testenv.WriteRemoteKubeconfig(b, remotesDir, r.Name, r.Kubeconfig)
		names = append(names, r.Name)
	}
	return Command(b, bin, nil, agent, dir, local, append([]string{
		"SEMAPHORE_LOCAL_CLUSTER=" + local.Name,
		"SEMAPHORE_REMOTES=" + strings.Join(names, ","),
		"SEMAPHORE_REMOTES_DIR=" + remotesDir,
		"SEMAPHORE_LOCAL_KUBECONFIG=" + local.DirectKubeconfig,
		"SEMAPHORE_ADMIN_ADDR=127.0.0.1:0",
		"SEMAPHORE_LEADER_ELECT_NAMESPACE=" + leaseNS,
		"SEMAPHORE_LOG_LEVEL=warn",
	}, extra...)...)
}

// Command prepares any binary, bin with args, to run against local with env on top of this
// process's environment, its output in a file of dir named after it; its writes are counted
// in local's audit log by its user agent, agent. The reference tools a benchmark compares
// with run through it.
func Command(b *testing.B, bin string, args []string, agent, dir string, local *testenv.Cluster, env ...string) *Process {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	return newProcess(b, cmd, filepath.Join(dir, filepath.Base(bin)+".log"), local, agent)
}

// newProcess is cmd, not started, with its output in a new file at log.
func newProcess(b *testing.B, cmd *exec.Cmd, log string, local *testenv.Cluster, agent string) *Process {
	f, err := os.Create(log)
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	return &Process{cmd: cmd, local: local, agent: agent, Log: log}
}

// Writes is how many writes the binary has made to the local cluster so far.
func (p *Process) Writes(b *testing.B) int { return len(p.local.WritesBut(b, p.agent)) }

// Converge starts the binary, which runs until the benchmark ends, and waits up to wait for
// converged (which also says how far it got), with the benchmark's timer running. It returns
// how long that took and the writes made, counted once the last watch events have arrived.
func (p *Process) Converge(b *testing.B, wait time.Duration, converged func() (bool, string)) (time.Duration, int) {
	before := p.Writes(b)
	b.StartTimer()
	t0 := time.Now()
	p.Start(b)
	for {
		done, state := converged()
		if done {
			break
		}
		if time.Since(t0) > wait {
			b.Fatalf("not converged after %v: %s; see %s", wait, state, p.Log)
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(t0)
	b.StopTimer()
	time.Sleep(2 * time.Second) // let the last watch events arrive before counting
	return took, p.Writes(b) - before
}

// Start starts the binary, which runs until Stop, Terminate or the benchmark's end.
func (p *Process) Start(b *testing.B) {
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Stop)
}

// Again prepares another run of the same binary with the same settings and env on top (the
// last setting of a variable wins), logging to name.log next to the first: the same process
// restarted, or a second replica.
func (p *Process) Again(b *testing.B, name string, env ...string) *Process {
	cmd := exec.Command(p.cmd.Path, p.cmd.Args[1:]...)
	cmd.Env = append(slices.Clone(p.cmd.Env), env...)
	return newProcess(b, cmd, filepath.Join(filepath.Dir(p.Log), name+".log"), p.local, p.agent)
}

// Terminate stops the binary as the kubelet does, with SIGTERM, and waits until it has ended.
func (p *Process) Terminate() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}

// Stop ends the binary before the benchmark does, so that the next one runs alone.
func (p *Process) Stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// AtRest is how many writes the binary makes over 5 s.
func (p *Process) AtRest(b *testing.B) int {
	before := p.Writes(b)
	time.Sleep(5 * time.Second)
	return p.Writes(b) - before
}

// Pid is the running binary's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// CPUSeconds is the processor time, user and system, the binary has used so far.
func (p *Process) CPUSeconds(b *testing.B) float64 {
	proc, err := procfs.NewProc(p.Pid())
	if err != nil {
		b.Fatal(err)
	}
	stat, err := proc.Stat()
	if err != nil {
		b.Fatal(err)
	}
	return stat.CPUTime()
}

// MachineCPUSeconds is the processor time all the machine's processors have spent busy (not
// idle, not waiting for I/O) since it started: what the API servers, the binary and the
// benchmark share.
func MachineCPUSeconds(b *testing.B) float64 {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		b.Fatal(err)
	}
	stat, err := fs.Stat()
	if err != nil {
		b.Fatal(err)
	}
	t := stat.CPUTotal
	return t.User + t.Nice + t.System + t.IRQ + t.SoftIRQ + t.Steal
}

// PeakRSS is the binary's peak resident memory in bytes.
func (p *Process) PeakRSS(b *testing.B) float64 { return testenv.PeakRSS(b, p.Pid()) }

// Report reports the figures every component's benchmark has, as benchmark metrics.
func Report(b *testing.B, convergence time.Duration, l *Latencies, writesPerChange float64, idleWrites int, rss float64) {
	p50, p99, _ := l.Percentiles()
	b.ReportMetric(convergence.Seconds(), "converge-s")
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
	b.ReportMetric(writesPerChange, "writes/change")
	b.ReportMetric(float64(idleWrites), "idle-writes")
	b.ReportMetric(rss/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(0, "ns/op")
}

// Latencies are the delays from changes to their being seen, recorded from any goroutine.
type Latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

// Add records one delay.
func (l *Latencies) Add(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.d = append(l.d, d)
}

// Wait waits up to 30 s for n delays; log names the binary's log in the failure.
func (l *Latencies) Wait(b *testing.B, n int, log string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		l.mu.Lock()
		got := len(l.d)
		l.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d changes arrived; see %s", got, n, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Percentiles are the median, the 99th percentile and the largest delay.
func (l *Latencies) Percentiles() (p50, p99, maxLat time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	slices.Sort(l.d)
	return l.d[len(l.d)/2], l.d[len(l.d)*99/100], l.d[len(l.d)-1]
}
