package soak

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/scenarios/observe"
)

// churn changes the clusters until d has passed, cutting remotes and deleting controller pods
// on the way.
func (s *soakRun) churn(ctx context.Context, d time.Duration) {
	start := time.Now()
	nextCut, nextKill := start.Add(soakCutEvery/2), start.Add(soakKillEvery/2)
	var restore func()
	var restoreAt time.Time
	cuts, kills := 0, 0
	tick := time.NewTicker(soakChurnEvery)
	defer tick.Stop()
	for time.Since(start) < d && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		now := time.Now()
		if restore != nil && now.After(restoreAt) {
			restore()
			restore = nil
		}
		if restore == nil && now.After(nextCut) {
			remote := layout.ClusterNames()[cuts%len(layout.ClusterSpecs)]
			restore, restoreAt = s.cut(remote), now.Add(soakCutFor)
			cuts++
			nextCut = nextCut.Add(soakCutEvery)
		}
		if now.After(nextKill) {
			s.kill(ctx, kills)
			kills++
			nextKill = nextKill.Add(soakKillEvery)
		}
		s.change(ctx)
	}
	if restore != nil {
		restore()
	}
}

// cut drops, on the lab's internet, the packets of every other cluster (their public
// addresses: nodes and pods leave their networks translated) to remote's API server at its
// published address, and returns what restores them.
func (s *soakRun) cut(remote string) (restore func()) {
	api := layout.SpecOf(remote).PublicAPIAddr
	var rules [][]string
	for _, other := range layout.RemotesOf(remote) {
		for _, src := range layout.PublicAddrs(layout.SpecOf(other), s.l.Record().Nodes.Nodes) {
			rules = append(rules, []string{"INPUT", "-s", src, "-d", api, "-j", "DROP"})
		}
	}
	var added [][]string
	for _, r := range rules {
		if err := internetIptables(append([]string{"-I"}, r...)...); err != nil {
			s.problem("cutting %s: %v", remote, err)
			continue
		}
		added = append(added, r)
	}
	s.count("remote cuts")
	s.l.Logf("soak: %s cut off from %s", remote, strings.Join(layout.RemotesOf(remote), " and "))
	return func() {
		for _, r := range added {
			if err := internetIptables(append([]string{"-D"}, r...)...); err != nil {
				s.problem("restoring %s: %v", remote, err)
			}
		}
		s.l.Logf("soak: %s restored", remote)
	}
}

// internetIptables runs iptables in the lab's internet.
func internetIptables(args ...string) error {
	out, err := exec.Command("ip", append([]string{"netns", "exec", layout.InternetNetns, "iptables", "-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// createWorkloads creates soakApp and soakBatch in every cluster.
func (s *soakRun) createWorkloads(ctx context.Context) error {
	for _, name := range layout.ClusterNames() {
		c := s.l.Cluster(name)
		for _, w := range []struct {
			name     string
			replicas int32
		}{{soakApp, 2}, {soakBatch, 1}} {
			ctr := s.l.SampleContainer(w.name, "serve", "-listen", fmt.Sprintf(":%d", soakPort))
			ctr.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: soakPort, Protocol: corev1.ProtocolTCP}}
			ctr.ReadinessProbe = &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
				PeriodSeconds: 1,
			}
			if err := s.l.CreateSampleDeployment(ctx, c, soakNamespace, w.name, w.replicas, map[string]string{layout.PolicyLabel: w.name}, nil, ctr); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}

// change makes one random change in a random cluster.
func (s *soakRun) change(ctx context.Context) {
	cluster := layout.ClusterNames()[s.rng.IntN(len(layout.ClusterSpecs))]
	c := s.l.Cluster(cluster).Client
	var what string
	var err error
	switch op := s.rng.IntN(6); {
	case op == 0:
		what, err = "scales", s.scale(ctx, cluster, soakApp, 1+s.rng.Int32N(3))
	case op == 1:
		what, err = "scales", s.scale(ctx, cluster, soakBatch, s.rng.Int32N(3))
	case op == 2 && len(s.services[cluster]) < soakMaxServices:
		s.serial++
		name := fmt.Sprintf("soak-%d", s.serial)
		svc := soakService(name, map[string]string{layout.MirrorLabel: "true"})
		if _, err = c.CoreV1().Services(soakNamespace).Create(ctx, svc, metav1.CreateOptions{}); err == nil {
			s.services[cluster] = append(s.services[cluster], name)
		}
		what = "mirrored Services created"
	case (op == 2 || op == 3) && len(s.services[cluster]) > 0:
		i := s.rng.IntN(len(s.services[cluster]))
		err = c.CoreV1().Services(soakNamespace).Delete(ctx, s.services[cluster][i], metav1.DeleteOptions{})
		s.services[cluster] = slices.Delete(s.services[cluster], i, i+1)
		what = "mirrored Services deleted"
	case op == 4 && len(s.services[cluster]) > 0:
		name := s.services[cluster][s.rng.IntN(len(s.services[cluster]))]
		patch := fmt.Appendf(nil, `{"spec":{"ports":[{"name":"http","port":%d,"targetPort":"http","protocol":"TCP"}]}}`, 8000+s.rng.IntN(1000))
		// A merge patch replaces the list (a strategic one would add a port, keyed by number).
		_, err = c.CoreV1().Services(soakNamespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		what = "mirrored Services changed"
	case op == 5:
		what, err = s.toggleGlobal(ctx, cluster)
	default:
		return
	}
	s.count(what)
	if err != nil {
		s.problem("%s: %s: %v", cluster, what, err)
	}
}

// scale sets the replicas of workload in cluster.
func (s *soakRun) scale(ctx context.Context, cluster, workload string, replicas int32) error {
	return observe.ScaleDeployment(ctx, s.l.Cluster(cluster).Client, soakNamespace, workload, replicas)
}

// toggleGlobal creates one of the global services in cluster, or deletes it when the cluster
// has it.
func (s *soakRun) toggleGlobal(ctx context.Context, cluster string) (string, error) {
	c := s.l.Cluster(cluster).Client
	name := fmt.Sprintf("soak-global-%d", s.rng.IntN(soakGlobals))
	if i := slices.Index(s.globals[cluster], name); i >= 0 {
		s.globals[cluster] = slices.Delete(s.globals[cluster], i, i+1)
		return "global Services deleted", c.CoreV1().Services(soakNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	}
	svc := soakService(name, map[string]string{global.LabelGlobalService: "true"})
	if _, err := c.CoreV1().Services(soakNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return "global Services created", err
	}
	s.globals[cluster] = append(s.globals[cluster], name)
	return "global Services created", nil
}

// soakService is a Service of soakApp's pods labelled with extra.
func soakService(name string, extra map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: extra},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app.kubernetes.io/name": soakApp},
			Ports:    []corev1.ServicePort{{Name: "http", Port: soakPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
		},
	}
}
