package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startServiceMirrors runs semaphore-service-mirror for every cluster, mirroring the Services
// of all the other clusters into the semaphore namespace.
func (l *lab) startServiceMirrors(context.Context) error {
	return l.startControllers("service-mirror", l.bin.serviceMirror, []string{
		"SEMAPHORE_MIRROR_NAMESPACE=" + semaphoreNamespace,
	})
}

// startControllers runs one controller of component for every cluster (see startController),
// and stops them all when the lab goes down.
func (l *lab) startControllers(component, binary string, extraEnv []string) error {
	var started []*child
	l.onTeardown(func() {
		stopAll(started, syscall.SIGTERM, 10*time.Second)
		l.logf("stopped semaphore-%s", component)
	})
	for _, spec := range clusterSpecs {
		c, err := l.startController(component, binary, spec.Name, extraEnv)
		if err != nil {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
		started = append(started, c)
	}
	l.logf("started semaphore-%s in %s", component, strings.Join(clusterNames(), ", "))
	return nil
}

// startController runs one controller (component "service-mirror", "policy", ...) for
// cluster with the environment the umbrella chart gives it: the shared settings, leader
// election in the semaphore namespace, the pod's name, and the component's own settings in
// extraEnv. It gets nothing from the lab's environment, as in a pod. Its admin server listens
// on a free port on 127.0.0.1; its log is logs/<component>-<cluster>.log.
func (l *lab) startController(component, binary, cluster string, extraEnv []string) (*child, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	admin := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	name := component + "-" + cluster
	env := append([]string{
		"SEMAPHORE_LOCAL_CLUSTER=" + cluster,
		"SEMAPHORE_REMOTES=" + strings.Join(remotesOf(cluster), ","),
		"SEMAPHORE_REMOTES_DIR=" + l.remotesDir(cluster),
		// In a pod the controller uses its ServiceAccount; here it gets the cluster's admin
		// kubeconfig, the direct one: the proxy is for cutting remotes off.
		"SEMAPHORE_LOCAL_KUBECONFIG=" + l.clusters[cluster].DirectKubeconfig,
		"SEMAPHORE_ADMIN_ADDR=" + admin,
		"SEMAPHORE_LEADER_ELECT_NAMESPACE=" + semaphoreNamespace,
		// The chart sets these from the downward API.
		"POD_NAME=" + name,
		"POD_NAMESPACE=" + semaphoreNamespace,
	}, extraEnv...)
	log := l.path("logs", name+".log")
	c, err := l.startChild(name, binary, nil, env, log, false)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.state.Controllers = append(l.state.Controllers, ControllerState{
		Component: "semaphore-" + component,
		Cluster:   cluster,
		Admin:     admin,
		Log:       log,
		PID:       c.cmd.Process.Pid,
	})
	l.mu.Unlock()
	l.saveState()
	return c, nil
}
