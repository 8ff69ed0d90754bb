package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/internal/component"
	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// goRuntime is what a controller's Go runtime runs with, from its metrics, next to the memory
// limit of its container, from its pod.
type goRuntime struct {
	gcPercent, softLimit float64 // go_gc_gogc_percent, go_gc_gomemlimit_bytes
	containerLimit       int64   // bytes; 0 for none
}

// readGoRuntime reads c's runtime settings and its container's memory limit.
func readGoRuntime(ctx context.Context, st *State, c ControllerState) (goRuntime, error) {
	var r goRuntime
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	samples, err := testbed.Scrape(sctx, http.DefaultClient, "http://"+c.Admin+"/metrics", "go_gc_")
	if err != nil {
		return r, err
	}
	r.gcPercent, _ = testbed.SampleSum(samples, "go_gc_gogc_percent", nil)
	r.softLimit, _ = testbed.SampleSum(samples, "go_gc_gomemlimit_bytes", nil)
	i := slices.IndexFunc(st.Clusters, func(cl ClusterState) bool { return cl.Name == c.Cluster })
	if i < 0 {
		return r, fmt.Errorf("no cluster %s", c.Cluster)
	}
	client, err := clientsetOf(st.Clusters[i].DirectKubeconfig)
	if err != nil {
		return r, err
	}
	pod, err := client.CoreV1().Pods(semaphoreNamespace).Get(sctx, c.PodName, metav1.GetOptions{})
	if err != nil {
		return r, err
	}
	if len(pod.Spec.Containers) != 1 {
		return r, errors.New("the pod does not have one container")
	}
	if q, ok := pod.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]; ok {
		r.containerLimit = q.Value()
	}
	return r, nil
}

// problem says how r differs from what a component sets by itself (component.tuneGC): the
// collector at DefaultGCPercent, a soft limit of MemoryLimitShare of the container's limit.
func (r goRuntime) problem() string {
	if r.gcPercent != component.DefaultGCPercent {
		return fmt.Sprintf("GOGC is %v, want %d", r.gcPercent, component.DefaultGCPercent)
	}
	if r.containerLimit == 0 {
		return ""
	}
	if want := int64(float64(r.containerLimit) * component.MemoryLimitShare); int64(r.softLimit) != want {
		return fmt.Sprintf("the soft memory limit is %.0f bytes, want %d (%.0f%% of the container's %d)",
			r.softLimit, want, 100*component.MemoryLimitShare, r.containerLimit)
	}
	return ""
}

func (r goRuntime) String() string {
	if r.containerLimit == 0 {
		return fmt.Sprintf("GOGC %.0f, no memory limit", r.gcPercent)
	}
	return fmt.Sprintf("GOGC %.0f, soft limit %.0f MiB of %d MiB", r.gcPercent, r.softLimit/(1<<20), r.containerLimit>>20)
}
