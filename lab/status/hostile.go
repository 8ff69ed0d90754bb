package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// The hostile remote's part of the status (lab/scenarios runs the scenario): while its objects
// exist in the remote, the refusals every controller counts.

// RefusalCount is a count of refusals (or of what was left out over a limit) of one component
// in one cluster, summed over its pods.
type RefusalCount struct {
	Cluster, Component, Remote, Reason string
	Value                              float64
	Pods                               int
}

// OverLimit is the Reason of an over_limit gauge's what.
func OverLimit(what string) string { return "over_limit:" + what }

// refusalSamples maps each metric of refusals to its component and the label that says why.
var refusalSamples = map[string]struct{ component, label, prefix string }{
	"semaphore_service_mirror_refused_addresses_total": {ownership.ServiceMirror, "reason", ""},
	"semaphore_service_mirror_over_limit":              {ownership.ServiceMirror, "what", "over_limit:"},
	"semaphore_policy_refused_addresses_total":         {ownership.Policy, "reason", ""},
	"semaphore_policy_over_limit":                      {ownership.Policy, "what", "over_limit:"},
	"semaphore_wg_skipped_peers":                       {ownership.WireGuard, "reason", ""},
}

// Refusals scrapes every controller and sums its refusals by cluster, component,
// remote and reason; skipped peers that are merely not annotated are no refusal.
func Refusals(ctx context.Context, rec *layout.Record) ([]RefusalCount, error) {
	type key struct{ cluster, component, remote, reason string }
	sums := map[key]*RefusalCount{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for _, c := range rec.Controllers {
		wg.Go(func() {
			ss, err := Scrape(ctx, c.Admin, "semaphore_", 5*time.Second)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", c.Component, c.Where(), err))
				return
			}
			for _, s := range ss {
				m, ok := refusalSamples[s.Name]
				if !ok || s.Value == 0 || (s.Name == "semaphore_wg_skipped_peers" && s.Labels["reason"] == peers.ReasonNotAnnotated) {
					continue
				}
				k := key{c.Cluster, m.component, s.Labels["remote"], m.prefix + s.Labels[m.label]}
				if sums[k] == nil {
					sums[k] = &RefusalCount{Cluster: k.cluster, Component: k.component, Remote: k.remote, Reason: k.reason}
				}
				sums[k].Value += s.Value
				sums[k].Pods++
			}
		})
	}
	wg.Wait()
	out := make([]RefusalCount, 0, len(sums))
	for _, r := range sums {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Cluster+a.Component+a.Remote+a.Reason < b.Cluster+b.Component+b.Remote+b.Reason
	})
	return out, errors.Join(errs...)
}

// hostileStatus is the status part of the hostile remote: while the scenario's objects exist
// in the remote, the refusals every controller counts.
type hostileStatus struct {
	// present tells whether the scenario's objects exist; nodes is how many fake Nodes.
	present  bool
	nodes    int
	refusals []RefusalCount
	err      error
}

func (s *hostileStatus) collect(ctx context.Context, rec *layout.Record) {
	if rec.Nodes == nil || rec.NodesSkipped() {
		return
	}
	i := slices.IndexFunc(rec.Clusters, func(c layout.ClusterRecord) bool { return c.Name == layout.HostileRemote })
	if i < 0 {
		return
	}
	client, err := clientsetOf(rec.Clusters[i].DirectKubeconfig)
	if err != nil {
		return
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: layout.HostileLabel + "=true"})
	if err != nil {
		return
	}
	_, nsErr := client.CoreV1().Namespaces().Get(ctx, layout.HostileNamespace, metav1.GetOptions{})
	if s.nodes, s.present = len(nodes.Items), len(nodes.Items) > 0 || nsErr == nil; s.present {
		s.refusals, s.err = Refusals(ctx, rec)
	}
}

// problems: none; lab check asserts what the scenario must show (checkHostileRemote).
func (s *hostileStatus) problems(*layout.Record) []string { return nil }

func (s *hostileStatus) print(w io.Writer, _ *layout.Record) {
	if !s.present {
		return
	}
	section(w, fmt.Sprintf("Hostile remote (lab check's scenario: %s towards %s, %d fake Nodes and namespace %s in %s): refusals by cluster, component, remote and reason",
		layout.HostileRemote, layout.HostileConsumer, s.nodes, layout.HostileNamespace, layout.HostileRemote))
	s.printCounts(w)
}

// printCounts prints the counts, a row each; semaphore-wireguard's are summed over the
// cluster's agents, each of which skips each node.
func (s *hostileStatus) printCounts(w io.Writer) {
	tw := table(w)
	fmt.Fprintf(tw, "  cluster\tcomponent\tremote\treason\tcount\tpods\n")
	for _, r := range s.refusals {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%.0f\t%d\n", r.Cluster, r.Component, r.Remote, r.Reason, r.Value, r.Pods)
	}
	tw.Flush()
	if len(s.refusals) == 0 {
		fmt.Fprintln(w, "  (no refusal counted)")
	} else {
		fmt.Fprintln(w, "  (refused addresses since each pod started; over_limit: Services or sets left out now;\n"+
			"   semaphore-wireguard: nodes skipped now, summed over the cluster's agents)")
	}
	if s.err != nil {
		fmt.Fprintf(w, "  error: %v\n", s.err)
	}
}

// PrintRefusals prints every count of refusals the controllers show now.
func PrintRefusals(ctx context.Context, w io.Writer, rec *layout.Record) {
	s := &hostileStatus{present: true}
	s.refusals, s.err = Refusals(ctx, rec)
	s.printCounts(w)
}
