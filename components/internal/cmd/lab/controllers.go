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
	for _, spec := range clusterSpecs {
		c, err := l.startController(ctx, component, binary, spec.Name)
		if err != nil {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
		started = append(started, c)
	}
	l.logf("started semaphore-%s in %s", component, strings.Join(clusterNames(), ", "))
	return nil
}

// startController runs the pod of component's Deployment in cluster's umbrella release as a
// process on this machine (podOf): the environment the chart renders and the identity of the
// chart's ServiceAccount. It gets nothing from the lab's environment, as in a pod. Its log is
// logs/<component>-<cluster>.log.
func (l *lab) startController(ctx context.Context, component, binary, cluster string) (*child, error) {
	pod, err := l.podOf(ctx, cluster, component, "")
	if err != nil {
		return nil, err
	}
	name := component + "-" + cluster
	log := l.path("logs", name+".log")
	c, err := l.startChild(name, binary, nil, pod.Env, log, false)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.state.Controllers = append(l.state.Controllers, ControllerState{
		Component: "semaphore-" + component,
		Cluster:   cluster,
		Admin:     pod.Admin,
		Log:       log,
		PID:       c.cmd.Process.Pid,
		Pod:       pod.Root,
	})
	l.mu.Unlock()
	l.saveState()
	return c, nil
}
