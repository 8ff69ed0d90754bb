package hostile

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/node"
	"github.com/kube-semaphore/semaphore/lab/scenarios/observe"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// floodAddrs are the endpoint of a flooded EndpointSlice at its i-th update: in the remote's
// range, so that the mirrors follow each one.
func floodAddrs(i int) []string {
	return []string{layout.AddrAdd(netip.MustParsePrefix(layout.SpecOf(layout.HostileRemote).PodCIDR).Addr(), 200+i%2).String()}
}

// floodResult counts the flood's updates, how often the consumers were looked at meanwhile,
// and the processor time the attacker used.
type floodResult struct {
	OK     int `json:"ok"`
	Failed int `json:"failed"`
	Looks  int `json:"-"`
	// CPU is what the remote's API server, its etcd and the flood's client used, in the share
	// they were held to.
	CPU time.Duration `json:"-"`
}

// FloodCommand is the hidden command of the flood's client (Flood): a process of its own, so
// that the lab can hold it to the hostile remote's CPU share with the remote's API server.
const FloodCommand = "_flood"

// hostileShares is the weight of the hostile remote's CPU share (cpu.shares): the least the
// kernel takes. The lab's three clusters share one machine's two processors; a remote on
// machines of its own floods at whatever rate they allow without taking a processor from its
// consumers' nodes and control planes. Held to the least share, the attacker (its API server,
// etcd and client, however many threads) runs on the time the others leave: all of it while
// they idle, next to none when they want it. A node's weight (1024) was tried first: the
// attacker still took a third of the machine, and one flood in fifteen failed a request.
const hostileShares = 2

// floodWatching floods the remote for d and meanwhile looks at the consumers again and again:
// nothing refused may reach them at any moment. It returns the problems seen, each once.
func (h *hostileRun) floodWatching(ctx context.Context, share *node.Share, d time.Duration) (floodResult, []string) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type outcome struct {
		r   floodResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := h.floodInShare(ctx, share, d)
		done <- outcome{r, err}
	}()
	var seen []string
	looks := 0
	for ctx.Err() == nil {
		looks++
		for _, p := range h.leaks(ctx, expectNoLeak) {
			if p = "during the flood: " + p; ctx.Err() == nil && !slices.Contains(seen, p) {
				seen = append(seen, p)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	o := <-done
	if o.err != nil {
		seen = append(seen, fmt.Sprintf("the flood: %v", o.err))
	}
	o.r.Looks = looks
	return o.r, seen
}

// holdToShare holds the remote's API server and etcd to the hostile remote's CPU share, where
// they stay for the whole scenario: while it writes the hostile objects (a burst of writes,
// some of 200 KiB), floods, and deletes them, as they would on machines of the remote's own.
// Closing the share lets them out.
func (h *hostileRun) holdToShare() (*node.Share, error) {
	share, err := node.NewShare("hostile-"+h.remote, hostileShares)
	if err != nil {
		return nil, fmt.Errorf("holding %s to a CPU share: %w", h.remote, err)
	}
	pids, err := h.l.APIServerProcesses(h.remote)
	if err == nil {
		for _, pid := range pids {
			if err = share.Add(pid); err != nil {
				break
			}
		}
	}
	if err != nil {
		return nil, errors.Join(err, share.Close())
	}
	return share, nil
}

// floodInShare runs the flood's client in the remote's share (holdToShare) for d, and returns
// what it did and the processor time the share (the client, the API server and etcd) used
// meanwhile.
func (h *hostileRun) floodInShare(ctx context.Context, share *node.Share, d time.Duration) (r floodResult, err error) {
	exe, err := os.Executable()
	if err != nil {
		return r, err
	}
	args := []string{FloodCommand, h.l.Cluster(h.remote).DirectKubeconfig, d.String(), layout.HostileNamespace}
	for _, n := range h.services {
		if strings.HasPrefix(n, "svc-") {
			args = append(args, n)
		}
	}
	// Not stopped with ctx: it stops by itself after d, and its count is wanted then.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), exe, args...)
	cmd.WaitDelay = time.Minute
	cmd.Stderr = os.Stderr
	start, err := cmd.StdinPipe()
	if err != nil {
		return r, err
	}
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		return r, err
	}
	used := share.Usage()
	// It floods once it is in the share: the line on its standard input says so.
	err = share.Add(cmd.Process.Pid)
	if err == nil {
		_, err = io.WriteString(start, "\n")
	}
	start.Close()
	if err != nil {
		_ = cmd.Process.Kill()
	}
	if err := errors.Join(err, cmd.Wait()); err != nil {
		return r, fmt.Errorf("the flood's client: %w", err)
	}
	r.CPU = share.Usage() - used
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		return r, fmt.Errorf("the flood's client printed %q: %w", out.String(), err)
	}
	return r, nil
}

// Flood is the flood's client, the hidden command FloodCommand. Its arguments are the
// remote's kubeconfig, how long to flood, the namespace and the EndpointSlices to update. It
// starts once a line comes on its standard input (the lab moves it into the hostile remote's
// CPU share first), prints its floodResult as JSON and returns its exit code.
func Flood(args []string) int {
	if len(args) < 4 {
		fmt.Fprintf(os.Stderr, "usage: lab %s KUBECONFIG DURATION NAMESPACE NAME...\n", FloodCommand)
		return 2
	}
	d, err := time.ParseDuration(args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab %s: %v\n", FloodCommand, err)
		return 2
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab %s: %v\n", FloodCommand, err)
		return 1
	}
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintf(os.Stderr, "lab %s: not told to start: %v\n", FloodCommand, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r, err := flood(ctx, cfg, args[2], args[3:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab %s: %v\n", FloodCommand, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		return 1
	}
	return 0
}

// flood updates the EndpointSlices names in namespace, one after the other, as fast as a
// client without a rate limit gets answers, until ctx is done.
func flood(ctx context.Context, cfg *rest.Config, namespace string, names []string) (floodResult, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1 // no client-side rate limit
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return floodResult{}, err
	}
	var r floodResult
	for i := 0; ctx.Err() == nil; i++ {
		patch := fmt.Appendf(nil, `{"endpoints":[{"addresses":[%q],"conditions":{"ready":true}}]}`, floodAddrs(i/len(names) + 1)[0])
		_, err := client.DiscoveryV1().EndpointSlices(namespace).Patch(ctx, names[i%len(names)], types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			r.OK++
		case ctx.Err() == nil:
			r.Failed++
		}
	}
	return r, nil
}

// trafficDuring compares the honest traffic during the flood with the traffic before the
// scenario, and returns the problems: a forwarder's request that failed during the flood, or
// none that fluentd logged, and whatever the lab's traffic part finds.
func (h *hostileRun) trafficDuring(rec *layout.Record, start, from, to time.Time) []string {
	forwarders := rec.PodsOf(layout.ForwarderCluster, layout.ForwarderName)
	var problems []string
	for _, s := range []struct {
		what string
		pods []layout.Pod
		// between tells whether the traffic goes to another cluster: the echo client's is
		// served by its own cluster's echo, local-first, and is shown only.
		between bool
	}{
		{fmt.Sprintf("%s/%s -> %s's %s", layout.ForwarderCluster, layout.ForwarderName, layout.FluentdCluster, layout.FluentdName), forwarders, true},
		{fmt.Sprintf("%s/%s -> %s (local-first)", layout.GlobalCluster, layout.GlobalClientName, layout.GlobalName), rec.PodsOf(layout.GlobalCluster, layout.GlobalClientName), false},
	} {
		before, err1 := observe.SenderStats(s.pods, start.Add(-hostileBaseline), start)
		during, err2 := observe.SenderStats(s.pods, from, to)
		if err := errors.Join(err1, err2); err != nil {
			problems = append(problems, fmt.Sprintf("reading the logs of %s: %v", s.what, err))
			continue
		}
		fmt.Fprintf(h.l.Out(), "  honest traffic %s: before, %s; during the flood, %s\n", s.what, before, during)
		if s.between && (during.Failed > 0 || during.Sent == 0) {
			problems = append(problems, fmt.Sprintf("honest traffic %s during the flood: %s", s.what, during))
		}
	}
	served := 0
	for _, f := range rec.PodsOf(layout.FluentdCluster, layout.FluentdName) {
		records, err := observe.ReadLog(f.Log)
		if err != nil {
			problems = append(problems, fmt.Sprintf("reading fluentd's log: %v", err))
		}
		for _, r := range records {
			if r.Msg == "request" && !r.Time.Before(from) && r.Time.Before(to) && slices.ContainsFunc(forwarders, func(p layout.Pod) bool { return p.IP == r.Client }) {
				served++
			}
		}
	}
	fmt.Fprintf(h.l.Out(), "  %s logged %d requests of the forwarders during the flood\n", layout.FluentdName, served)
	if served == 0 {
		problems = append(problems, fmt.Sprintf("%s logged no request of the forwarders during the flood", layout.FluentdName))
	}
	return append(problems, status.TrafficProblems(rec)...)
}
