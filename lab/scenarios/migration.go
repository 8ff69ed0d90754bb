package scenarios

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcscontroller"
	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/podlog"
	"github.com/kube-semaphore/semaphore/lab/scenarios/observe"
)

// migrationSettle is how long each step of the migration may take to show.
const migrationSettle = time.Minute

// checkMigration moves the lab's global service to the Multi-Cluster Services API as
// docs/mcs.md says, while its client sends a request every GlobalInterval: echo is exported in
// every cluster (asking for local-first routing with trafficDistribution PreferSameZone); once
// GlobalCluster imports it from all of them, the client is rolled to
// echo.sys-log.svc.clusterset.local; then the global label goes from echo in every cluster, and
// the global Service with it. Not one of the client's requests may fail meanwhile. Then the
// global service's failover check runs again, through the import. At the end echo is labelled
// global again, for the scenarios after this one.
func checkMigration(ctx context.Context, l *env.Lab) []string {
	rec := l.Record()
	fmt.Fprintf(l.Out(), "From a global service to a ServiceExport (%s/%s, %s's %s sending every %s)\n",
		layout.SampleNamespace, layout.GlobalName, layout.GlobalCluster, layout.GlobalClientName, layout.GlobalInterval)
	if rec.NodesSkipped() {
		fmt.Fprintf(l.Out(), "  skipped: %s\n", rec.Nodes.Skipped)
		return nil
	}
	m := &migration{l: l, start: time.Now(), clients: rec.PodsOf(layout.GlobalCluster, layout.GlobalClientName)}
	for _, step := range []func(context.Context) error{m.preferSameZone, m.export, m.rollClient, m.dropGlobal} {
		if err := step(ctx); err != nil {
			return []string{fmt.Sprintf("migration: %v", err)}
		}
	}
	if problems := m.failures(); len(problems) > 0 {
		return problems
	}
	// The import is local first, as the global service was: the same failover, through it.
	fmt.Fprintf(l.Out(), "  failover through the import (trafficDistribution PreferSameZone):\n")
	client := m.clients[len(m.clients)-1]
	l.ReplacePods(layout.GlobalCluster, layout.GlobalClientName, []layout.Pod{client})
	f, local, remote := echoFailover(l, client)
	problems, err := f.run(ctx, local, remote)
	if err != nil {
		problems = append(problems, fmt.Sprintf("failover through the import: %v", err))
	}
	if err := m.restoreGlobal(ctx); err != nil {
		problems = append(problems, fmt.Sprintf("migration: %v", err))
	}
	return problems
}

// restoreGlobal labels echo global again in every cluster, for the scenarios after this one and
// the lab's status, and waits until GlobalCluster's global Service is back; the client stays on
// the clusterset.local name.
func (m *migration) restoreGlobal(ctx context.Context) error {
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true",%q:%q}}}`, global.LabelGlobalService, global.LabelRoutingStrategy, global.LocalFirst)
	for _, name := range layout.ClusterNames() {
		services := m.l.Cluster(name).Client.CoreV1().Services(migrationKey.Namespace)
		if _, err := services.Patch(ctx, migrationKey.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("labelling %s global again in %s: %w", migrationKey, name, err)
		}
	}
	mirrors := m.l.Cluster(layout.GlobalCluster).Client.CoreV1().Services(layout.SemaphoreNamespace)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, migrationSettle, true, func(ctx context.Context) (bool, error) {
		_, err := mirrors.Get(ctx, global.ServiceName(layout.GlobalKey), metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the global Service %s is not back in %s %s after the label", global.ServiceName(layout.GlobalKey), layout.GlobalCluster, migrationSettle)
	}
	fmt.Fprintf(m.l.Out(), "  and back: echo labelled global again, its global Service back in %s (the client stays on clusterset.local)\n", layout.GlobalCluster)
	return nil
}

// preferSameZone asks for local-first routing of echo in every cluster the standard way, before
// it is exported: trafficDistribution PreferSameZone (the global service's routing strategy label
// says the same to the global Service).
func (m *migration) preferSameZone(ctx context.Context) error {
	patch := fmt.Appendf(nil, `{"spec":{"trafficDistribution":%q}}`, corev1.ServiceTrafficDistributionPreferSameZone)
	for _, name := range layout.ClusterNames() {
		services := m.l.Cluster(name).Client.CoreV1().Services(migrationKey.Namespace)
		if _, err := services.Patch(ctx, migrationKey.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("%s in %s: %w", migrationKey, name, err)
		}
	}
	return nil
}

// migration is the state of the migration check: when it began, the client's pods, old and
// new, and when the new pod's first request was served.
type migration struct {
	l        *env.Lab
	start    time.Time
	clients  []layout.Pod
	newFirst time.Time
}

// migrationOverlap is how long the old client pod goes on after the new one runs
// (minReadySeconds).
const migrationOverlap = 3 * time.Second

// migrationKey is the exported Service: the global service's.
var migrationKey = mcs.Key{Namespace: layout.GlobalKey.Namespace, Name: layout.GlobalKey.Name}

// export creates echo's ServiceExport in every cluster and waits until GlobalCluster imports it
// with the ready endpoints of all of them, each labelled with its cluster's ID (layout.ClusterID:
// merit's ClusterProperty, the others' names).
func (m *migration) export(ctx context.Context) error {
	for _, name := range layout.ClusterNames() {
		client, err := mcscontroller.NewClient(m.l.Cluster(name).Config)
		if err != nil {
			return err
		}
		se := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: migrationKey.Name, Namespace: migrationKey.Namespace}}
		if _, err := client.MulticlusterV1beta1().ServiceExports(migrationKey.Namespace).Create(ctx, se, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("exporting %s in %s: %w", migrationKey, name, err)
		}
	}
	var want []string
	for _, name := range layout.ClusterNames() {
		want = append(want, layout.ClusterID(name))
	}
	slices.Sort(want)
	exported := time.Now()
	slicesOf := m.l.Cluster(layout.GlobalCluster).Client.DiscoveryV1().EndpointSlices(migrationKey.Namespace)
	var from []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, migrationSettle, true, func(ctx context.Context) (bool, error) {
		list, err := slicesOf.List(ctx, metav1.ListOptions{LabelSelector: mcsv1beta1.LabelServiceName + "=" + migrationKey.Name})
		if err != nil {
			return false, nil //nolint:nilerr // the API server busy: asked again
		}
		from = readySources(list.Items)
		return slices.Equal(from, want), nil
	})
	if err != nil {
		return fmt.Errorf("%s imports %s from %v, want %v (the clusters' IDs), %s after the exports", layout.GlobalCluster, migrationKey, from, want, migrationSettle)
	}
	fmt.Fprintf(m.l.Out(), "  exported in %v: %s imports it from all of them, source clusters %v (their IDs), %s after the exports\n",
		layout.ClusterNames(), layout.GlobalCluster, from, time.Since(exported).Round(10*time.Millisecond))
	return nil
}

// readySources are the source clusters of imported slices that have a ready endpoint, sorted.
func readySources(list []discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range list {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				out = append(out, s.Labels[mcsv1beta1.LabelSourceCluster])
				break
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// rollClient points the client's Deployment at the clusterset.local name and waits until the
// new pod's requests are served and the old pod is gone.
func (m *migration) rollClient(ctx context.Context) error {
	client := m.l.Cluster(layout.GlobalCluster).Client
	url := fmt.Sprintf("http://%s.%s.svc.clusterset.local:%d/", migrationKey.Name, migrationKey.Namespace, layout.GlobalPort)
	deployments := client.AppsV1().Deployments(layout.SampleNamespace)
	d, err := deployments.Get(ctx, layout.GlobalClientName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	args := d.Spec.Template.Spec.Containers[0].Args
	i := slices.Index(args, "-url")
	if i < 0 || i+1 >= len(args) {
		return fmt.Errorf("%s's arguments %v have no -url", layout.GlobalClientName, args)
	}
	args[i+1] = url
	// A rollout even when the client already sends there (this check run again on one lab, with
	// -count): as kubectl rollout restart does it.
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = time.Now().Format(time.RFC3339Nano)
	// The old pod sends until the new one has run for a while, as a client's rollout would have
	// it (a readiness probe, minReadySeconds): a new pod's first request may fail while its own
	// network is being set up, which is its start, not the migration.
	d.Spec.MinReadySeconds = int32(migrationOverlap / time.Second)
	if _, err := deployments.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		return err
	}
	rolled := time.Now()
	pods := client.CoreV1().Pods(layout.SampleNamespace)
	pod, err := observe.WaitNewPod(ctx, pods, layout.GlobalClientName, m.clients, observe.PodRunning)
	if err != nil {
		return err
	}
	p := m.l.Record().PodOf(layout.GlobalCluster, pod)
	m.clients = append(m.clients, p)
	first, err := m.firstSuccess(ctx, p)
	if err != nil {
		return err
	}
	m.newFirst = first
	for _, old := range m.clients[:len(m.clients)-1] {
		if _, err := observe.WaitGone(ctx, pods, old.Name); err != nil {
			return err
		}
	}
	fmt.Fprintf(m.l.Out(), "  client rolled to %s: the new pod's first request served %s after the rollout began\n",
		url, first.Sub(rolled).Round(10*time.Millisecond))
	return nil
}

// firstSuccess waits for p's first request that did not fail, and returns its time.
func (m *migration) firstSuccess(ctx context.Context, p layout.Pod) (time.Time, error) {
	var first time.Time
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, migrationSettle, true, func(context.Context) (bool, error) {
		records, err := observe.ReadLog(p.Log)
		for _, r := range records {
			if r.Msg == "sent" && !r.Failed() {
				first = r.Time
				return true, nil
			}
		}
		return false, err
	})
	if err != nil {
		return first, fmt.Errorf("no request of %s served within %s: %w", p.Name, migrationSettle, err)
	}
	return first, nil
}

// dropGlobal removes the global label from echo in every cluster and waits until GlobalCluster's
// global Service is gone, then lets the client send for two more windows.
func (m *migration) dropGlobal(ctx context.Context) error {
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:null,%q:null}}}`, global.LabelGlobalService, global.LabelRoutingStrategy)
	for _, name := range layout.ClusterNames() {
		services := m.l.Cluster(name).Client.CoreV1().Services(migrationKey.Namespace)
		if _, err := services.Patch(ctx, migrationKey.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("unlabelling %s in %s: %w", migrationKey, name, err)
		}
	}
	dropped := time.Now()
	mirrors := m.l.Cluster(layout.GlobalCluster).Client.CoreV1().Services(layout.SemaphoreNamespace)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, migrationSettle, true, func(ctx context.Context) (bool, error) {
		_, err := mirrors.Get(ctx, global.ServiceName(layout.GlobalKey), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("the global Service %s is still in %s %s after the label went", global.ServiceName(layout.GlobalKey), layout.GlobalCluster, migrationSettle)
	}
	fmt.Fprintf(m.l.Out(), "  global label removed: %s's global Service gone %s later\n", layout.GlobalCluster, time.Since(dropped).Round(10*time.Millisecond))
	return observe.SleepUntil(ctx, time.Now().Add(2*globalWindow))
}

// failures reads every attempt of the client's pods since the start: none may have failed but
// the new pod's before its first success, its start, while the old pod still ran (it is kept
// migrationOverlap after the new one runs; its log goes with it, so it is not read again here).
func (m *migration) failures() []string {
	var attempts, failed, warmUp []podlog.Record
	for i, p := range m.clients {
		records, err := observe.ReadLog(p.Log)
		if err != nil {
			return []string{fmt.Sprintf("reading %s's log: %v", p.Name, err)}
		}
		isNew := i == len(m.clients)-1
		for _, r := range records {
			if r.Msg != "sent" || r.Time.Before(m.start) {
				continue
			}
			attempts = append(attempts, r)
			switch {
			case r.Failed() && isNew && r.Time.Before(m.newFirst):
				warmUp = append(warmUp, r)
			case r.Failed():
				failed = append(failed, r)
			}
		}
	}
	fmt.Fprintf(m.l.Out(), "  %d requests in %s, %d failed (and %d of the new pod's before its first success, while the old pod ran)\n",
		len(attempts), time.Since(m.start).Round(100*time.Millisecond), len(failed), len(warmUp))
	switch {
	case len(attempts) == 0:
		return []string{"migration: the client sent no request"}
	case len(failed) > 0:
		return []string{fmt.Sprintf("migration: %d of %d requests failed, the first at %s: %s %d", len(failed), len(attempts), failed[0].Time.Format(time.TimeOnly), failed[0].Err, failed[0].Status)}
	}
	return nil
}
