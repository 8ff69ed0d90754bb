package soak

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/promapi"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// check is one of the soak's checks after the churn: what it checks, and how.
type check struct {
	Name string
	Run  func(ctx context.Context, l *env.Lab) []string
}

// afterChurn are the soak's checks once the churn is over, in order: the mesh equals what the
// clusters hold (and again once the churn's objects are gone), `kubectl semaphore check`
// passes in every cluster, the lab's own status is healthy, the footprint is within bounds and
// the alerts are quiet. start is when the churn started, before the controllers' footprint
// then.
func (s *soakRun) afterChurn(start time.Time, before map[string]podFootprint) []check {
	return []check{
		{"workloads available again", s.settled},
		{"the mesh in sync with the churn's objects", func(ctx context.Context, l *env.Lab) []string {
			return inSync(ctx, l, "with the churn's objects")
		}},
		{"kubectl semaphore check", pluginPasses},
		{"the churn's objects removed", s.removeWorkloads},
		{"the mesh in sync without them", func(ctx context.Context, l *env.Lab) []string {
			return inSync(ctx, l, "once the churn's objects are deleted")
		}},
		{"lab status", healthyAgain},
		{"footprint", func(ctx context.Context, l *env.Lab) []string {
			return checkFootprint(ctx, l, before, time.Since(start))
		}},
		{"alerts", func(ctx context.Context, l *env.Lab) []string { return checkAlerts(ctx, l, time.Since(start)) }},
	}
}

// settled waits for every workload to be available after the churn, and finds the controllers
// again.
func (s *soakRun) settled(ctx context.Context, l *env.Lab) []string {
	var problems []string
	if err := l.WaitAvailable(ctx, soakSettle); err != nil {
		problems = append(problems, fmt.Sprintf("after the churn: %v", err))
	}
	if err := l.RediscoverControllers(ctx); err != nil {
		problems = append(problems, fmt.Sprintf("finding the controllers after the churn: %v", err))
	}
	return problems
}

// inSync waits until the mesh equals what the clusters hold, and says how long that took.
func inSync(ctx context.Context, l *env.Lab, when string) []string {
	start := time.Now()
	var drift []string
	var size meshSize
	var lastErr error
	_ = wait.PollUntilContextTimeout(ctx, 2*time.Second, soakConverge, true, func(ctx context.Context) (bool, error) {
		drift, size, lastErr = meshDrift(ctx, l)
		return lastErr == nil && len(drift) == 0, nil
	})
	switch {
	case lastErr != nil:
		return []string{fmt.Sprintf("comparing the mesh %s: %v", when, lastErr)}
	case len(drift) > 0:
		if len(drift) > 10 {
			drift = append(drift[:10], fmt.Sprintf("and %d more", len(drift)-10))
		}
		return []string{fmt.Sprintf("the mesh differs from what the clusters hold %s, %s on: %s", when, soakConverge, strings.Join(drift, "; "))}
	}
	fmt.Fprintf(l.Out(), "  every mirror, global service and network set equals what the clusters hold %s (%s; in sync after %s)\n",
		when, size, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// pluginPasses runs `kubectl semaphore check` in every cluster until it passes (the
// handshakes of a replaced wireguard pod may take a keepalive or two), for up to a minute.
func pluginPasses(ctx context.Context, l *env.Lab) []string {
	var problems []string
	for _, cluster := range layout.ClusterNames() {
		deadline := time.Now().Add(time.Minute)
		for {
			results, code, err := l.PluginCheck(ctx, cluster, false)
			if err == nil && code == 0 && len(env.FailedChecks(results)) == 0 {
				fmt.Fprintf(l.Out(), "  kubectl semaphore --context %s check: %d checks passed\n", cluster, len(results))
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				last := fmt.Sprintf("exit status %d, %v, failures: %s", code, err, strings.Join(env.FailedChecks(results), "; "))
				problems = append(problems, fmt.Sprintf("kubectl semaphore --context %s check after the soak: %s", cluster, last))
				break
			}
			time.Sleep(2 * time.Second)
		}
	}
	return problems
}

// removeWorkloads deletes the churn's namespace in every cluster, waits until it is gone, and
// records the pods again: the lab's status expects what the pods are now (aws's borrowed
// addresses among them).
func (s *soakRun) removeWorkloads(ctx context.Context, l *env.Lab) []string {
	var problems []string
	if err := deleteNamespace(ctx, l, soakNamespace); err != nil {
		problems = append(problems, fmt.Sprintf("removing the churn's objects: %v", err))
	}
	if err := l.RecordPods(ctx); err != nil {
		problems = append(problems, fmt.Sprintf("recording the pods after the churn: %v", err))
	}
	return problems
}

// deleteNamespace deletes namespace in every cluster and waits until it is gone.
func deleteNamespace(ctx context.Context, l *env.Lab, namespace string) error {
	for _, name := range layout.ClusterNames() {
		err := l.Cluster(name).Client.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, soakSettle, true, func(ctx context.Context) (bool, error) {
		for _, name := range layout.ClusterNames() {
			_, err := l.Cluster(name).Client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
}

// healthyAgain waits for the lab's status to be as good as after it came up.
func healthyAgain(ctx context.Context, l *env.Lab) []string {
	if _, problems := status.WaitReady(ctx, l.Record(), 2*time.Minute, l.Exited()); len(problems) > 0 {
		for i, p := range problems {
			problems[i] = "lab status after the soak: " + p
		}
		return problems
	}
	fmt.Fprintf(l.Out(), "  the lab's status is healthy again (mirrors, sets, global service, DNS, readiness, Prometheus targets)\n")
	return nil
}

// checkAlerts asks Prometheus which alerts fired over the last over (none may during the soak:
// every fault of the churn is shorter than an alert's for:), then waits for no alert to be
// pending or firing.
func checkAlerts(ctx context.Context, l *env.Lab, over time.Duration) []string {
	rec := l.Record()
	window := strconv.Itoa(int(over.Seconds())) + "s"
	var problems []string
	fired, err := promapi.Query(ctx, rec.Prometheus.URL, fmt.Sprintf(`max by (alertname, cluster) (max_over_time(ALERTS{alertstate="firing"}[%s]))`, window))
	if err != nil {
		problems = append(problems, fmt.Sprintf("alerts fired during the soak: %v", err))
	}
	for _, a := range fired {
		problems = append(problems, fmt.Sprintf("alert %s fired in %s during the soak", a.Metric["alertname"], a.Metric["cluster"]))
	}
	start := time.Now()
	var active []string
	_ = wait.PollUntilContextTimeout(ctx, 2*time.Second, soakQuiet, true, func(ctx context.Context) (bool, error) {
		active = status.ActiveAlerts(ctx, rec.Prometheus.URL)
		return len(active) == 0, nil
	})
	if len(active) > 0 {
		return append(problems, fmt.Sprintf("alerts not quiet %s after the soak: %s", soakQuiet, strings.Join(active, "; ")))
	}
	fmt.Fprintf(l.Out(), "  no alert fired during the soak; none pending or firing %s after it\n", time.Since(start).Round(time.Second))
	return problems
}
