package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"
)

// startServiceMirrors runs semaphore-service-mirror for every cluster, mirroring the Services
// of all the other clusters into the semaphore namespace.
func (l *lab) startServiceMirrors(ctx context.Context) error {
	return l.startControllers(ctx, "service-mirror", l.bin.serviceMirror)
}

// startControllers runs one controller of component for every cluster (see startController),
// and stops them all when the lab goes down.
func (l *lab) startControllers(ctx context.Context, component, binary string) error {
	var started []*child
	l.onTeardown(func() {
		stopAll(started, syscall.SIGTERM, 10*time.Second)
		l.logf("stopped semaphore-%s", component)
	})
	replicas := 0
	for _, spec := range clusterSpecs {
		n, err := l.replicas(spec.Name, component)
		if err != nil {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
		for i := range n {
			c, err := l.startController(ctx, component, binary, spec.Name, i)
			if err != nil {
				return fmt.Errorf("%s: %w", spec.Name, err)
			}
			started = append(started, c)
		}
		replicas = n
	}
	l.logf("started semaphore-%s in %s (%d replicas each, as the chart's Deployment)", component, strings.Join(clusterNames(), ", "), replicas)
	return nil
}

// startController runs the replica-th pod of component's Deployment in cluster's umbrella
// release as a process on this machine (podOf): the environment the chart renders and the
// identity of the chart's ServiceAccount. It gets nothing from the lab's environment, as in a
// pod. Its log is logs/<component>-<cluster>-<replica>.log.
func (l *lab) startController(ctx context.Context, component, binary, cluster string, replica int) (*child, error) {
	pod, err := l.podOf(ctx, cluster, component, "", replica)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s-%s-%d", component, cluster, replica)
	log := l.path("logs", name+".log")
	c, err := l.startChild(name, binary, nil, pod.Env, log, false)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.state.Controllers = append(l.state.Controllers, ControllerState{
		Component:  "semaphore-" + component,
		Cluster:    cluster,
		Admin:      pod.Admin,
		Log:        log,
		PID:        c.cmd.Process.Pid,
		Pod:        pod.Root,
		PodName:    pod.Name,
		Kubeconfig: pod.Kubeconfig,
		RemotesDir: pod.RemotesDir,
		Lease:      pod.Lease,
	})
	l.mu.Unlock()
	l.saveState()
	return c, nil
}
