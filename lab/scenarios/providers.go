package scenarios

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// largeBody is the body posted between providers: far larger than any path's MTU, so that it
// arrives only if packets of the WireGuard devices' full size cross every path.
const largeBody = 64 << 10

// checkProviders checks the mesh across the providers' networks (docs/lab.md): from an echo pod
// in every cluster, a 64 KiB POST to an echo pod in every other cluster succeeds, through
// both NATs between the clouds and, to and from merit, through the tunnel merit's nodes keep
// open (nothing reaches them otherwise); meanwhile the internet carries WireGuard packets and
// never a pod's address in clear.
func checkProviders(ctx context.Context, l *env.Lab) []string {
	if !l.NodesRun() {
		return nil
	}
	fmt.Fprintf(l.Out(), "Between providers (a %d KiB POST from an echo pod of each cluster to one of each other cluster)\n", largeBody>>10)
	before, err := layout.ReadInternetCounters()
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	rec := l.Record()
	for _, from := range layout.ClusterNames() {
		for _, to := range layout.RemotesOf(from) {
			took, err := postBetween(ctx, rec, from, to)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s -> %s: %v", from, to, err))
				fmt.Fprintf(l.Out(), "  %-6s -> %-6s FAILED: %v\n", from, to, err)
				continue
			}
			fmt.Fprintf(l.Out(), "  %-6s -> %-6s %d bytes received in %v\n", from, to, largeBody, took.Round(time.Millisecond))
		}
	}
	after, err := layout.ReadInternetCounters()
	if err != nil {
		return append(problems, err.Error())
	}
	fmt.Fprintf(l.Out(), "  the internet carried %d WireGuard packets meanwhile, %d with a pod's address in clear since the lab started\n",
		after.WireGuard-before.WireGuard, after.Cleartext)
	if after.WireGuard <= before.WireGuard {
		problems = append(problems, "the internet carried no WireGuard packet while the pods posted to each other")
	}
	if after.Cleartext > 0 {
		problems = append(problems, fmt.Sprintf("the internet carried %d packets with a pod's address (%s) in clear", after.Cleartext, layout.PodsCIDR))
	}
	return problems
}

// postBetween posts largeBody from inside an echo pod of cluster from to an echo pod of
// cluster to, by its address, and checks that all of it arrived. A tunnel not up yet (merit's,
// until its next keepalive) is given a few tries.
func postBetween(ctx context.Context, rec *layout.Record, from, to string) (time.Duration, error) {
	src, dst := echoPod(rec, from), echoPod(rec, to)
	if src == nil || dst == nil {
		return 0, fmt.Errorf("no echo pod in %s or %s", from, to)
	}
	netns, err := testbed.PodNetns(src.UID)
	if err != nil {
		return 0, err
	}
	client := testbed.HTTPClientInNetns(netns)
	url := "http://" + net.JoinHostPort(dst.IP, strconv.Itoa(int(layout.GlobalPort))) + "/"
	want := fmt.Sprintf("received %d bytes", largeBody)
	var last error
	for attempt := 0; attempt < 6; attempt++ {
		start := time.Now()
		reply, err := post(ctx, client, url)
		if err == nil && strings.Contains(reply, want) {
			return time.Since(start), nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("answered %q, want %q", reply, want)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	return 0, fmt.Errorf("%s/%s (%s) to %s/%s (%s): %w", from, src.Name, src.IP, to, dst.Name, dst.IP, last)
}

// post sends largeBody to url and returns the answer's body.
func post(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(strings.Repeat("x", largeBody)))
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, body)
	}
	return string(body), err
}

// echoPod is a pod of the global service's echo in cluster, or nil.
func echoPod(rec *layout.Record, cluster string) *layout.Pod {
	for i, p := range rec.Pods {
		if p.Cluster == cluster && p.App == layout.GlobalName && p.IP != "" {
			return &rec.Pods[i]
		}
	}
	return nil
}
