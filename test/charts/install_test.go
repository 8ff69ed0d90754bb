package charts_test

import (
	"path/filepath"
	"testing"
)

// Both charts install through the Helm SDK into real API servers, every object they render is
// accepted (strictly: no field the API does not know), and uninstalling removes them all: the
// umbrella's `all` scenario (every component, monitoring on one by one) and its `monitoring`
// scenario (monitoring switched on once, PodMonitors) in gcp, which serves the Prometheus
// Operator's CRDs from the fixtures, and semaphore-remote's several-consumers scenario in aws.
func TestInstallUninstall(t *testing.T) {
	aws, gcp := clusters(t)
	tests := []struct {
		name     string
		cluster  string
		chart    string
		scenario string
		// values go over the scenario's.
		values string
		// kinds that must be among the installed objects.
		kinds []string
	}{
		{
			name: "semaphore/all", cluster: "gcp", chart: umbrellaChart, scenario: "all",
			kinds: []string{"Deployment", "DaemonSet", "ServiceMonitor", "PodDisruptionBudget", "Secret", "Role", "ClusterRole"},
		},
		{
			name: "semaphore/monitoring", cluster: "gcp", chart: umbrellaChart, scenario: "monitoring",
			// The all scenario's mirror namespace is left Terminating: no namespace controller runs here.
			values: "serviceMirror: {mirrorNamespace: {name: semaphore-ci-monitoring}}",
			kinds:  []string{"PodMonitor", "PrometheusRule", "ConfigMap"},
		},
		{
			name: "semaphore-remote/several-consumers", cluster: "aws", chart: remoteChart, scenario: "several-consumers",
			kinds: []string{"ServiceAccount", "Secret", "ClusterRole", "ClusterRoleBinding"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := gcp
			if tt.cluster == "aws" {
				c = aws
			}
			// Names of their own, so as not to meet the least-privilege test's releases.
			const name, namespace = "ci", "semaphore-ci"
			vals := valuesOf(t, []string{filepath.Join(tt.chart, "ci", tt.scenario+"-values.yaml")}, tt.values)
			m := install(t, c, tt.chart, name, namespace, vals)
			kinds := m.Kinds()
			t.Logf("installed %d objects: %v", len(m.Objects), kinds)
			for _, k := range tt.kinds {
				if kinds[k] == 0 {
					t.Errorf("no %s installed", k)
				}
			}
			checkInstalled(t, c, m, name, namespace)
			uninstall(t, c, name, namespace)
			checkUninstalled(t, c, m, name, namespace)
		})
	}
}
