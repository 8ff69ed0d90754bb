package soak

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/scenarios/observe"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// soakVictims are the controllers the soak deletes a pod of, in turn: a cluster's component.
var soakVictims = []struct{ component, cluster string }{
	{"semaphore-service-mirror", "aws"}, {"semaphore-policy", "gcp"}, {layout.WireGuardComponent, "merit"},
	{"semaphore-service-mirror", "gcp"}, {"semaphore-policy", "merit"}, {layout.WireGuardComponent, "aws"},
	{"semaphore-service-mirror", "merit"}, {"semaphore-policy", "aws"}, {layout.WireGuardComponent, "gcp"},
}

// kill deletes the i-th victim's pod (the Lease holder when the component elects one) and, in
// the background, waits for its replacement and points the port forwards and Prometheus at it.
func (s *soakRun) kill(ctx context.Context, i int) {
	v := soakVictims[i%len(soakVictims)]
	rec := s.l.Record()
	var victim *layout.Controller
	for _, c := range rec.Controllers {
		if c.Component != v.component || c.Cluster != v.cluster {
			continue
		}
		if victim == nil || (c.Lease != "" && status.LeaseHolder(ctx, rec, c.Cluster, c.Lease) == c.PodName) {
			victim = &c
		}
	}
	if victim == nil {
		s.problem("no %s pod in %s to delete", v.component, v.cluster)
		return
	}
	client := s.l.Cluster(v.cluster).Client
	if err := client.CoreV1().Pods(layout.SemaphoreNamespace).Delete(ctx, victim.PodName, metav1.DeleteOptions{}); err != nil {
		s.problem("deleting %s's pod %s in %s: %v", v.component, victim.PodName, v.cluster, err)
		return
	}
	s.count("controller pods deleted")
	s.l.Logf("soak: deleted %s's pod %s in %s", v.component, victim.PodName, v.cluster)
	s.kills.Go(func() {
		start := time.Now()
		if victim.Lease != "" {
			s.waitTakeover(ctx, *victim)
		}
		err := wait.PollUntilContextTimeout(ctx, time.Second, soakSettle, true, func(ctx context.Context) (bool, error) {
			pod, err := client.CoreV1().Pods(layout.SemaphoreNamespace).Get(ctx, victim.PodName, metav1.GetOptions{})
			gone := apierrors.IsNotFound(err) || (err == nil && string(pod.UID) != victim.PodUID)
			return gone && observe.WorkloadPending(ctx, client, v.component) == "", nil
		})
		if err != nil {
			s.problem("%s in %s not back %s after its pod was deleted: %s", v.component, v.cluster, soakSettle, observe.WorkloadPending(ctx, client, v.component))
			return
		}
		s.l.Logf("soak: %s in %s back in %s", v.component, v.cluster, time.Since(start).Round(100*time.Millisecond))
		s.rediscover.Lock()
		defer s.rediscover.Unlock()
		if err := s.l.RediscoverControllers(ctx); err != nil {
			s.problem("finding the controllers again: %v", err)
		}
	})
}

// waitTakeover waits until another pod than victim holds victim's Lease, and says how long
// that took: the leader failover.
func (s *soakRun) waitTakeover(ctx context.Context, victim layout.Controller) {
	start := time.Now()
	holder := ""
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, soakSettle, true, func(ctx context.Context) (bool, error) {
		holder = status.LeaseHolder(ctx, s.l.Record(), victim.Cluster, victim.Lease)
		return holder != "" && holder != victim.PodName, nil
	})
	if err != nil {
		s.problem("%s in %s: no other pod took Lease %s within %s of its holder's deletion (holder %q)", victim.Component, victim.Cluster, victim.Lease, soakSettle, holder)
		return
	}
	s.l.Logf("soak: %s in %s: %s took the Lease in %s", victim.Component, victim.Cluster, holder, time.Since(start).Round(100*time.Millisecond))
}
