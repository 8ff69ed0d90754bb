package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/cli"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/clustertest"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/versions"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/version"
)

// versionOutput is what version -o json and -o yaml print.
type versionOutput struct {
	Client   version.Build      `json:"client"`
	Clusters []versions.Cluster `json:"clusters"`
}

// decoders decode -o json and -o yaml, by format.
var decoders = map[string]func([]byte, any) error{
	"json": json.Unmarshal,
	"yaml": func(b []byte, v any) error { return yaml.UnmarshalStrict(b, v) },
}

// version --client says the plugin's version, Go version and platform, on one line or as JSON
// or YAML with the same fields, and reads no cluster (here, a server that does not answer);
// another format is refused.
func TestVersionClientPrintsThePluginsVersionInEveryFormat(t *testing.T) {
	run := func(args ...string) (string, int) {
		var out, errOut bytes.Buffer
		code := cli.Main(append([]string{"version", "--client", "--server", "https://127.0.0.1:1"}, args...), &out, &errOut)
		return out.String() + errOut.String(), code
	}
	line, code := run()
	if code != 0 || line != "kubectl-semaphore "+version.Current().String()+"\n" || !strings.HasPrefix(line, "kubectl-semaphore "+version.Version+" ("+runtime.Version()+", "+runtime.GOOS+"/"+runtime.GOARCH) {
		t.Errorf("version --client: %d %q", code, line)
	}
	for format, decode := range decoders {
		out, code := run("-o", format)
		var got versionOutput
		if err := decode([]byte(out), &got); err != nil || code != 0 || got.Clusters != nil {
			t.Errorf("version --client -o %s: %d %q %v", format, code, out, err)
		}
		if got.Client != version.Current() {
			t.Errorf("version --client -o %s: %+v, want %+v", format, got.Client, version.Current())
		}
	}
	if out, code := run("-o", "xml"); code != 2 || !strings.Contains(out, "xml") {
		t.Errorf("version -o xml: %d %q, want a usage error naming it", code, out)
	}
}

// version reads, from the pods of each Semaphore component, the image they run: its tag, the
// digest the runtime pulled (the container status's imageID), and how many of those pods are
// ready; during a rollout, each image on a line of its own; a component without pods shows its
// pod template's image, 0/0. The client flags reach a context named by --contexts (--as), and
// a context that cannot be read is an error naming it, exit status 2, after the others.
func TestVersionShowsTheImagesTheComponentsRun(t *testing.T) {
	gcp := unanswered(t, false)
	byName := componentsOf(t, gcp)
	mirror, policy, wireguard := byName[release.ServiceMirror], byName[release.Policy], byName[release.WireGuard]
	mirrorImage, policyImage := mirror.Container().Image, policy.Container().Image
	const (
		mirrorDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
		policyDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	)
	runningPod(t, gcp, mirror, "semaphore-service-mirror-a", "", "docker-pullable://"+strings.Split(mirrorImage, ":")[0]+"@"+mirrorDigest, true)
	runningPod(t, gcp, policy, "semaphore-policy-a", "", "ghcr.io/kube-semaphore/semaphore-policy@"+policyDigest, true)
	runningPod(t, gcp, policy, "semaphore-policy-b", "ghcr.io/kube-semaphore/semaphore-policy:v9.9.9", "", false)

	run := commandOn(gcp)
	code, out, errOut := run("version", "-o", "json")
	var got versionOutput
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("version -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	component := func(c release.Component, ready, pods int, images ...versions.Image) versions.Component {
		return versions.Component{Name: c.Name, Kind: c.Kind, Namespace: c.Namespace, Workload: c.Workload, Ready: ready, Pods: pods, Images: images}
	}
	want := []versions.Cluster{{Cluster: "gcp", Components: []versions.Component{
		component(policy, 1, 2,
			versions.Image{Image: policyImage, Tag: tagOf(policyImage), Digest: policyDigest, Ready: 1, Pods: 1},
			versions.Image{Image: "ghcr.io/kube-semaphore/semaphore-policy:v9.9.9", Tag: "v9.9.9", Ready: 0, Pods: 1}),
		component(mirror, 1, 1, versions.Image{Image: mirrorImage, Tag: tagOf(mirrorImage), Digest: mirrorDigest, Ready: 1, Pods: 1}),
		component(wireguard, 0, 0, versions.Image{Image: wireguard.Container().Image, Tag: tagOf(wireguard.Container().Image)}),
	}}}
	if diff := cmp.Diff(want, got.Clusters); diff != "" || got.Client != version.Current() {
		t.Errorf("version -o json (-want +got):\n%s\nclient %+v", diff, got.Client)
	}

	code, out, errOut = run("version")
	t.Logf("version:\n%s", out)
	if code != 0 || !strings.HasPrefix(out, "kubectl-semaphore "+version.Current().String()+"\n\nCLUSTER gcp\nCOMPONENT ") {
		t.Errorf("version: exit %d, want the plugin's line, then the cluster's table:\n%s%s", code, out, errOut)
	}
	for _, row := range [][]string{
		{"policy", "Deployment", "semaphore/semaphore-policy", "1/1", tagOf(policyImage), "sha256:222222222222", policyImage},
		{"policy", "Deployment", "semaphore/semaphore-policy", "0/1", "v9.9.9", "-", "ghcr.io/kube-semaphore/semaphore-policy:v9.9.9"},
		{"service-mirror", "Deployment", "semaphore/semaphore-service-mirror", "1/1", tagOf(mirrorImage), "sha256:111111111111", mirrorImage},
		{"wireguard", "DaemonSet", "semaphore/semaphore-wireguard", "0/0", tagOf(wireguard.Container().Image), "-", wireguard.Container().Image},
	} {
		if !hasRow(out, row...) {
			t.Errorf("version does not have the row %q:\n%s", row, out)
		}
	}

	code, out, errOut = run("version", "--contexts", "gcp", "-o", "yaml")
	got = versionOutput{}
	if err := yaml.UnmarshalStrict([]byte(out), &got); code != 0 || err != nil || len(got.Clusters) != 1 || got.Clusters[0].Context != "gcp" || len(got.Clusters[0].Components) != 3 {
		t.Errorf("version --contexts gcp -o yaml: exit %d, %v: %+v\n%s", code, err, got, errOut)
	}

	code, _, errOut = run("version", "--contexts", "gcp", "--as", "someone-else")
	if code != 2 || !strings.Contains(errOut, `context gcp: listing Semaphore's Deployments: deployments.apps is forbidden: User "someone-else" cannot list`) {
		t.Errorf("version --contexts gcp --as someone-else: exit %d, want the request made as someone-else refused:\n%s", code, errOut)
	}

	code, out, errOut = run("version", "--contexts", "gcp,nowhere")
	if code != 2 || !strings.Contains(out, "CLUSTER gcp (context gcp)\n") || !strings.Contains(errOut, `context nowhere: no context "nowhere" in the kubeconfig`) {
		t.Errorf("version with an unknown context: exit %d\n%s\n%s", code, out, errOut)
	}
}

// componentsOf are the Semaphore components in c, by name.
func componentsOf(t *testing.T, c *testenv.Cluster) map[string]release.Component {
	t.Helper()
	components, err := release.Find(context.Background(), c.Client, "")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]release.Component{}
	for _, comp := range components {
		byName[comp.Name] = comp
	}
	return byName
}

// runningPod creates a pod of comp in c running image (the template's when ""), pulled as
// imageID, ready or waiting for its image, as its workload's controller and kubelet would.
func runningPod(t *testing.T, c *testenv.Cluster, comp release.Component, name, image, imageID string, ready bool) {
	t.Helper()
	pod := clustertest.ComponentPod(t, c, comp, name, "gcp-1")
	ctr := comp.Container()
	if image != "" {
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == ctr.Name {
				pod.Spec.Containers[i].Image = image
			}
		}
		updated, err := c.Client.CoreV1().Pods(pod.Namespace).Update(context.Background(), pod, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod = updated
	} else {
		image = ctr.Image
	}
	status := corev1.ContainerStatus{Name: ctr.Name, Image: image, ImageID: imageID, Ready: ready,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
	condition := corev1.ConditionTrue
	if !ready {
		status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}
		condition = corev1.ConditionFalse
	}
	pod.Status = corev1.PodStatus{
		Phase:             corev1.PodRunning,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: condition, LastTransitionTime: metav1.Now()}},
		ContainerStatuses: []corev1.ContainerStatus{status},
	}
	clustertest.UpdatePodStatus(t, c, pod)
}

// hasRow reports whether a line of the table text has exactly the cells cells.
func hasRow(text string, cells ...string) bool {
	for line := range strings.Lines(text) {
		if slices.Equal(strings.Fields(line), cells) {
			return true
		}
	}
	return false
}

// tagOf is the tag of image reference ref ("registry/repo:tag").
func tagOf(ref string) string { return ref[strings.LastIndex(ref, ":")+1:] }
