package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/measure"
)

// The original semaphore-service-mirror (testdata/original) is the reference our service
// mirror's figures stand next to: built here and run on the same API servers and remote
// Services, once ours has been measured and stopped.
const (
	originalNS  = "original"
	originalBin = "original-semaphore-service-mirror"
	// originalWait is generous: the original writes at client-go's default 5 requests per
	// second, about 800 s for 1,000 Services.
	originalWait = 40 * time.Minute
	// originalEnv set to 0 leaves the original out of BenchmarkServiceMirror.
	originalEnv = "SEMAPHORE_BENCH_ORIGINAL"
)

// originalRun is what the original did with the remote's n Services.
type originalRun struct {
	converge        time.Duration
	writes, idle    int
	peakRSS         float64
	services, ready int
}

// runOriginal runs the original against local, mirroring the Services of remote, and measures
// it as ours is measured.
func runOriginal(b *testing.B, dir string, local *testenv.Cluster, remote *populated) originalRun {
	bin := buildOriginal(b, dir)
	// The original mirrors Endpoints, which the endpoints controller of a real remote keeps
	// next to the slices, with the Service's labels.
	populateEndpoints(b, remote)
	measure.Namespaces(b, local, originalNS)
	view := watchOriginal(b, local)
	proc := measure.Command(b, bin,
		[]string{"-config", originalConfig(b, dir, local, remote.Cluster), "-kube-config", local.DirectKubeconfig, "-log-level", "error"},
		originalBin, dir, local)
	n := len(remote.svcs)
	converge, writes := proc.Converge(b, originalWait, func() (bool, string) {
		s, r := view.counts()
		return s >= n && r >= n, fmt.Sprintf("%d services, %d complete endpoints", s, r)
	})
	run := originalRun{converge: converge, writes: writes, idle: proc.AtRest(b), peakRSS: proc.PeakRSS(b)}
	run.services, run.ready = view.counts()
	proc.Stop()
	return run
}

// buildOriginal builds the original as its image does (static, no cgo) into dir.
func buildOriginal(b *testing.B, dir string) string {
	bin := filepath.Join(dir, originalBin)
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = filepath.Join("testdata", "original")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building the original: %v\n%s", err, out)
	}
	return bin
}

// originalConfig writes the original's configuration for local and remote into dir: the same
// mirror label as ours, its mirrors in their own namespace, global services selected by a
// label nothing carries (it needs one), and returns its path.
func originalConfig(b *testing.B, dir string, local, remote *testenv.Cluster) string {
	config := map[string]any{
		"global": map[string]any{
			"mirrorSvcLabelSelector":        mirrorLabel + "=true",
			"mirrorNamespace":               originalNS,
			"globalSvcLabelSelector":        "mirror.semaphore.uw.io/global-service=true",
			"globalSvcRoutingStrategyLabel": "mirror.semaphore.uw.io/global-service-routing-strategy=local-first",
			"serviceSync":                   true,
			"endpointSliceSync":             true,
		},
		"localCluster":   map[string]any{"name": local.Name},
		"remoteClusters": []map[string]any{{"name": remote.Name, "kubeConfigPath": remote.Kubeconfig, "servicePrefix": remote.Name}},
	}
	data, err := json.Marshal(config)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "original.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// populateEndpoints creates in p an Endpoints object for each Service, labelled like it, with
// the addresses of its slice. Endpoints are deprecated, and the API server says so on every
// write: the client does not pass that on.
//
//nolint:staticcheck // the original reads and writes Endpoints: they are its input.
func populateEndpoints(b *testing.B, p *populated) {
	cfg := measure.Unthrottled(p.Cluster)
	svcs, slices := p.svcs, p.slices
	cfg.WarningHandler = rest.NoWarnings{}
	client := kubernetes.NewForConfigOrDie(cfg)
	measure.InParallel(b, len(svcs), func(i int) error {
		subset := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}}
		for _, e := range slices[i].Endpoints {
			subset.Addresses = append(subset.Addresses, corev1.EndpointAddress{IP: e.Addresses[0]})
		}
		ep := &corev1.Endpoints{
			ObjectMeta: metav1.ObjectMeta{Name: svcs[i].Name, Namespace: svcs[i].Namespace, Labels: svcs[i].Labels},
			Subsets:    []corev1.EndpointSubset{subset},
		}
		_, err := client.CoreV1().Endpoints(ep.Namespace).Create(context.Background(), ep, metav1.CreateOptions{})
		return err
	})
}

// originalView is the original's mirror namespace as a watch sees it.
type originalView struct{ services, endpoints cache.SharedIndexInformer }

func watchOriginal(b *testing.B, local *testenv.Cluster) *originalView {
	cfg := rest.CopyConfig(local.Config)
	cfg.WarningHandler = rest.NoWarnings{}
	client := kubernetes.NewForConfigOrDie(cfg)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(originalNS))
	v := &originalView{services: factory.Core().V1().Services().Informer(), endpoints: factory.Core().V1().Endpoints().Informer()}
	stop := make(chan struct{})
	b.Cleanup(func() { close(stop) })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return v
}

// counts are the mirror Services and the Endpoints that hold every address.
func (v *originalView) counts() (services, complete int) {
	for _, obj := range v.endpoints.GetStore().List() {
		ep := obj.(*corev1.Endpoints) //nolint:staticcheck // what the original writes
		if len(ep.Subsets) == 1 && len(ep.Subsets[0].Addresses) == endpoints {
			complete++
		}
	}
	return len(v.services.GetStore().List()), complete
}
