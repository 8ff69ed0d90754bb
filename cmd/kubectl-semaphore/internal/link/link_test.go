package link_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/cli"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/clustertest"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/link"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
)

const remoteNamespace = "semaphore-remote"

// run runs `kubectl-semaphore --kubeconfig kubeconfig link args...` and returns its exit
// status, standard output and standard error.
func run(t *testing.T, kubeconfig string, args ...string) (int, string, string) {
	t.Helper()
	return command(t, kubeconfig, "link", args...)
}

// command runs `kubectl-semaphore --kubeconfig kubeconfig name args...` as run does.
func command(t *testing.T, kubeconfig, name string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Main(append([]string{"--kubeconfig", kubeconfig, name}, args...), &out, &errOut)
	t.Logf("%s %s: exit %d\n%s%s", name, strings.Join(args, " "), code, errOut.String(), out.String())
	return code, out.String(), errOut.String()
}

// fails runs link and expects it to fail with an error that holds every one of want.
func fails(t *testing.T, kubeconfig string, args []string, want ...string) {
	t.Helper()
	code, _, errOut := run(t, kubeconfig, args...)
	if code == 0 {
		t.Fatalf("link %v succeeded, want an error with %q", args, want)
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) {
			t.Errorf("link %v: error %q does not say %q", args, errOut, w)
		}
	}
}

// kubeconfig writes a kubeconfig with one context per cluster, named like the cluster, each
// talking to its API server directly as an admin.
func kubeconfig(t *testing.T, clusters ...*testenv.Cluster) string {
	t.Helper()
	merged := clientcmdapi.NewConfig()
	for _, c := range clusters {
		cfg, err := clientcmd.LoadFromFile(c.DirectKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		ctx := cfg.Contexts[cfg.CurrentContext]
		merged.Clusters[c.Name] = cfg.Clusters[ctx.Cluster]
		merged.AuthInfos[c.Name] = cfg.AuthInfos[ctx.AuthInfo]
		merged.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: c.Name}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*merged, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// fillToken does what kube-controller-manager's token controller, which does not run here,
// does: it puts a token of the consumer's ServiceAccount (from the TokenRequest API) and the
// cluster's CA into the consumer's token Secret. It returns the token.
func fillToken(t *testing.T, c *testenv.Cluster, consumer string) string {
	t.Helper()
	token := clustertest.ConsumerToken(t, c, consumer)
	setToken(t, c, consumer, token)
	return token
}

func setToken(t *testing.T, c *testenv.Cluster, consumer, token string) {
	t.Helper()
	setTokenOf(t, c, "semaphore-remote-"+consumer+"-token", token)
}

// setTokenOf fills the token Secret secret with token and the cluster's CA.
func setTokenOf(t *testing.T, c *testenv.Cluster, secret, token string) {
	t.Helper()
	ctx := context.Background()
	secrets := c.Client.CoreV1().Secrets(remoteNamespace)
	s, err := secrets.Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(token), corev1.ServiceAccountRootCAKey: c.Config.CAData}
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// setLink sets key of semaphore-remote's link ConfigMap to value, as a helm upgrade with
// another value would.
func setLink(t *testing.T, c *testenv.Cluster, key, value string) {
	t.Helper()
	ctx := context.Background()
	cms := c.Client.CoreV1().ConfigMaps(remoteNamespace)
	cm, err := cms.Get(ctx, "semaphore-remote-link", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[key] = value
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// proxiedHost is the URL of c's API server through its proxy: another address of the same
// server, with the same CA.
func proxiedHost(t *testing.T, c *testenv.Cluster) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host == c.Config.Host {
		t.Fatalf("%s's proxy has the server's own address %s", c.Name, cfg.Host)
	}
	return cfg.Host
}

// copied is the token in gcp's copy of aws's token, and the Secret's resourceVersion.
func copied(t *testing.T, gcp *testenv.Cluster) (token, version string) {
	t.Helper()
	s, err := gcp.Client.CoreV1().Secrets("semaphore").Get(context.Background(), "semaphore-remote-aws", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(s.Data["token"]), s.ResourceVersion
}

// writesOfLink are link's writes to c since the test began. The access review with which link
// asks whether a remote takes a token is a create that stores nothing: it is left out.
func writesOfLink(t *testing.T, c *testenv.Cluster) int {
	t.Helper()
	n := 0
	for _, e := range c.WritesBut(t, link.UserAgent) {
		if e.ObjectRef.Resource != "selfsubjectaccessreviews" {
			n++
		}
	}
	return n
}

// linkTest is what TestLink's steps share: aws and gcp, a kubeconfig with a context for each,
// the arguments that link aws to gcp as consumer gcp, gcp's first token and a values file.
type linkTest struct {
	aws, gcp *testenv.Cluster
	kc       string
	args     []string
	// token is consumer gcp's token as the parent filled it, before any rotation.
	token string
	// values is the values file of the steps with --values-out.
	values string
}

// semaphore-remote installed in aws with the Helm SDK, for consumers gcp and merit; link from
// aws to gcp copies the token into gcp and gives the entry the umbrella needs, writes nothing
// when run again, updates the copy after a rotation, and fails clearly on what it cannot do. It
// writes nothing for a remote of another name than expected, nor for one that would move the
// name to another server or CA, unless --force.
//
// The parent brings the clusters along in stages, a step or two run at each: each step needs
// only what the parent did before it, or brings the rest about itself (linked, linkedInto), so
// that -run 'TestLink/<step>' runs one step alone.
func TestLink(t *testing.T) {
	clusters := testenv.Start(t, testenv.Options{Audit: true}, "aws", "gcp")
	aws, gcp := clusters[0], clusters[1]
	f := &linkTest{aws: aws, gcp: gcp, kc: kubeconfig(t, aws, gcp), args: []string{"--from", "aws", "--to", "gcp", "--to-cluster", "gcp"}, values: filepath.Join(t.TempDir(), "remotes.yaml")}

	t.Run("fails without a semaphore-remote release", func(t *testing.T) {
		fails(t, f.kc, f.args, "no semaphore-remote release in any namespace", "install charts/semaphore-remote")
	})
	if err := aws.EnsureNamespace(context.Background(), remoteNamespace); err != nil {
		t.Fatal(err)
	}
	installRemote(t, aws, "gcp", "merit")
	t.Run("fails while the consumer's token is not filled yet", func(t *testing.T) {
		fails(t, f.kc, f.args, "semaphore-remote-gcp-token", "not filled yet", "wait")
		fails(t, f.kc, append(f.args, "--wait", "1s"), "after waiting 1s", "not filled yet")
	})
	f.token = fillToken(t, aws, "gcp")

	t.Run("fails for a consumer the remote does not have", func(t *testing.T) {
		fails(t, f.kc, []string{"--from", "aws", "--to", "gcp", "--to-cluster", "azure"}, `no consumer "azure"`, "gcp, merit", "consumers[2].name=azure")
	})
	t.Run("asks for the consumer's name when nothing tells it", func(t *testing.T) {
		fails(t, f.kc, []string{"--from", "aws", "--to", "gcp"}, "--to-cluster", "SEMAPHORE_LOCAL_CLUSTER")
	})
	t.Run("fails for an unknown context", func(t *testing.T) {
		fails(t, f.kc, []string{"--from", "azure", "--to", "gcp"}, `no context "azure"`)
	})
	t.Run("writes nothing for a remote that says another name", f.anotherName)
	createNodes(t, aws)

	t.Run("copies the token into the consumer and prints its values", f.firstLink)
	t.Run("prints what it did with -o json and -o yaml", f.structuredOutput)
	t.Run("writes nothing when run again and merges the values file", f.again)
	t.Run("refuses another server under the same name unless --force", f.anotherServer)
	t.Run("refuses another CA under the same name unless --force", f.anotherCA)
	t.Run("updates the copy after a rotation", f.afterRotation)
	t.Run("reads the consumer's name from the semaphore release", f.consumerFromRelease)
	t.Run("does not copy a token the server refuses", f.refusedToken)
	t.Run("fails for an unreachable server unless --skip-reachability-check", f.unreachable)
	t.Run("fails when the remote has no apiServer", func(t *testing.T) {
		setLink(t, aws, "apiServer", "")
		t.Cleanup(func() { setLink(t, aws, "apiServer", aws.Config.Host) })
		fails(t, f.kc, f.args, "has no apiServer", "helm upgrade semaphore-remote")
	})
	t.Run("looks for semaphore-remote in --remote-namespace only", func(t *testing.T) {
		fails(t, f.kc, append(f.args, "--remote-namespace", "elsewhere"), "no semaphore-remote release in namespace elsewhere")
	})
	// After the steps that write the token Secret of generation 1, which this one deletes.
	t.Run("copies the new generation's token during a rotation", f.tokenGeneration)
	// Last: the semaphore release it installs in gcp is what every link to gcp checks after it.
	t.Run("refuses another server than the semaphore release reads unless --force", f.releaseServer)
}

// createNodes creates two Nodes of aws with pod CIDRs, as its controller manager would have
// allocated them: link derives aws's podRanges from them.
func createNodes(t *testing.T, aws *testenv.Cluster) {
	t.Helper()
	for i, cidrs := range [][]string{{"198.18.1.0/25", "fd00:18:1::/64"}, {"198.18.1.128/25", "fd00:18:1:1::/64"}} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("aws-node-%d", i+1)}, Spec: corev1.NodeSpec{PodCIDR: cidrs[0], PodCIDRs: cidrs}}
		if _, err := aws.Client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// linked links aws to gcp, unless gcp already holds a copy of aws's token: the steps after the
// first link start from there, whether that step ran before them or not.
func (f *linkTest) linked(t *testing.T) {
	t.Helper()
	_, err := f.gcp.Client.CoreV1().Secrets("semaphore").Get(context.Background(), "semaphore-remote-aws", metav1.GetOptions{})
	if err == nil {
		return
	}
	if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, f.kc, f.args...); code != 0 {
		t.Fatalf("linking aws to gcp: exit %d: %s", code, errOut)
	}
}

// writeValues writes the values file as a user would have it before linking aws: another remote
// and a WireGuard value of its own.
func (f *linkTest) writeValues(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(f.values, []byte("global:\n  clusterName: gcp\n  remotes:\n    - name: merit\n      server: https://merit.example.net\n      tokenSecret: {name: semaphore-remote-merit, key: token}\nwireguard:\n  keepalive: 5s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// linkedInto links aws to gcp into the values file, unless the file is there already: as
// "writes nothing when run again and merges the values file" leaves it.
func (f *linkTest) linkedInto(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(f.values); err == nil {
		return
	}
	f.writeValues(t)
	if code, _, errOut := run(t, f.kc, append(f.args, "--values-out", f.values)...); code != 0 {
		t.Fatalf("linking aws to gcp into %s: exit %d: %s", f.values, code, errOut)
	}
}

// The name decides which Secret and entry link writes: a remote that calls itself otherwise than
// the user expects gets nothing, whatever it says.
func (f *linkTest) anotherName(t *testing.T) {
	writes := writesOfLink(t, f.gcp)
	fails(t, f.kc, append(f.args, "--remote-name", "prod"), `says it is cluster "aws", not "prod" (--remote-name)`, "is --from the cluster you mean", "Nothing was written")
	if w := writesOfLink(t, f.gcp) - writes; w != 0 {
		t.Errorf("link wrote %d times to gcp for a remote of another name", w)
	}
	if _, err := f.gcp.Client.CoreV1().Secrets("semaphore").Get(context.Background(), "semaphore-remote-prod", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret semaphore-remote-prod: %v, want none", err)
	}
}

// The first link creates gcp's copy of the token and prints the values of gcp's umbrella: aws's
// entry, with the podRanges of aws's Nodes, and its listen port.
func (f *linkTest) firstLink(t *testing.T) {
	code, out, errOut := run(t, f.kc, f.args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "semaphore/semaphore-remote-aws in context gcp: created") {
		t.Errorf("link does not say it created the Secret: %s", errOut)
	}
	var vals struct {
		Global struct {
			ClusterName string       `json:"clusterName"`
			Remotes     []link.Entry `json:"remotes"`
		} `json:"global"`
		WireGuard struct {
			ListenPorts map[string]int `json:"listenPorts"`
		} `json:"wireguard"`
	}
	if err := yaml.UnmarshalStrict([]byte(out), &vals); err != nil {
		t.Fatalf("output is no values file: %v\n%s", err, out)
	}
	if vals.Global.ClusterName != "gcp" || !maps.Equal(vals.WireGuard.ListenPorts, map[string]int{"aws": link.FirstListenPort}) {
		t.Errorf("printed clusterName %q and listenPorts %v, want gcp and aws's port", vals.Global.ClusterName, vals.WireGuard.ListenPorts)
	}
	want := []link.Entry{{
		Name: "aws", Server: f.aws.Config.Host, CAData: base64.StdEncoding.EncodeToString(f.aws.Config.CAData),
		PodRanges:   []string{"198.18.1.0/24", "fd00:18:1::/63"},
		TokenSecret: link.SecretKey{Name: "semaphore-remote-aws", Key: "token"},
	}}
	if diff := cmp.Diff(want, vals.Global.Remotes); diff != "" {
		t.Errorf("printed global.remotes (-want +got):\n%s", diff)
	}
	if !strings.Contains(errOut, "podRanges [198.18.1.0/24 fd00:18:1::/63] of aws hold its Nodes' pod CIDRs") {
		t.Errorf("link does not say where podRanges come from: %s", errOut)
	}
	if got, _ := copied(t, f.gcp); got != f.token {
		t.Errorf("gcp's copy holds %q, want aws's token", got)
	}
}

// -o json and -o yaml print what link did, the values included, instead of the values.
func (f *linkTest) structuredOutput(t *testing.T) {
	f.linked(t)
	for format, decode := range map[string]func([]byte, any) error{"json": json.Unmarshal, "yaml": func(b []byte, v any) error { return yaml.UnmarshalStrict(b, v) }} {
		code, out, errOut := run(t, f.kc, append(f.args, "-o", format)...)
		var got []struct {
			From, To, RemoteRelease, Consumer, Secret, Action string
			Entry                                             link.Entry
			ListenPort                                        int
			Values                                            map[string]any
			Notes                                             []string
		}
		if err := decode([]byte(out), &got); code != 0 || err != nil || len(got) != 1 {
			t.Fatalf("-o %s: exit %d, %v\n%s%s", format, code, err, out, errOut)
		}
		l := got[0]
		if l.From != "aws" || l.To != "gcp" || l.RemoteRelease != "semaphore-remote/semaphore-remote" || l.Consumer != "gcp" ||
			l.Secret != "semaphore/semaphore-remote-aws" || l.Action != "unchanged" || l.Entry.Name != "aws" || l.Entry.Server != f.aws.Config.Host ||
			l.ListenPort != link.FirstListenPort || len(l.Notes) == 0 {
			t.Errorf("-o %s: %+v", format, l)
		}
		if global, _ := l.Values["global"].(map[string]any); global["clusterName"] != "gcp" {
			t.Errorf("-o %s: values %v, want the consumer's", format, l.Values)
		}
		if !strings.Contains(errOut, "semaphore/semaphore-remote-aws in context gcp: unchanged") {
			t.Errorf("-o %s: link does not say what it did on standard error: %s", format, errOut)
		}
	}
}

// Run again, link writes nothing to gcp; with --values-out it adds aws's entry and listen port
// to the values file and keeps what the file had, and once more it leaves the file as it is.
func (f *linkTest) again(t *testing.T) {
	f.linked(t)
	f.writeValues(t)
	writes := writesOfLink(t, f.gcp)
	_, version := copied(t, f.gcp)
	code, out, errOut := run(t, f.kc, append(f.args, "--values-out", f.values)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out != "" || !strings.Contains(errOut, ": unchanged") || !strings.Contains(errOut, "written") {
		t.Errorf("output %q, stderr %q", out, errOut)
	}
	if w := writesOfLink(t, f.gcp) - writes; w != 0 {
		t.Errorf("link run again wrote %d times to gcp", w)
	}
	if _, v := copied(t, f.gcp); v != version {
		t.Errorf("gcp's copy changed from version %s to %s", version, v)
	}
	var vals map[string]any
	data, _ := os.ReadFile(f.values)
	if err := yaml.Unmarshal(data, &vals); err != nil {
		t.Fatal(err)
	}
	global := vals["global"].(map[string]any)
	remotes := global["remotes"].([]any)
	wireguard := vals["wireguard"].(map[string]any)
	if wireguard["keepalive"] != "5s" || fmt.Sprint(wireguard["listenPorts"]) != "map[aws:51821]" {
		t.Errorf("wireguard values %v, want keepalive kept and aws's listen port added", wireguard)
	}
	if global["clusterName"] != "gcp" || vals["wireguard"] == nil || len(remotes) != 2 ||
		remotes[0].(map[string]any)["name"] != "merit" || remotes[1].(map[string]any)["server"] != f.aws.Config.Host {
		t.Errorf("values file:\n%s", data)
	}
	// And once more: the file too stays as it is.
	if code, _, errOut := run(t, f.kc, append(f.args, "--values-out", f.values)...); code != 0 || !strings.Contains(errOut, "remotes.yaml: unchanged") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// aws's semaphore-remote hands out another address (aws's API server through its proxy, a real
// server that takes the token, as another cluster answering under the name would): not written
// unless --force; after that, the same server again is linked as before.
func (f *linkTest) anotherServer(t *testing.T) {
	f.linkedInto(t)
	moved := proxiedHost(t, f.aws)
	setLink(t, f.aws, "apiServer", moved)
	t.Cleanup(func() { setLink(t, f.aws, "apiServer", f.aws.Config.Host) })
	before, err := os.ReadFile(f.values)
	if err != nil {
		t.Fatal(err)
	}
	writes := writesOfLink(t, f.gcp)
	withValues := append(f.args, "--values-out", f.values)
	fails(t, f.kc, withValues, "hands out for remote aws the server "+moved+" where the values file "+f.values+" has "+f.aws.Config.Host,
		"another cluster answering under that name?", "Nothing was written", "--force")
	if after, _ := os.ReadFile(f.values); string(after) != string(before) {
		t.Errorf("the values file changed:\n%s", after)
	}
	if w := writesOfLink(t, f.gcp) - writes; w != 0 {
		t.Errorf("link refused, and wrote %d times to gcp", w)
	}

	code, _, errOut := run(t, f.kc, append(withValues, "--force")...)
	if code != 0 || !strings.Contains(errOut, "--force: remote aws changes: the server "+moved) {
		t.Fatalf("with --force: exit %d: %s", code, errOut)
	}
	if e, err := link.EntryIn(f.values, "aws"); err != nil || e == nil || e.Server != moved {
		t.Errorf("entry after --force: %+v, %v; want server %s", e, err, moved)
	}

	// The same server and CA again, with a new token: a rotation, no --force needed.
	rotated := fillToken(t, f.aws, "gcp")
	code, _, errOut = run(t, f.kc, append(withValues, "--remote-name", "aws")...)
	if code != 0 || !strings.Contains(errOut, ": updated") || !strings.Contains(errOut, "remotes.yaml: unchanged") {
		t.Fatalf("the same server again: exit %d: %s", code, errOut)
	}
	if got, _ := copied(t, f.gcp); got != rotated {
		t.Errorf("gcp's copy holds %q, want the new token", got)
	}

	// Back: the values file has the proxy's address now, so that too needs --force.
	setLink(t, f.aws, "apiServer", f.aws.Config.Host)
	fails(t, f.kc, withValues, "the server "+f.aws.Config.Host+" where the values file", "--force")
	if code, _, errOut := run(t, f.kc, append(withValues, "--force")...); code != 0 {
		t.Fatalf("back with --force: exit %d: %s", code, errOut)
	}
}

// The same address with another CA (here gcp's, which does not verify aws's server: the
// reachability check is skipped) is another cluster too.
func (f *linkTest) anotherCA(t *testing.T) {
	f.linkedInto(t)
	ctx := context.Background()
	secrets := f.aws.Client.CoreV1().Secrets(remoteNamespace)
	s, err := secrets.Get(ctx, "semaphore-remote-gcp-token", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data[corev1.ServiceAccountRootCAKey] = f.gcp.Config.CAData
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { setToken(t, f.aws, "gcp", string(s.Data[corev1.ServiceAccountTokenKey])) })
	writes := writesOfLink(t, f.gcp)
	fails(t, f.kc, append(f.args, "--values-out", f.values, "--skip-reachability-check"), "hands out for remote aws another CA than the values file "+f.values+" has", "--force")
	if w := writesOfLink(t, f.gcp) - writes; w != 0 {
		t.Errorf("link refused, and wrote %d times to gcp", w)
	}
}

func (f *linkTest) afterRotation(t *testing.T) {
	f.linked(t)
	rotated := fillToken(t, f.aws, "gcp")
	if rotated == f.token {
		t.Fatal("the TokenRequest API gave the same token twice")
	}
	code, _, errOut := run(t, f.kc, f.args...)
	if code != 0 || !strings.Contains(errOut, ": updated") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got, _ := copied(t, f.gcp); got != rotated {
		t.Errorf("gcp's copy holds %q, want the new token", got)
	}
}

// Without --to-cluster, the consumer's name is the SEMAPHORE_LOCAL_CLUSTER of the semaphore
// release's controllers, here a hand-made one, removed after the step.
func (f *linkTest) consumerFromRelease(t *testing.T) {
	f.linked(t) // which creates the namespace semaphore
	ctx := context.Background()
	labels := map[string]string{"app": "semaphore-service-mirror"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "semaphore-service-mirror", Namespace: "semaphore"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "service-mirror", Image: "semaphore-service-mirror",
					Env: []corev1.EnvVar{{Name: "SEMAPHORE_LOCAL_CLUSTER", Value: "gcp"}},
				}}},
			},
		},
	}
	deployments := f.gcp.Client.AppsV1().Deployments("semaphore")
	if _, err := deployments.Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := deployments.Delete(ctx, dep.Name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	})
	if code, _, errOut := run(t, f.kc, "--from", "aws", "--to", "gcp"); code != 0 || !strings.Contains(errOut, "consumer gcp") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	fails(t, f.kc, []string{"--from", "aws", "--to", "gcp", "-n", "elsewhere"}, "no semaphore release in namespace elsewhere", "--to-cluster")
}

func (f *linkTest) refusedToken(t *testing.T) {
	f.linked(t)
	good, _ := copied(t, f.gcp)
	setToken(t, f.aws, "gcp", "not-a-token")
	t.Cleanup(func() { setToken(t, f.aws, "gcp", good) })
	fails(t, f.kc, f.args, "refuses the consumer's token (401)", "--skip-reachability-check")
	if got, _ := copied(t, f.gcp); got != good {
		t.Error("link copied a token the server refuses")
	}
}

func (f *linkTest) unreachable(t *testing.T) {
	setLink(t, f.aws, "apiServer", "https://127.0.0.1:1")
	t.Cleanup(func() { setLink(t, f.aws, "apiServer", f.aws.Config.Host) })
	fails(t, f.kc, f.args, "hands consumer gcp the server https://127.0.0.1:1", "not reachable", "connection refused", "--skip-reachability-check")
	code, out, errOut := run(t, f.kc, append(f.args, "--skip-reachability-check")...)
	if code != 0 || !strings.Contains(out, "server: https://127.0.0.1:1") {
		t.Errorf("with --skip-reachability-check: exit %d: %s%s", code, errOut, out)
	}
}

// The rotation of docs/operations.md, which moves gcp's token to generation 2: a new generation
// with the previous one kept, link, then the previous one dropped.
func (f *linkTest) tokenGeneration(t *testing.T) {
	f.linked(t)
	ctx := context.Background()
	previous, _ := copied(t, f.gcp)
	consumers := func(keep bool) map[string]any {
		return map[string]any{"clusterName": "aws", "apiServer": f.aws.Config.Host, "consumers": []any{
			map[string]any{"name": "gcp", "tokenGeneration": 2, "keepPreviousToken": keep}, map[string]any{"name": "merit"},
		}}
	}
	upgradeRemote(t, f.aws, consumers(true))
	token2 := clustertest.ConsumerToken(t, f.aws, "gcp")
	setTokenOf(t, f.aws, "semaphore-remote-gcp-token-2", token2)
	code, _, errOut := run(t, f.kc, f.args...)
	if code != 0 {
		t.Fatalf("link with two token generations: exit %d: %s", code, errOut)
	}
	if got, _ := copied(t, f.gcp); got != token2 || got == previous {
		t.Errorf("gcp's copy holds %q, want generation 2's token, not the previous one", got)
	}
	if _, err := f.aws.Client.CoreV1().Secrets(remoteNamespace).Get(ctx, "semaphore-remote-gcp-token", metav1.GetOptions{}); err != nil {
		t.Errorf("the previous token Secret, kept during the rotation: %v", err)
	}
	upgradeRemote(t, f.aws, consumers(false))
	if _, err := f.aws.Client.CoreV1().Secrets(remoteNamespace).Get(ctx, "semaphore-remote-gcp-token", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the previous token Secret once the rotation ends: %v, want it deleted (which revokes its token)", err)
	}
}

// upgradeRemote upgrades semaphore-remote in c to vals through the Helm SDK.
func upgradeRemote(t *testing.T, c *testenv.Cluster, vals map[string]any) {
	t.Helper()
	cfg, err := helmchart.Config(c.DirectKubeconfig, remoteNamespace, t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := helmchart.Upgrade(cfg, filepath.Join(testbed.RepoRoot(), helmchart.RemoteDir), "semaphore-remote", remoteNamespace, vals); err != nil {
		t.Fatal(err)
	}
}

// Without a values file, what gcp has for aws is what its semaphore release reads: the
// kubeconfig Secrets of its controllers. link keeps to that server and CA too.
func (f *linkTest) releaseServer(t *testing.T) {
	clustertest.Umbrella(t, f.gcp, "gcp", "aws", f.aws.Config.Host, f.aws.Config.CAData)
	if code, _, errOut := run(t, f.kc, f.args...); code != 0 {
		t.Fatalf("the server and CA the release has: exit %d: %s", code, errOut)
	}

	moved := proxiedHost(t, f.aws)
	setLink(t, f.aws, "apiServer", moved)
	t.Cleanup(func() { setLink(t, f.aws, "apiServer", f.aws.Config.Host) })
	writes := writesOfLink(t, f.gcp)
	fails(t, f.kc, f.args, "hands out for remote aws the server "+moved+" where the semaphore release in context gcp (Secrets semaphore/semaphore-policy-remote-aws, semaphore/semaphore-service-mirror-remote-aws, semaphore/semaphore-wireguard-remote-aws) has "+f.aws.Config.Host, "Nothing was written", "--force")
	if w := writesOfLink(t, f.gcp) - writes; w != 0 {
		t.Errorf("link refused, and wrote %d times to gcp", w)
	}
	code, out, errOut := run(t, f.kc, append(f.args, "--force")...)
	if code != 0 || !strings.Contains(out, "server: "+moved) || strings.Count(errOut, "--force: remote aws changes") != 1 {
		t.Errorf("with --force: exit %d, want the change said once: %s%s", code, errOut, out)
	}
}
