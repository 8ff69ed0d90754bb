package charts_test

import (
	"context"
	"maps"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	wgapp "github.com/kube-semaphore/semaphore/components/wireguard/app"
	"github.com/kube-semaphore/semaphore/components/wireguard/calicoipam"
	wgcontroller "github.com/kube-semaphore/semaphore/components/wireguard/controller"
)

// wantPodCIDRsFrom is SEMAPHORE_WG_POD_CIDRS_FROM as the wireguard values sub must render it
// for remotes, and the source each remote must then read: a string as is, a map as
// remote:source pairs in the order of the remotes (names that are not remotes left out, "node"
// when none is left), nothing as "node".
func wantPodCIDRsFrom(t testing.TB, sub map[string]any, remotes []string) (string, map[string]wgcontroller.Source) {
	t.Helper()
	sources := map[string]wgcontroller.Source{}
	switch v := sub["podCIDRsFrom"].(type) {
	case nil:
		for _, r := range remotes {
			sources[r] = wgcontroller.SourceNode
		}
		return "node", sources
	case string:
		for _, r := range remotes {
			sources[r] = wgcontroller.Source(v)
		}
		return v, sources
	case map[string]any:
		var pairs []string
		for _, r := range remotes {
			sources[r] = wgcontroller.SourceNode
			if src, ok := v[r]; ok {
				sources[r] = wgcontroller.Source(str(src))
				pairs = append(pairs, r+":"+str(src))
			}
		}
		if len(pairs) == 0 {
			return "node", sources
		}
		return strings.Join(pairs, ","), sources
	default:
		t.Fatalf("podCIDRsFrom %v (%T) is neither a string nor a map", v, v)
		return "", nil
	}
}

// checkPodCIDRsFrom checks the wireguard container's SEMAPHORE_WG_POD_CIDRS_FROM against the
// values (sub) and the source each remote reads once it is decoded into the binary's Config.
func checkPodCIDRsFrom(t *testing.T, w workload, env map[string]string, cfg *wgapp.Config, remotes []string, sub map[string]any) {
	t.Helper()
	want, sources := wantPodCIDRsFrom(t, sub, remotes)
	if got, ok := env["SEMAPHORE_WG_POD_CIDRS_FROM"]; !ok || got != want {
		t.Errorf("%s %s: SEMAPHORE_WG_POD_CIDRS_FROM=%q (set: %v), want %q for podCIDRsFrom %v", w.Kind, w.Name, got, ok, want, sub["podCIDRsFrom"])
	}
	for r, src := range sources {
		if got := cfg.PodCIDRsFrom.For(r); got != src {
			t.Errorf("%s %s: remote %s reads its pod addresses from %q, want %q", w.Kind, w.Name, r, got, src)
		}
	}
}

// podCIDRsGlobals are two remotes, for the podCIDRsFrom cases; gcp is this cluster.
const podCIDRsGlobals = awsGlobals + `    - name: merit
      server: https://merit.example.com:6443
      podRanges: [10.30.0.0/16]
      kubeconfigSecret:
        name: merit-kubeconfig
`

// podCIDRsFrom, as a string or a map, becomes SEMAPHORE_WG_POD_CIDRS_FROM, and the binary
// decodes it into the source each remote reads: through the umbrella (wireguard.podCIDRsFrom)
// and with the subchart alone.
func TestWireGuardPodCIDRsFrom(t *testing.T) {
	tests := []struct {
		name string
		// value is podCIDRsFrom in YAML; "" leaves it out.
		value   string
		wantEnv string
		want    map[string]wgcontroller.Source
	}{
		{name: "default", wantEnv: "node", want: map[string]wgcontroller.Source{"aws": "node", "merit": "node"}},
		{name: "null", value: "null", wantEnv: "node", want: map[string]wgcontroller.Source{"aws": "node", "merit": "node"}},
		{name: "node", value: "node", wantEnv: "node", want: map[string]wgcontroller.Source{"aws": "node", "merit": "node"}},
		{name: "calico-ipam for every remote", value: "calico-ipam", wantEnv: "calico-ipam", want: map[string]wgcontroller.Source{"aws": "calico-ipam", "merit": "calico-ipam"}},
		{
			// In the order of global.remotes, not the map's; gcp (this cluster) is not a remote.
			name: "map of every remote and this cluster", value: "{merit: node, gcp: calico-ipam, aws: calico-ipam}",
			wantEnv: "aws:calico-ipam,merit:node", want: map[string]wgcontroller.Source{"aws": "calico-ipam", "merit": "node"},
		},
		{
			name: "map of one remote", value: "{merit: calico-ipam}",
			wantEnv: "merit:calico-ipam", want: map[string]wgcontroller.Source{"aws": "node", "merit": "calico-ipam"},
		},
		{
			name: "map of no remote", value: "{gcp: calico-ipam, azure: calico-ipam}",
			wantEnv: "node", want: map[string]wgcontroller.Source{"aws": "node", "merit": "node"},
		},
		{name: "empty map", value: "{}", wantEnv: "node", want: map[string]wgcontroller.Source{"aws": "node", "merit": "node"}},
	}
	for _, tt := range tests {
		var own []string
		if tt.value != "" {
			own = append(own, "podCIDRsFrom: "+tt.value)
		}
		eachWireGuardChart(t, tt.name, own, func(t *testing.T, dir string, alone bool, vals map[string]any) {
			m := mustRender(t, dir, vals)
			w, err := m.Workload("wireguard")
			if err != nil {
				t.Fatal(err)
			}
			c := mainContainer(t, w)
			if got := envValue(c, "SEMAPHORE_WG_POD_CIDRS_FROM", "<unset>"); got != tt.wantEnv {
				t.Errorf("SEMAPHORE_WG_POD_CIDRS_FROM=%q, want %q", got, tt.wantEnv)
			}
			cfg, err := loadConfig(t, "wireguard", podEnv(t, w, c, releaseNamespace, w.Name+"-abcde", "node-1"))
			if err != nil {
				t.Fatalf("the component does not start with the rendered environment: %v", err)
			}
			for r, want := range tt.want {
				if got := cfg.(*wgapp.Config).PodCIDRsFrom.For(r); got != want {
					t.Errorf("remote %s reads its pod addresses from %q, want %q", r, got, want)
				}
			}
			// And everything else a render must be.
			eff := effectiveValues(t, dir, vals)
			if alone {
				checkObjects(t, m, eff)
				checkWorkload(t, m, w, eff, eff)
				// The subchart's NOTES.txt tells which remotes need calicoIPAM in their
				// semaphore-remote release.
				var ipam int
				for _, src := range tt.want {
					if src == wgcontroller.SourceCalicoIPAM {
						ipam++
					}
				}
				if got := strings.Count(m.Release.Info.Notes, "calicoIPAM: true"); got != ipam {
					t.Errorf("NOTES.txt asks for calicoIPAM %d times, want %d (once per remote read from Calico IPAM blocks):\n%s", got, ipam, m.Release.Info.Notes)
				}
			} else {
				checkUmbrella(t, m, eff)
			}
		})
	}
}

// eachWireGuardChart runs f, as a subtest of name, on the umbrella with the wireguard values own
// under `wireguard:`, and on the wireguard subchart alone with them at its top, both with
// podCIDRsGlobals and listen ports for aws and merit.
func eachWireGuardChart(t *testing.T, name string, own []string, f func(t *testing.T, dir string, alone bool, vals map[string]any)) {
	t.Helper()
	own = append([]string{"listenPorts: {aws: 51821, merit: 51822}"}, own...)
	umbrella := make([]string, len(own))
	for i, o := range own {
		umbrella[i] = "wireguard: {" + o + "}"
	}
	t.Run(name+"/umbrella", func(t *testing.T) {
		f(t, umbrellaChart, false, valuesOf(t, nil, append([]string{podCIDRsGlobals}, umbrella...)...))
	})
	t.Run(name+"/subchart alone", func(t *testing.T) {
		f(t, filepath.Join(umbrellaChart, "charts", "wireguard"), true, valuesOf(t, nil, append([]string{podCIDRsGlobals}, own...)...))
	})
}

// checkRemoteCalicoIPAM checks semaphore-remote's Calico IPAM objects against vals: when a
// consumer has calicoIPAM, one ClusterRole `<main role>-calico-ipam` that can only get, list and
// watch ipamblocks.crd.projectcalico.org, and one binding `<main role>-<consumer>-calico-ipam`
// to it for each such consumer, and for no other; without such a consumer, neither, and no role
// grants IPAM blocks. It returns that role, or nil.
func checkRemoteCalicoIPAM(t *testing.T, m *manifest, vals map[string]any) *rbacv1.ClusterRole {
	t.Helper()
	var want []string
	consumers, _ := vals["consumers"].([]any)
	for _, c := range consumers {
		if lookup(c.(map[string]any), "calicoIPAM") == true {
			want = append(want, str(lookup(c.(map[string]any), "name")))
		}
	}
	var ipam []*rbacv1.ClusterRole
	for _, u := range m.Of("ClusterRole") {
		r := typed[rbacv1.ClusterRole](t, u)
		for _, rule := range r.Rules {
			if slices.Contains(rule.Resources, "ipamblocks") || slices.Contains(rule.APIGroups, "crd.projectcalico.org") {
				ipam = append(ipam, r)
				break
			}
		}
	}
	if len(want) == 0 {
		for _, r := range ipam {
			t.Errorf("no consumer has calicoIPAM, but ClusterRole %s grants Calico IPAM blocks: %v", r.Name, r.Rules)
		}
		return nil
	}
	if len(ipam) != 1 {
		t.Fatalf("consumers %v have calicoIPAM, and %d ClusterRoles grant Calico IPAM blocks, want 1", want, len(ipam))
	}
	role := ipam[0]
	wantRule := rbacv1.PolicyRule{APIGroups: []string{"crd.projectcalico.org"}, Resources: []string{"ipamblocks"}, Verbs: []string{"get", "list", "watch"}}
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].APIGroups, wantRule.APIGroups) || !slices.Equal(role.Rules[0].Resources, wantRule.Resources) ||
		!slices.Equal(slices.Sorted(slices.Values(role.Rules[0].Verbs)), wantRule.Verbs) || len(role.Rules[0].ResourceNames) > 0 {
		t.Errorf("ClusterRole %s: rules %v, want exactly %v", role.Name, role.Rules, wantRule)
	}
	main, ok := strings.CutSuffix(role.Name, "-calico-ipam")
	if !ok || m.Get("ClusterRole", main) == nil {
		t.Errorf("ClusterRole %s is not named after the chart's ClusterRole (<fullname>-calico-ipam)", role.Name)
	}
	bound := map[string]string{} // consumer -> binding
	for _, u := range m.Of("ClusterRoleBinding") {
		b := typed[rbacv1.ClusterRoleBinding](t, u)
		if b.RoleRef.Name != role.Name {
			continue
		}
		if b.RoleRef.Kind != "ClusterRole" || len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Namespace != m.Release.Namespace {
			t.Errorf("ClusterRoleBinding %s: %s %s to %v, want one consumer's ServiceAccount in %s", b.Name, b.RoleRef.Kind, b.RoleRef.Name, b.Subjects, m.Release.Namespace)
			continue
		}
		consumer, _ := strings.CutPrefix(b.Subjects[0].Name, "semaphore-remote-")
		if _, dup := bound[consumer]; dup {
			t.Errorf("consumer %s is bound to %s twice", consumer, role.Name)
		}
		bound[consumer] = b.Name
		if wantName := main + "-" + consumer + "-calico-ipam"; b.Name != wantName {
			t.Errorf("ClusterRoleBinding %s of consumer %s to %s, want the name %s", b.Name, consumer, role.Name, wantName)
		}
	}
	if got := slices.Sorted(maps.Keys(bound)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("consumers bound to %s: %v, want exactly those with calicoIPAM: %v", role.Name, got, want)
	}
	if !strings.Contains(m.Release.Info.Notes, role.Name) {
		t.Errorf("NOTES.txt does not mention ClusterRole %s:\n%s", role.Name, m.Release.Info.Notes)
	}
	return role
}

// Only the consumers with calicoIPAM get the Calico IPAM role, through a binding of their own.
func TestRemoteCalicoIPAM(t *testing.T) {
	tests := []struct {
		name, consumers string
		// bindings are the names of the bindings to semaphore-remote-calico-ipam.
		bindings []string
	}{
		{name: "none", consumers: "[{name: gcp}, {name: merit, calicoIPAM: false}]"},
		{name: "one of two", consumers: "[{name: gcp, calicoIPAM: true}, {name: merit}]", bindings: []string{"semaphore-remote-gcp-calico-ipam"}},
		{
			name: "two of three", consumers: "[{name: gcp, calicoIPAM: true}, {name: merit, calicoIPAM: false}, {name: azure, calicoIPAM: true}]",
			bindings: []string{"semaphore-remote-azure-calico-ipam", "semaphore-remote-gcp-calico-ipam"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := valuesOf(t, nil, "consumers: "+tt.consumers)
			m := mustRenderAs(t, remoteChart, "semaphore-remote", releaseNamespace, vals)
			checkRemoteChart(t, m, effectiveValues(t, remoteChart, vals))
			role := m.Get("ClusterRole", "semaphore-remote-calico-ipam")
			if (role != nil) != (len(tt.bindings) > 0) {
				t.Errorf("ClusterRole semaphore-remote-calico-ipam rendered: %v, want %v", role != nil, len(tt.bindings) > 0)
			}
			var got []string
			for _, u := range m.Of("ClusterRoleBinding") {
				if strings.HasSuffix(u.GetName(), "-calico-ipam") {
					got = append(got, u.GetName())
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.bindings) {
				t.Errorf("Calico IPAM bindings %v, want %v", got, tt.bindings)
			}
			// The main ClusterRole is unchanged: no IPAM blocks there.
			main := typed[rbacv1.ClusterRole](t, m.Get("ClusterRole", "semaphore-remote"))
			for _, rule := range main.Rules {
				if slices.Contains(rule.Resources, "ipamblocks") {
					t.Errorf("ClusterRole semaphore-remote grants %v to every consumer", rule)
				}
			}
		})
	}
}

// On a real API server that serves Calico's IPAMBlock CRD: the token of a consumer with
// calicoIPAM may get, list and watch IPAM blocks (an informer as semaphore-wireguard runs it
// syncs and reads the block's node) and may not write them; a consumer without it may not read
// them at all; and neither may do anything else the chart did not grant.
func TestCalicoIPAMPrivilege(t *testing.T) {
	aws, _ := clusters(t)
	ctx := context.Background()
	// Names of their own, so as not to meet the other tests' releases.
	const release, namespace = "ipam", "semaphore-remote-ipam"
	vals := valuesOf(t, nil, `
clusterName: aws
consumers:
  - name: gcp
    calicoIPAM: true
  - name: merit
components:
  serviceMirror: false
  policy: false
  wireguard: true
`)
	m := install(t, aws, remoteChart, release, namespace, vals)
	checkRemoteChart(t, m, effectiveValues(t, remoteChart, vals))

	admin := dynamic.NewForConfigOrDie(aws.Config).Resource(calicoipam.Resource)
	blockCIDR := netip.MustParsePrefix("198.18.40.0/30")
	obj, err := calicoipam.Object(blockCIDR, "aws-ipam-node", nil)
	if err != nil {
		t.Fatal(err)
	}
	block, err := admin.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating an IPAMBlock as the admin (is the CRD installed?): %v", err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), block.GetName(), metav1.DeleteOptions{}) })

	// The consumer's identity, with a token as the chart's token Secret would hold (no
	// kube-controller-manager runs here to fill it: TokenRequest issues one for the same
	// ServiceAccount).
	tokenConfig := func(consumer string) *rest.Config {
		t.Helper()
		tr, err := aws.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, "semaphore-remote-"+consumer, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return &rest.Config{
			Host:            aws.Config.Host,
			TLSClientConfig: rest.TLSClientConfig{CAData: aws.Config.CAData},
			BearerToken:     tr.Status.Token,
			QPS:             -1,
		}
	}

	t.Run("consumer with calicoIPAM reads and does not write", func(t *testing.T) {
		cfg := tokenConfig("gcp")
		blocks := dynamic.NewForConfigOrDie(cfg).Resource(calicoipam.Resource)
		list, err := blocks.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list IPAM blocks: %v", err)
		}
		if !slices.ContainsFunc(list.Items, func(u unstructured.Unstructured) bool { return u.GetName() == block.GetName() }) {
			t.Errorf("the list of IPAM blocks lacks %s", block.GetName())
		}
		if _, err := blocks.Get(ctx, block.GetName(), metav1.GetOptions{}); err != nil {
			t.Errorf("get IPAM block %s: %v", block.GetName(), err)
		}
		w, err := blocks.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatalf("watch IPAM blocks: %v", err)
		}
		defer w.Stop()
		// A change made by the admin arrives through the consumer's watch.
		if _, err := admin.Patch(ctx, block.GetName(), types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type != watch.Modified {
				t.Errorf("watch: got %v (open: %v), want the block MODIFIED", ev.Type, ok)
			}
		case <-time.After(20 * time.Second):
			t.Error("watch: no event in 20s after the block changed")
		}

		// What semaphore-wireguard runs with podCIDRsFrom calico-ipam: an informer on the
		// blocks, through this identity, that syncs and attributes the block to its node.
		factory := dynamicinformer.NewDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(cfg), 0)
		inf := factory.ForResource(calicoipam.Resource).Informer()
		if err := inf.SetTransform(calicoipam.Transform); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		defer close(stop)
		factory.Start(stop)
		syncCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
			t.Fatal("the IPAM block informer did not sync with the consumer's identity")
		}
		var read []*calicoipam.Block
		for _, o := range inf.GetStore().List() {
			if b, ok := o.(*calicoipam.Block); ok {
				read = append(read, b)
			}
		}
		byNode, _ := calicoipam.Prefixes(read, nil)
		if !slices.Contains(byNode["aws-ipam-node"], blockCIDR) {
			t.Errorf("pod addresses read through the consumer's identity: %v, want %s for aws-ipam-node", byNode, blockCIDR)
		}

		refused(t, "create an IPAM block", func() error {
			o, err := calicoipam.Object(netip.MustParsePrefix("198.18.41.0/30"), "aws-ipam-node", nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = blocks.Create(ctx, o, metav1.CreateOptions{})
			return err
		})
		refused(t, "update an IPAM block", func() error {
			got, err := admin.Get(ctx, block.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got.SetLabels(map[string]string{"intruder": "yes"})
			_, err = blocks.Update(ctx, got, metav1.UpdateOptions{})
			return err
		})
		refused(t, "patch an IPAM block", func() error {
			_, err := blocks.Patch(ctx, block.GetName(), types.MergePatchType, []byte(`{"spec":{"affinity":"host:intruder"}}`), metav1.PatchOptions{})
			return err
		})
		refused(t, "delete an IPAM block", func() error {
			return blocks.Delete(ctx, block.GetName(), metav1.DeleteOptions{})
		})
		refused(t, "delete every IPAM block", func() error {
			return blocks.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		})
		if _, err := admin.Get(ctx, block.GetName(), metav1.GetOptions{}); err != nil {
			t.Errorf("the block is gone after the refused writes: %v", err)
		}
	})

	t.Run("consumer without calicoIPAM does not read them", func(t *testing.T) {
		blocks := dynamic.NewForConfigOrDie(tokenConfig("merit")).Resource(calicoipam.Resource)
		refused(t, "list IPAM blocks", func() error {
			_, err := blocks.List(ctx, metav1.ListOptions{})
			return err
		})
		refused(t, "watch IPAM blocks", func() error {
			w, err := blocks.Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		})
		refused(t, "get an IPAM block", func() error {
			_, err := blocks.Get(ctx, block.GetName(), metav1.GetOptions{})
			return err
		})
	})

	// Everything else, asked of the API server's authorizer: both read nodes (wireguard), only
	// gcp reads IPAM blocks, nobody writes anything.
	t.Run("authorizer", func(t *testing.T) {
		ipamBlocks := resourceRef{"crd.projectcalico.org", "ipamblocks"}
		resources := append(slices.Clone(sweepResources), ipamBlocks, resourceRef{"crd.projectcalico.org", "ipamhandles"}, resourceRef{"crd.projectcalico.org", "blockaffinities"})
		for _, consumer := range []string{"gcp", "merit"} {
			user := serviceAccountUser(namespace, "semaphore-remote-"+consumer)
			reads := []resourceRef{{"", "nodes"}}
			if consumer == "gcp" {
				reads = append(reads, ipamBlocks)
			}
			for _, ns := range []string{"", "default", namespace} {
				for _, r := range resources {
					for _, verb := range allVerbs {
						want := slices.Contains(reads, r) && slices.Contains([]string{"get", "list", "watch"}, verb)
						checkAccess(t, aws, user, ns, verb, r, want)
					}
				}
			}
		}
	})

	uninstall(t, aws, release, namespace)
	checkUninstalled(t, aws, m, release, namespace)
}
