package status

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// ControllerStatus is one controller's readiness.
type ControllerStatus struct {
	layout.Controller
	Ready  bool
	Detail string // the failing checks of /readyz, or the error reaching it
	// Leader tells whether the pod holds its Lease (with Lease set).
	Leader bool
	// Runtime is what its Go runtime runs with, when it could be read (RuntimeErr otherwise).
	Runtime    goRuntime
	RuntimeErr error
}

// controllersStatus is the readiness of every controller the lab runs, and which holds its
// Lease.
type controllersStatus struct {
	controllers []ControllerStatus // as rec.Controllers
}

func (c *controllersStatus) collect(ctx context.Context, rec *layout.Record) {
	c.controllers = make([]ControllerStatus, len(rec.Controllers))
	var wg sync.WaitGroup
	for i, ctl := range rec.Controllers {
		wg.Go(func() {
			c.controllers[i] = readiness(ctx, ctl)
			c.controllers[i].Runtime, c.controllers[i].RuntimeErr = readGoRuntime(ctx, ctl)
		})
	}
	// Each Lease once, however many replicas compete for it.
	var leases [][2]string // cluster, lease
	for _, ctl := range rec.Controllers {
		if key := [2]string{ctl.Cluster, ctl.Lease}; ctl.Lease != "" && !slices.Contains(leases, key) {
			leases = append(leases, key)
		}
	}
	var mu sync.Mutex
	holders := map[[2]string]string{}
	for _, key := range leases {
		wg.Go(func() {
			h := LeaseHolder(ctx, rec, key[0], key[1])
			mu.Lock()
			defer mu.Unlock()
			holders[key] = h
		})
	}
	wg.Wait()
	for i, ctl := range rec.Controllers {
		c.controllers[i].Leader = ctl.Lease != "" && holders[[2]string{ctl.Cluster, ctl.Lease}] == ctl.PodName
	}
}

// problems: every controller runs in every cluster, is ready, and exactly one replica of each
// that elects a leader leads. Without nodes no controller runs, and that is no problem.
func (c *controllersStatus) problems(rec *layout.Record) []string {
	if rec.NodesSkipped() {
		return nil
	}
	var problems []string
	for _, component := range []string{ownership.ServiceMirror, ownership.Policy} {
		for _, cluster := range layout.ClusterNames() {
			if !slices.ContainsFunc(rec.Controllers, func(ctl layout.Controller) bool {
				return ctl.Component == component && ctl.Cluster == cluster
			}) {
				problems = append(problems, fmt.Sprintf("%s does not run in %s", component, cluster))
			}
		}
	}
	leaders := map[string]int{}
	for _, ctl := range c.controllers {
		if !ctl.Ready {
			problems = append(problems, fmt.Sprintf("%s %s is not ready: %s", ctl.Component, ctl.Where(), ctl.Detail))
		}
		if ctl.RuntimeErr != nil {
			problems = append(problems, fmt.Sprintf("%s %s: its Go runtime's settings: %v", ctl.Component, ctl.Where(), ctl.RuntimeErr))
		} else if p := ctl.Runtime.problem(); p != "" {
			problems = append(problems, fmt.Sprintf("%s %s: %s", ctl.Component, ctl.Where(), p))
		}
		if ctl.Lease != "" && ctl.Leader {
			leaders[ctl.Component+" in "+ctl.Cluster]++
		}
	}
	for _, ctl := range c.controllers {
		if ctl.Lease != "" && leaders[ctl.Component+" in "+ctl.Cluster] != 1 {
			problems = append(problems, fmt.Sprintf("%s in %s has %d leaders, want 1", ctl.Component, ctl.Cluster, leaders[ctl.Component+" in "+ctl.Cluster]))
			leaders[ctl.Component+" in "+ctl.Cluster] = 1 // once
		}
	}
	return problems
}

func (c *controllersStatus) print(w io.Writer, _ *layout.Record) {
	section(w, "Controllers")
	tw := table(w)
	for _, ctl := range c.controllers {
		ready := "ready"
		if !ctl.Ready {
			ready = "NOT READY (" + ctl.Detail + ")"
		}
		// A DaemonSet's controller is one per node: the node's name says its cluster too.
		where := ctl.Cluster
		if ctl.Node != "" {
			where = ctl.Node
		}
		if ctl.Lease != "" {
			if ctl.Leader {
				ready += ", leader"
			} else {
				ready += ", standby"
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\thttp://%s/metrics\tlog %s\n", ctl.Component, where, ctl.PodName, ready, ctl.Runtime, ctl.Admin, ctl.Log)
	}
	tw.Flush()
}

// readiness asks a controller's /readyz.
func readiness(ctx context.Context, c layout.Controller) ControllerStatus {
	s := ControllerStatus{Controller: c}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Admin+"/readyz", nil)
	if err != nil {
		s.Detail = err.Error()
		return s
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.Detail = err.Error()
		return s
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	s.Ready = resp.StatusCode == http.StatusOK
	if !s.Ready {
		var failed []string
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "[-]") {
				failed = append(failed, strings.TrimPrefix(line, "[-]"))
			}
		}
		s.Detail = fmt.Sprintf("/readyz %d: %s", resp.StatusCode, strings.Join(failed, "; "))
	}
	return s
}

// LeaseHolder is the holder of Lease lease in cluster's semaphore namespace ("" when it cannot
// be read).
func LeaseHolder(ctx context.Context, rec *layout.Record, cluster, lease string) string {
	i := slices.IndexFunc(rec.Clusters, func(cl layout.ClusterRecord) bool { return cl.Name == cluster })
	if i < 0 {
		return ""
	}
	client, err := clientsetOf(rec.Clusters[i].DirectKubeconfig)
	if err != nil {
		return ""
	}
	l, err := client.CoordinationV1().Leases(layout.SemaphoreNamespace).Get(ctx, lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
