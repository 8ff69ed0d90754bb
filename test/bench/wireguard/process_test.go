//go:build linux

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/measure"
)

// The binary's memory. The in-process controller shares the benchmark's heap, with the API
// clients and the device reader, so its memory cannot be told apart; here the real
// semaphore-wireguard runs as a process of its own, as the other benchmarks run theirs, and its
// peak RSS is read at two sizes of the remote to show how it grows with the nodes.

const wireguardPkg = "github.com/kube-semaphore/semaphore/components/wireguard"

// binarySizes are the remote's node counts the binary is measured at: the in-process size and
// four times as many.
var binarySizes = []int{remoteNodes, 2000}

// wideCIDR is remote node i's pod CIDR for the binary: the /24s of 100.64.0.0/10, room for
// 16,384 nodes where podCIDR's range holds 512.
func wideCIDR(i int) string { return fmt.Sprintf("100.%d.%d.0/24", 64+i/256, i%256) }

// binaryRun is the binary's figures at one size of the remote.
type binaryRun struct {
	nodes    int
	complete time.Duration // start -> the device holds every peer and route
	cpu      float64       // seconds of CPU, user and system, until then
	rss      float64       // peak RSS (VmHWM) in bytes, read restPeriod later
	// Then, from the Go runtime (wireguard-go's share included: it runs in the same process):
	// goroutines, and bytes of heap and of goroutine stacks in use.
	goroutines, heap, stacks float64
}

// binaryBench is the binary's figures at each of binarySizes.
type binaryBench []binaryRun

// benchBinary replaces the remote's nodes by nodes with wideCIDR pod CIDRs and, at each of
// binarySizes (adding nodes to the remote), runs the binary cold (new key, no device) until its
// device is complete. The controller before it must have been stopped: the device's name is
// the same and there can be one per network namespace.
func benchBinary(b *testing.B, local, aws *testenv.Cluster, client kubernetes.Interface, reader *device.Manager, dev string) binaryBench {
	clearRemote(b, client, reader, dev)
	var first *measure.Process
	var keys []wgtypes.Key
	var runs binaryBench
	for _, n := range binarySizes {
		start := time.Now()
		_, more := populate(b, client, len(keys), n, wideCIDR)
		keys = append(keys, more...)
		b.Logf("the remote has %d nodes with /24 pod CIDRs from 100.64.0.0/10 (%d created in %v)",
			n, len(more), time.Since(start).Round(time.Millisecond))
		admin := measure.FreeAdmin(b)
		proc := binaryProcess(b, first, local, aws, n, admin)
		if first == nil {
			first = proc
		}
		runs = append(runs, runBinary(b, proc, admin, reader, dev, keys))
	}
	return runs
}

// binaryProcess prepares the binary as the chart runs it on a node without kernel WireGuard
// (SEMAPHORE_WG_MODE=userspace, the implementation the in-process controller uses), with a key
// directory of its own so that it starts cold; after the first, it is the same build again.
func binaryProcess(b *testing.B, first *measure.Process, local, aws *testenv.Cluster, n int, admin measure.Admin) *measure.Process {
	keyDir := "SEMAPHORE_WG_KEY_DIR=" + filepath.Join(b.TempDir(), "keys")
	if first != nil {
		return first.Again(b, fmt.Sprintf("wireguard-%d", n), keyDir, admin.Setting())
	}
	// No lease namespace: semaphore-wireguard runs on every node, without leader election.
	// Errors only, as in-process: wireguard-go reports each failed handshake (nothing answers
	// at the endpoints) as a warning, thousands a minute at 2,000 peers.
	return measure.Binary(b, wireguardPkg, userAgent, b.TempDir(), local, aws, "",
		"SEMAPHORE_WG_NODE_NAME="+nodeName, keyDir, "SEMAPHORE_WG_MODE=userspace", admin.Setting(),
		fmt.Sprintf("SEMAPHORE_WG_LISTEN_PORTS=%s:%d", remoteName, listenPort), "SEMAPHORE_LOG_LEVEL=error",
		// The remote nodes publish no addresses: their endpoints are let in as a NAT's would be.
		"SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES="+remoteName+":192.0.2.0/24")
}

// runBinary starts proc against the remote's nodes (node i with keys[i]) and waits until its
// device holds every peer and route; it reads the CPU used then and the peak RSS restPeriod
// later, so that what the binary does right after converging counts too. Then it stops the
// binary as the kubelet would and waits until its device is gone.
func runBinary(b *testing.B, proc *measure.Process, admin measure.Admin, reader *device.Manager, dev string, keys []wgtypes.Key) binaryRun {
	want := map[wgtypes.Key]peerState{}
	for i, k := range keys {
		want[k] = peerState{endpoint: endpoint(i), allowedIPs: wideCIDR(i), keepalive: keepalive}
	}
	r := binaryRun{nodes: len(keys)}
	t0 := time.Now()
	proc.Start(b)
	logOnFailure(b, proc)
	waitComplete(b, reader, dev, want, len(keys), t0, fmt.Sprintf("binary, %d nodes", len(keys)))
	r.complete, r.cpu = time.Since(t0), proc.CPUSeconds(b)
	time.Sleep(restPeriod)
	r.rss = proc.PeakRSS(b)
	r.goroutines, r.heap, r.stacks = goRuntime(b, admin)
	proc.Terminate()
	waitGone(b, reader, dev)
	return r
}

// goRuntime reads the goroutines and the heap and stack bytes in use from the metrics of the
// binary whose admin server is at admin.
func goRuntime(b *testing.B, admin measure.Admin) (goroutines, heap, stacks float64) {
	samples := admin.MustMetrics(b, "go_")
	return samples.Sum("go_goroutines", nil), samples.Sum("go_memstats_heap_inuse_bytes", nil), samples.Sum("go_memstats_stack_inuse_bytes", nil)
}

// logOnFailure shows the end of the binary's log if the benchmark fails: its file goes with
// the benchmark's temporary directory.
func logOnFailure(b *testing.B, proc *measure.Process) {
	b.Cleanup(func() {
		if !b.Failed() {
			return
		}
		out, _ := os.ReadFile(proc.Log)
		b.Logf("the end of %s:\n%s", proc.Log, out[max(0, len(out)-4096):])
	})
}

// perThousand is how much "of" (bytes, or a count) grows by per 1,000 nodes, from the
// smallest size to the largest.
func (r binaryBench) perThousand(of func(binaryRun) float64) float64 {
	first, last := r[0], r[len(r)-1]
	return (of(last) - of(first)) / float64(last.nodes-first.nodes) * 1000
}

func mib(bytes float64) float64 { return bytes / (1 << 20) }

func (r binaryBench) report(b *testing.B) {
	for _, run := range r {
		b.ReportMetric(run.rss/(1<<20), fmt.Sprintf("process-peak-RSS-MiB-%d", run.nodes))
		b.ReportMetric(run.complete.Seconds(), fmt.Sprintf("process-complete-s-%d", run.nodes))
		b.ReportMetric(run.cpu, fmt.Sprintf("process-cpu-s-%d", run.nodes))
	}
	b.ReportMetric(r.perThousand(func(run binaryRun) float64 { return mib(run.rss) }), "process-RSS-MiB/1000-nodes")
	b.ReportMetric(r.perThousand(func(run binaryRun) float64 { return run.goroutines }), "process-goroutines/1000-nodes")
}

func (r binaryBench) print() {
	for _, run := range r {
		fmt.Printf("wireguard: binary, %d nodes: device complete after %.2f s, peak RSS %.1f MiB, %.2f s of CPU; then %.0f goroutines, heap in use %.1f MiB, stacks %.1f MiB\n",
			run.nodes, run.complete.Seconds(), mib(run.rss), run.cpu, run.goroutines, mib(run.heap), mib(run.stacks))
	}
	fmt.Printf("wireguard: binary, per 1,000 nodes (%d -> %d): peak RSS +%.1f MiB, goroutines +%.0f, heap +%.1f MiB, stacks +%.1f MiB\n",
		r[0].nodes, r[len(r)-1].nodes,
		r.perThousand(func(run binaryRun) float64 { return mib(run.rss) }),
		r.perThousand(func(run binaryRun) float64 { return run.goroutines }),
		r.perThousand(func(run binaryRun) float64 { return mib(run.heap) }),
		r.perThousand(func(run binaryRun) float64 { return mib(run.stacks) }))
}
