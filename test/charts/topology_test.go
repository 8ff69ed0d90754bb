package charts_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	wgapp "github.com/kube-semaphore/semaphore/components/wireguard/app"
	wgcontroller "github.com/kube-semaphore/semaphore/components/wireguard/controller"
)

// topology, as a string or a map, becomes SEMAPHORE_WG_TOPOLOGY and gatewayNodeSelector
// SEMAPHORE_WG_GATEWAY_NODES, which the binary decodes into each remote's topology; the Role
// that lets the agents elect their gateways through Leases in the release's namespace is there
// exactly when a remote is reached through gateways. Through the umbrella and with the subchart
// alone.
func TestWireGuardTopology(t *testing.T) {
	tests := []struct {
		name string
		// own are wireguard values in YAML.
		own          []string
		wantEnv      string
		wantSelector string
		want         map[string]wgcontroller.Topology
	}{
		{name: "default", wantEnv: "mesh", wantSelector: "wireguard.semaphore.uw.io/gateway=true",
			want: map[string]wgcontroller.Topology{"aws": "mesh", "merit": "mesh"}},
		{name: "gateway for every remote", own: []string{"topology: gateway"}, wantEnv: "gateway", wantSelector: "wireguard.semaphore.uw.io/gateway=true",
			want: map[string]wgcontroller.Topology{"aws": "gateway", "merit": "gateway"}},
		{
			// In the order of global.remotes; names that are not remotes left out.
			name: "map", own: []string{"topology: {merit: gateway, gcp: gateway, aws: mesh}", "gatewayNodeSelector: {role: edge, zone: a}"},
			wantEnv: "aws:mesh,merit:gateway", wantSelector: "role=edge,zone=a",
			want: map[string]wgcontroller.Topology{"aws": "mesh", "merit": "gateway"},
		},
		{name: "map of no remote", own: []string{"topology: {gcp: gateway}"}, wantEnv: "mesh", wantSelector: "wireguard.semaphore.uw.io/gateway=true",
			want: map[string]wgcontroller.Topology{"aws": "mesh", "merit": "mesh"}},
	}
	for _, tt := range tests {
		eachWireGuardChart(t, tt.name, tt.own, func(t *testing.T, dir string, _ bool, vals map[string]any) {
			m := mustRender(t, dir, vals)
			w, err := m.Workload("wireguard")
			if err != nil {
				t.Fatal(err)
			}
			c := mainContainer(t, w)
			if got := envValue(c, "SEMAPHORE_WG_TOPOLOGY", "<unset>"); got != tt.wantEnv {
				t.Errorf("SEMAPHORE_WG_TOPOLOGY=%q, want %q", got, tt.wantEnv)
			}
			if got := envValue(c, "SEMAPHORE_WG_GATEWAY_NODES", "<unset>"); got != tt.wantSelector {
				t.Errorf("SEMAPHORE_WG_GATEWAY_NODES=%q, want %q", got, tt.wantSelector)
			}
			cfg, err := loadConfig(t, "wireguard", podEnv(t, w, c, releaseNamespace, w.Name+"-abcde", "node-1"))
			if err != nil {
				t.Fatalf("the component does not start with the rendered environment: %v", err)
			}
			gateways := false
			for r, want := range tt.want {
				if got := cfg.(*wgapp.Config).Topology.For(r); got != want {
					t.Errorf("remote %s is reached through %q, want %q", r, got, want)
				}
				gateways = gateways || want == wgcontroller.TopologyGateway
			}
			checkLeaseRole(t, m, gateways)
		})
	}
}

// checkLeaseRole checks that the gateways' Role and its binding are rendered when gateways is
// true, and not otherwise: Leases, get, create and update, in the release's namespace, for the
// wireguard ServiceAccount alone.
func checkLeaseRole(t *testing.T, m *manifest, gateways bool) {
	t.Helper()
	role := findNamed(m.Of("Role"), "-wireguard-gateway")
	binding := findNamed(m.Of("RoleBinding"), "-wireguard-gateway")
	if !gateways {
		if role != nil || binding != nil {
			t.Errorf("a Role or RoleBinding for the gateways' Leases with no remote reached through gateways")
		}
		return
	}
	if role == nil || binding == nil {
		t.Fatalf("no Role and RoleBinding for the gateways' Leases (Role %v, RoleBinding %v)", role != nil, binding != nil)
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	want := []any{map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"}, "verbs": []any{"get", "create", "update"}}}
	if !equality.Semantic.DeepEqual(rules, want) {
		t.Errorf("the gateways' Role has rules %v, want %v", rules, want)
	}
	if role.GetNamespace() != releaseNamespace || binding.GetNamespace() != releaseNamespace {
		t.Errorf("the gateways' Role is in %q and its binding in %q, want the release's namespace %q", role.GetNamespace(), binding.GetNamespace(), releaseNamespace)
	}
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	if len(subjects) != 1 || subjects[0].(map[string]any)["kind"] != "ServiceAccount" {
		t.Errorf("the gateways' RoleBinding binds %v, want the wireguard ServiceAccount alone", subjects)
	}
}

// findNamed is the object of objs whose name ends with suffix, nil when none.
func findNamed(objs []*unstructured.Unstructured, suffix string) *unstructured.Unstructured {
	for _, o := range objs {
		if strings.HasSuffix(o.GetName(), suffix) {
			return o
		}
	}
	return nil
}
