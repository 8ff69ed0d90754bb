package charts_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The semaphore-wireguard pod template declares no ports, in any container, whatever the remotes
// and the admin port: on the host network the API server makes every declared port a host port,
// and the scheduler keeps a pod off a node where another pod holds the same host port, so a
// rollout's successor could never start beside its predecessor. The admin server and the
// WireGuard devices listen all the same (SEMAPHORE_ADMIN_ADDR, SEMAPHORE_WG_LISTEN_PORTS).
func TestWireGuardPodDeclaresNoHostPorts(t *testing.T) {
	tests := []struct {
		name string
		// own are wireguard values in YAML.
		own       []string
		wantAdmin int
	}{
		{name: "two remotes", wantAdmin: 8080},
		{name: "kernel, another admin port", own: []string{"mode: kernel", "adminPort: 9443"}, wantAdmin: 9443},
		{name: "admin server on every address", own: []string{"adminBindAddress: all"}, wantAdmin: 8080},
	}
	for _, tt := range tests {
		eachWireGuardChart(t, tt.name, tt.own, func(t *testing.T, dir string, _ bool, vals map[string]any) {
			w, err := mustRender(t, dir, vals).Workload("wireguard")
			if err != nil {
				t.Fatal(err)
			}
			if !w.Pod.Spec.HostNetwork {
				t.Fatalf("%s %s is not on the host network: the test would prove nothing", w.Kind, w.Name)
			}
			checkNoHostPorts(t, w)
			c := mainContainer(t, w)
			if got, want := envValue(c, "SEMAPHORE_WG_LISTEN_PORTS", ""), "aws:51821,merit:51822"; got != want {
				t.Errorf("SEMAPHORE_WG_LISTEN_PORTS=%q, want %q", got, want)
			}
			if got := adminPortOf(t, w); got != tt.wantAdmin {
				t.Errorf("the admin server listens on port %d, want %d", got, tt.wantAdmin)
			}
		})
	}
}

// By default a rollout of semaphore-wireguard starts each node's successor beside its predecessor,
// one node at a time (maxSurge 1, maxUnavailable 0), and the successor takes the devices over as
// the predecessor stops; maxSurge 0 with maxUnavailable 1 replaces the pods the old way, and an
// override of both (percentages too) or OnDelete is rendered as given. A new pod counts as
// available 5 s after it is ready (minReadySeconds), the time its predecessor keeps the devices
// while it fills its caches. Every strategy rendered is
// one the API server accepts for a DaemonSet: of a rolling update's maxSurge and maxUnavailable,
// exactly one other than 0 (what testdata/bad-values.yaml refuses breaks that).
func TestWireGuardRolloutSurgesByDefault(t *testing.T) {
	tests := []struct {
		name string
		// own are wireguard values in YAML.
		own                        []string
		wantType                   appsv1.DaemonSetUpdateStrategyType
		wantSurge, wantUnavailable string
		// wantMinReady is the DaemonSet's minReadySeconds: 5 unless own says otherwise.
		wantMinReady int32
	}{
		{name: "defaults", wantType: appsv1.RollingUpdateDaemonSetStrategyType, wantSurge: "1", wantUnavailable: "0", wantMinReady: 5},
		{
			name:     "successors available as soon as ready",
			own:      []string{"minReadySeconds: 0"},
			wantType: appsv1.RollingUpdateDaemonSetStrategyType, wantSurge: "1", wantUnavailable: "0",
		},
		{
			name:     "the old way",
			own:      []string{"updateStrategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}"},
			wantType: appsv1.RollingUpdateDaemonSetStrategyType, wantSurge: "0", wantUnavailable: "1", wantMinReady: 5,
		},
		{
			name:     "a percentage of the nodes at once",
			own:      []string{`updateStrategy: {rollingUpdate: {maxSurge: "10%", maxUnavailable: 0}}`},
			wantType: appsv1.RollingUpdateDaemonSetStrategyType, wantSurge: "10%", wantUnavailable: "0", wantMinReady: 5,
		},
		{
			name:     "on delete",
			own:      []string{"updateStrategy: {type: OnDelete}"},
			wantType: appsv1.OnDeleteDaemonSetStrategyType, wantSurge: "1", wantUnavailable: "0", wantMinReady: 5,
		},
	}
	for _, tt := range tests {
		eachWireGuardChart(t, tt.name, tt.own, func(t *testing.T, dir string, _ bool, vals map[string]any) {
			w, err := mustRender(t, dir, vals).Workload("wireguard")
			if err != nil {
				t.Fatal(err)
			}
			ds := typed[appsv1.DaemonSet](t, w.Object)
			if ds.Spec.MinReadySeconds != tt.wantMinReady {
				t.Errorf("minReadySeconds %d, want %d", ds.Spec.MinReadySeconds, tt.wantMinReady)
			}
			s := ds.Spec.UpdateStrategy
			if s.Type != tt.wantType || s.RollingUpdate == nil {
				t.Fatalf("updateStrategy %+v, want type %s with a rollingUpdate", s, tt.wantType)
			}
			surge, unavailable := intOrString(s.RollingUpdate.MaxSurge), intOrString(s.RollingUpdate.MaxUnavailable)
			if surge != tt.wantSurge || unavailable != tt.wantUnavailable {
				t.Errorf("rollingUpdate maxSurge %s, maxUnavailable %s; want %s and %s", surge, unavailable, tt.wantSurge, tt.wantUnavailable)
			}
			if s.Type == appsv1.RollingUpdateDaemonSetStrategyType {
				if err := daemonSetRollingUpdateValid(s.RollingUpdate); err != nil {
					t.Errorf("the API server would refuse the DaemonSet: %v", err)
				}
			}
		})
	}
}

// intOrString is v as the values write it ("<unset>" for nil).
func intOrString(v *intstr.IntOrString) string {
	if v == nil {
		return "<unset>"
	}
	return v.String()
}

// daemonSetRollingUpdateValid is the API server's rule for a DaemonSet's rolling update: each of
// maxSurge and maxUnavailable a number of at least 0 or a percentage of at most 100%, and exactly
// one of them other than 0. Unset, they default to maxSurge 0 and maxUnavailable 1.
func daemonSetRollingUpdateValid(ru *appsv1.RollingUpdateDaemonSet) error {
	value := func(name string, v *intstr.IntOrString, def int) (int, error) {
		if v == nil {
			return def, nil
		}
		if v.Type == intstr.Int {
			if v.IntVal < 0 {
				return 0, fmt.Errorf("%s %d is negative", name, v.IntVal)
			}
			return int(v.IntVal), nil
		}
		n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
		if !strings.HasSuffix(v.StrVal, "%") || err != nil || n < 0 || n > 100 {
			return 0, fmt.Errorf("%s %q is neither a number nor a percentage of at most 100%%", name, v.StrVal)
		}
		return n, nil
	}
	surge, err := value("maxSurge", ru.MaxSurge, 0)
	if err != nil {
		return err
	}
	unavailable, err := value("maxUnavailable", ru.MaxUnavailable, 1)
	if err != nil {
		return err
	}
	if (surge == 0) == (unavailable == 0) {
		return fmt.Errorf("maxSurge %d and maxUnavailable %d: exactly one must be other than 0", surge, unavailable)
	}
	return nil
}
