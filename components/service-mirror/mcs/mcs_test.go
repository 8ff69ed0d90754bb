package mcs_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
)

var t0 = time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)

func export(cluster string, age time.Duration, mutate func(*corev1.Service)) mcs.Export {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
	}}
	if mutate != nil {
		mutate(svc)
	}
	return mcs.Export{Cluster: cluster, Created: t0.Add(-age), Service: svc}
}

// Every property is the oldest export's, whatever the order the exports come in; the cluster
// name breaks a tie of creation times.
func TestMergeTheOldestExportWins(t *testing.T) {
	headless := func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }
	affinity := func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }
	for name, tc := range map[string]struct {
		exports  []mcs.Export
		from     string
		typ      mcsv1beta1.ServiceImportType
		conflict []mcsv1beta1.ServiceExportConditionReason
	}{
		"older headless":     {[]mcs.Export{export("aws", time.Minute, nil), export("gcp", time.Hour, headless)}, "gcp", mcsv1beta1.Headless, []mcsv1beta1.ServiceExportConditionReason{"TypeConflict"}},
		"older ClusterSetIP": {[]mcs.Export{export("aws", time.Hour, nil), export("gcp", time.Minute, headless)}, "aws", mcsv1beta1.ClusterSetIP, []mcsv1beta1.ServiceExportConditionReason{"TypeConflict"}},
		"a tie, by name":     {[]mcs.Export{export("gcp", time.Hour, affinity), export("aws", time.Hour, nil)}, "aws", mcsv1beta1.ClusterSetIP, []mcsv1beta1.ServiceExportConditionReason{"SessionAffinityConflict"}},
		"alike":              {[]mcs.Export{export("gcp", time.Hour, nil), export("aws", time.Minute, nil)}, "gcp", mcsv1beta1.ClusterSetIP, nil},
	} {
		t.Run(name, func(t *testing.T) {
			imp, ok := mcs.Merge(tc.exports)
			if !ok || imp.From != tc.from || imp.Spec.Type != tc.typ || !cmp.Equal(imp.Conflicts, tc.conflict) {
				t.Errorf("merged from %s, type %s, conflicts %v; want %s, %s, %v", imp.From, imp.Spec.Type, imp.Conflicts, tc.from, tc.typ, tc.conflict)
			}
			if !cmp.Equal(imp.Clusters, []string{"aws", "gcp"}) {
				t.Errorf("clusters %v", imp.Clusters)
			}
		})
	}
}

// Ports are merged by name (an unnamed one by protocol and number): the union, each port as the
// oldest export that has it defines it, and any difference is a port conflict. A cluster serves
// only the ports it defines as the import does.
func TestMergePortsByName(t *testing.T) {
	older := export("aws", time.Hour, func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "udp", Port: 53, Protocol: corev1.ProtocolUDP})
	})
	newer := export("gcp", time.Minute, func(s *corev1.Service) {
		s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 8080}, {Name: "metrics", Port: 9090, AppProtocol: ptr.To("http")}}
	})
	imp, _ := mcs.Merge([]mcs.Export{newer, older})
	want := []mcsv1beta1.ServicePort{
		{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80},
		{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090, AppProtocol: ptr.To("http")},
		{Name: "udp", Protocol: corev1.ProtocolUDP, Port: 53},
	}
	if diff := cmp.Diff(want, imp.Spec.Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	if !cmp.Equal(imp.Conflicts, []mcsv1beta1.ServiceExportConditionReason{"PortConflict"}) || imp.ConflictReason() != "PortConflict" {
		t.Errorf("conflicts %v", imp.Conflicts)
	}
	for _, tc := range []struct {
		cluster, port string
		serves        bool
	}{{"aws", "http", true}, {"gcp", "http", false}, {"gcp", "metrics", true}, {"aws", "metrics", false}} {
		if got := imp.Serves(tc.cluster, tc.port); got != tc.serves {
			t.Errorf("%s serves %s: %v, want %v", tc.cluster, tc.port, got, tc.serves)
		}
	}
	source := &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}, {Name: ptr.To("metrics"), Port: ptr.To[int32](9090)}}}
	copies := mcs.EndpointSlices(mcs.Key{Namespace: "ns", Name: "api"}, imp, "gcp", "gcp", []*discoveryv1.EndpointSlice{source})
	if len(copies[0].Ports) != 1 || *copies[0].Ports[0].Name != "metrics" {
		t.Errorf("gcp's copy keeps ports %v, want metrics alone", copies[0].Ports)
	}
}

// Only valid exports merge; exported labels and annotations are the oldest export's.
func TestMergeSkipsInvalidExportsAndTakesTheOldestLabels(t *testing.T) {
	external := export("aws", 2*time.Hour, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName })
	none := mcs.Export{Cluster: "merit", Created: t0.Add(-3 * time.Hour)}
	a := export("gcp", time.Hour, nil)
	a.Spec.ExportedLabels = map[string]string{"team": "a"}
	b := export("local", time.Minute, nil)
	b.Spec.ExportedLabels = map[string]string{"team": "b"}
	imp, ok := mcs.Merge([]mcs.Export{external, none, a, b})
	if !ok || imp.From != "gcp" || imp.Labels["team"] != "a" || !cmp.Equal(imp.Clusters, []string{"gcp", "local"}) {
		t.Errorf("merged from %s, labels %v, clusters %v", imp.From, imp.Labels, imp.Clusters)
	}
	if !cmp.Equal(imp.Conflicts, []mcsv1beta1.ServiceExportConditionReason{"LabelsConflict"}) {
		t.Errorf("conflicts %v", imp.Conflicts)
	}
	if _, ok := mcs.Merge([]mcs.Export{external, none}); ok {
		t.Error("invalid exports merged into an import")
	}
	if r, _ := external.Invalid(); r != mcsv1beta1.ServiceExportReasonInvalidServiceType {
		t.Errorf("ExternalName: %q", r)
	}
	if r, _ := none.Invalid(); r != mcsv1beta1.ServiceExportReasonNoService {
		t.Errorf("no Service: %q", r)
	}
}

// A claimed cluster ID is taken only when it is a DNS label no other cluster claims or is
// named; every other cluster keeps its name, and the IDs stay distinct.
func TestClusterIDsRefuseInvalidAndTakenIDs(t *testing.T) {
	ids, refused := mcs.ClusterIDs(map[string]string{
		"local":  "local",       // its own name
		"aws":    "eu-1",        // taken
		"gcp":    "eu-1",        // claimed twice: neither gets it
		"merit":  "aws",         // another cluster's name
		"azure":  "Not_A_Label", // not a DNS label
		"onprem": "dc-7",
		"edge":   "",
	})
	want := map[string]string{"local": "local", "aws": "aws", "gcp": "gcp", "merit": "merit", "azure": "azure", "onprem": "dc-7", "edge": "edge"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("IDs (-want +got):\n%s", diff)
	}
	for _, name := range []string{"aws", "gcp", "merit", "azure"} {
		if refused[name] == "" {
			t.Errorf("the claim of %s is not refused", name)
		}
	}
	if len(refused) != 4 {
		t.Errorf("refused %v, want aws, gcp, merit and azure", refused)
	}
}
