package charts_test

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	policyapp "github.com/kube-semaphore/semaphore/components/policy/app"
	mirrorapp "github.com/kube-semaphore/semaphore/components/service-mirror/app"
	wgapp "github.com/kube-semaphore/semaphore/components/wireguard/app"
	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
)

// remotesDir is where the controllers look for the remotes' credentials, SEMAPHORE_REMOTES_DIR.
const remotesDir = "/etc/semaphore/remotes"

// remoteValues is one item of global.remotes.
type remoteValues struct {
	Name, Server, CAData string
	PodRanges            []string
	TokenSecret          *secretKeyRef
	KubeconfigSecret     *secretKeyRef
}

type secretKeyRef struct{ Name, Key string }

// remotesOf reads global.remotes from values.
func remotesOf(t testing.TB, vals map[string]any) []remoteValues {
	t.Helper()
	list, _ := lookup(vals, "global", "remotes").([]any)
	var out []remoteValues
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			t.Fatalf("global.remotes item %v is not an object", item)
		}
		r := remoteValues{Name: str(m["name"]), Server: str(m["server"]), CAData: str(m["caData"])}
		ranges, _ := m["podRanges"].([]any)
		for _, c := range ranges {
			r.PodRanges = append(r.PodRanges, str(c))
		}
		ref := func(key, defaultKey string) *secretKeyRef {
			s, ok := m[key].(map[string]any)
			if !ok {
				return nil
			}
			k := str(s["key"])
			if k == "" {
				k = defaultKey
			}
			return &secretKeyRef{Name: str(s["name"]), Key: k}
		}
		r.TokenSecret = ref("tokenSecret", "token")
		r.KubeconfigSecret = ref("kubeconfigSecret", "kubeconfig")
		out = append(out, r)
	}
	return out
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// mainContainer is the workload's container that runs the component.
func mainContainer(t testing.TB, w workload) corev1.Container {
	t.Helper()
	if n := len(w.Pod.Spec.Containers); n != 1 {
		t.Fatalf("%s %s has %d containers, want 1", w.Kind, w.Name, n)
	}
	return w.Pod.Spec.Containers[0]
}

// checkSecurity checks the security settings of every container of w: read-only root
// filesystem, no privilege escalation, every capability dropped (wireguard adds NET_ADMIN and
// nothing else), seccomp RuntimeDefault, never privileged, non-root except wireguard; no host
// namespaces except wireguard's network; resources set; probes on /healthz and /readyz at the
// admin port's number.
func checkSecurity(t *testing.T, w workload) {
	t.Helper()
	spec := w.Pod.Spec
	psc := ptr.Deref(spec.SecurityContext, corev1.PodSecurityContext{})
	wg := w.Component == "wireguard"
	if spec.HostNetwork != wg {
		t.Errorf("%s %s: hostNetwork %v, want %v", w.Kind, w.Name, spec.HostNetwork, wg)
	}
	if spec.HostPID || spec.HostIPC {
		t.Errorf("%s %s: shares the host's PID or IPC namespace", w.Kind, w.Name)
	}
	for _, v := range spec.Volumes {
		if v.HostPath == nil {
			continue
		}
		if !wg || !slices.Contains([]string{"/var/lib/semaphore-wireguard", "/dev/net/tun"}, path.Clean(v.HostPath.Path)) {
			t.Errorf("%s %s: hostPath volume %s (%s)", w.Kind, w.Name, v.Name, v.HostPath.Path)
		}
	}
	all := append(slices.Clone(spec.InitContainers), spec.Containers...)
	for _, c := range all {
		what := fmt.Sprintf("%s %s container %s", w.Kind, w.Name, c.Name)
		sc := ptr.Deref(c.SecurityContext, corev1.SecurityContext{})
		if !ptr.Deref(sc.ReadOnlyRootFilesystem, false) {
			t.Errorf("%s: readOnlyRootFilesystem is not true", what)
		}
		if ptr.Deref(sc.AllowPrivilegeEscalation, true) {
			t.Errorf("%s: allowPrivilegeEscalation is not false", what)
		}
		if ptr.Deref(sc.Privileged, false) {
			t.Errorf("%s: privileged", what)
		}
		seccomp := sc.SeccompProfile
		if seccomp == nil {
			seccomp = psc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: seccompProfile %v, want RuntimeDefault", what, seccomp)
		}
		caps := ptr.Deref(sc.Capabilities, corev1.Capabilities{})
		if !slices.Contains(caps.Drop, "ALL") {
			t.Errorf("%s: capabilities.drop %v does not hold ALL", what, caps.Drop)
		}
		wantAdd := []corev1.Capability(nil)
		if wg {
			wantAdd = []corev1.Capability{"NET_ADMIN"}
		}
		if !slices.Equal(caps.Add, wantAdd) {
			t.Errorf("%s: capabilities.add %v, want %v", what, caps.Add, wantAdd)
		}
		nonRoot := sc.RunAsNonRoot
		if nonRoot == nil {
			nonRoot = psc.RunAsNonRoot
		}
		uid := sc.RunAsUser
		if uid == nil {
			uid = psc.RunAsUser
		}
		if !wg {
			if !ptr.Deref(nonRoot, false) {
				t.Errorf("%s: runAsNonRoot is not true", what)
			}
			// A numeric user: the kubelet cannot check runAsNonRoot against a named image user.
			if uid == nil || *uid == 0 {
				t.Errorf("%s: runAsUser %v, want a non-root uid", what, uid)
			}
		}
		req, lim := c.Resources.Requests, c.Resources.Limits
		if req.Cpu().IsZero() || req.Memory().IsZero() || lim.Memory().IsZero() {
			t.Errorf("%s: resources %v: want cpu and memory requests and a memory limit", what, c.Resources)
		}
	}
	c := mainContainer(t, w)
	what := fmt.Sprintf("%s %s container %s", w.Kind, w.Name, c.Name)
	// The probes name the port the admin server listens on by its number: a name would need a
	// container port, which wireguard's container does not declare (checkWireGuardPod).
	port := adminPortOf(t, w)
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s probe", what, p.name)
			continue
		}
		g := p.probe.HTTPGet
		if g.Path != p.path || g.Port.Type != intstr.Int || g.Port.IntValue() != port {
			t.Errorf("%s: %s probe on %s port %s, want %s on the admin port, %d", what, p.name, g.Path, g.Port.String(), p.path, port)
		}
	}
	if wg {
		checkWireGuardPod(t, w, c)
	}
}

// adminPortOf is the port w's admin server listens on: the port of SEMAPHORE_ADMIN_ADDR as the
// container's environment writes it ("[$(POD_IP)]:8080" or ":8080"; checkAdminAddress checks it
// against the values once expanded).
func adminPortOf(t testing.TB, w workload) int {
	t.Helper()
	addr := envValue(mainContainer(t, w), "SEMAPHORE_ADMIN_ADDR", "")
	_, port, err := net.SplitHostPort(addr)
	n, err2 := strconv.Atoi(port)
	if err != nil || err2 != nil {
		t.Fatalf("%s %s: SEMAPHORE_ADMIN_ADDR=%q has no port", w.Kind, w.Name, addr)
	}
	return n
}

// checkWireGuardPod checks what the DaemonSet needs to work at all: every node, no host ports
// (checkNoHostPorts), the key directory from the host and, unless it runs kernel WireGuard only,
// /dev/net/tun from the host and a writable /var/run/wireguard (userspace WireGuard's UAPI
// socket) despite the read-only root filesystem.
func checkWireGuardPod(t *testing.T, w workload, c corev1.Container) {
	t.Helper()
	spec := w.Pod.Spec
	checkNoHostPorts(t, w)
	if !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Operator == corev1.TolerationOpExists && tol.Key == "" && tol.Effect == ""
	}) {
		t.Errorf("%s %s: tolerations %v do not tolerate every taint ({operator: Exists})", w.Kind, w.Name, spec.Tolerations)
	}
	mountOf := func(dir string) (corev1.VolumeMount, *corev1.Volume) {
		for _, m := range c.VolumeMounts {
			if path.Clean(m.MountPath) == dir {
				for i := range spec.Volumes {
					if spec.Volumes[i].Name == m.Name {
						return m, &spec.Volumes[i]
					}
				}
			}
		}
		return corev1.VolumeMount{}, nil
	}
	keyDir := envValue(c, "SEMAPHORE_WG_KEY_DIR", "/var/lib/semaphore-wireguard")
	if m, v := mountOf(keyDir); v == nil || v.HostPath == nil || m.ReadOnly {
		t.Errorf("%s %s: the key directory %s is not a writable hostPath mount", w.Kind, w.Name, keyDir)
	}
	// Kernel WireGuard needs neither the TUN device nor a socket directory.
	if envValue(c, "SEMAPHORE_WG_MODE", "auto") == "kernel" {
		return
	}
	if _, v := mountOf("/dev/net/tun"); v == nil || v.HostPath == nil {
		t.Errorf("%s %s: /dev/net/tun is not mounted from the host (mode %s may use userspace WireGuard)", w.Kind, w.Name, envValue(c, "SEMAPHORE_WG_MODE", "auto"))
	}
	writable := false
	for _, dir := range []string{"/var/run/wireguard", "/var/run", "/run/wireguard", "/run"} {
		if m, v := mountOf(dir); v != nil && !m.ReadOnly {
			writable = true
		}
	}
	if !writable {
		t.Errorf("%s %s: nothing writable is mounted at /var/run/wireguard, where userspace WireGuard creates its socket; the root filesystem is read-only", w.Kind, w.Name)
	}
}

// checkNoHostPorts checks that no container of w's pod template declares a port: on the host
// network every declared port is a host port, and the scheduler keeps a pod off a node where
// another holds the same host port, so a rollout's successor (maxSurge) could never start beside
// the pod it replaces.
func checkNoHostPorts(t *testing.T, w workload) {
	t.Helper()
	for _, c := range slices.Concat(w.Pod.Spec.InitContainers, w.Pod.Spec.Containers) {
		if len(c.Ports) > 0 {
			t.Errorf("%s %s container %s declares ports %v: on the host network they are host ports, which keep a surged successor off the node", w.Kind, w.Name, c.Name, c.Ports)
		}
	}
}

// envValue is the literal value of variable name in c, or def when absent.
func envValue(c corev1.Container, name, def string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return def
}

// podEnv is helmchart.Env for a pod of w in namespace on nodeName; what it cannot resolve fails
// the test.
func podEnv(t testing.TB, w workload, c corev1.Container, namespace, podName, nodeName string) map[string]string {
	t.Helper()
	env, err := helmchart.Env(w, c, helmchart.Pod{Name: podName, Namespace: namespace, Node: nodeName, HostIP: "192.0.2.1", IP: "198.18.0.10"})
	if err != nil {
		t.Error(err)
	}
	return env
}

// documentedVariables are the variables docs/configuration.md lists, by component.
var documentedVariables = sync.OnceValues(func() (map[string][]string, error) {
	data, err := os.ReadFile(testbed.RepoRoot() + "/docs/configuration.md")
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	section := ""
	row := regexp.MustCompile("^\\| `([A-Z0-9_]+)` \\|")
	for line := range strings.Lines(string(data)) {
		if s, ok := strings.CutPrefix(line, "## semaphore-"); ok {
			section = strings.TrimSpace(s)
			continue
		}
		if m := row.FindStringSubmatch(line); m != nil && section != "" {
			out[section] = append(out[section], m[1])
		}
	}
	return out, nil
})

// checkEnv checks the main container's environment: the shared settings from the global values
// (vals) and leader election unless the component's values (sub) turn it off,
// every SEMAPHORE_* variable one that docs/configuration.md lists for the component, and the
// whole environment a valid configuration of the component (its own Config and Validate).
func checkEnv(t *testing.T, w workload, vals, sub map[string]any) {
	t.Helper()
	c := mainContainer(t, w)
	env := podEnv(t, w, c, w.Object.GetNamespace(), w.Name+"-abcde", "node-1")
	docs, err := documentedVariables()
	if err != nil {
		t.Fatal(err)
	}
	for name := range env {
		if strings.HasPrefix(name, "SEMAPHORE_") && !slices.Contains(docs[w.Component], name) {
			t.Errorf("%s %s: %s is not a variable of semaphore-%s (docs/configuration.md)", w.Kind, w.Name, name, w.Component)
		}
	}
	var names []string
	for _, r := range remotesOf(t, vals) {
		names = append(names, r.Name)
	}
	want := map[string]string{
		"SEMAPHORE_LOCAL_CLUSTER": str(lookup(vals, "global", "clusterName")),
		"SEMAPHORE_REMOTES":       strings.Join(names, ","),
		"SEMAPHORE_REMOTES_DIR":   remotesDir,
	}
	for k, v := range want {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("%s %s: %s=%q, want %q", w.Kind, w.Name, k, got, v)
		}
	}
	if w.Kind == "Deployment" && lookup(sub, "leaderElection", "enabled") != false {
		ns := env["SEMAPHORE_LEADER_ELECT_NAMESPACE"]
		if ns == "" {
			ns = env["POD_NAMESPACE"]
		}
		if env["SEMAPHORE_LEADER_ELECT"] == "false" || ns != w.Object.GetNamespace() {
			t.Errorf("%s %s: leader election is not on in the release namespace (SEMAPHORE_LEADER_ELECT=%q, namespace %q)", w.Kind, w.Name, env["SEMAPHORE_LEADER_ELECT"], ns)
		}
	}
	if w.Component == "wireguard" && !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "SEMAPHORE_WG_NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	}) {
		t.Errorf("%s %s: SEMAPHORE_WG_NODE_NAME does not come from spec.nodeName", w.Kind, w.Name)
	}
	checkAdminAddress(t, w, env, sub)
	cfg, err := loadConfig(t, w.Component, env)
	if err != nil {
		t.Errorf("%s %s: the component would not start with this environment: %v", w.Kind, w.Name, err)
		return
	}
	switch cfg := cfg.(type) {
	case *wgapp.Config:
		checkPodCIDRsFrom(t, w, env, cfg, names, sub)
		checkRemotePodRanges(t, w, env, cfg.RemoteRanges, remotesOf(t, vals))
	case *policyapp.Config:
		checkRemotePodRanges(t, w, env, cfg.RemoteRanges, remotesOf(t, vals))
	case *mirrorapp.Config:
		checkRemotePodRanges(t, w, env, cfg.RemoteRanges, remotesOf(t, vals))
	}
}

// checkRemotePodRanges checks a container's SEMAPHORE_REMOTE_POD_RANGES against
// global.remotes[].podRanges (remote:CIDR pairs in the order of the remotes, the variable unset
// when no remote has any), and the ranges each remote is held to once decoded.
func checkRemotePodRanges(t *testing.T, w workload, env map[string]string, cfg config.RemoteRanges, remotes []remoteValues) {
	t.Helper()
	var pairs []string
	for _, r := range remotes {
		for _, c := range r.PodRanges {
			pairs = append(pairs, r.Name+":"+c)
		}
		var got []string
		for _, p := range cfg.RemotePodRanges[r.Name] {
			got = append(got, p.String())
		}
		if !slices.Equal(got, r.PodRanges) {
			t.Errorf("%s %s: remote %s is held to %v, want its podRanges %v", w.Kind, w.Name, r.Name, got, r.PodRanges)
		}
	}
	got, ok := env["SEMAPHORE_REMOTE_POD_RANGES"]
	if want := strings.Join(pairs, ","); got != want || ok != (want != "") {
		t.Errorf("%s %s: SEMAPHORE_REMOTE_POD_RANGES=%q (set: %v), want %q", w.Kind, w.Name, got, ok, want)
	}
}

// loadConfig decodes env into the component's Config as the binary does at start (envconfig,
// then Validate), with nothing else in the environment.
func loadConfig(t testing.TB, component string, env map[string]string) (config.Validator, error) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SEMAPHORE_") || strings.HasPrefix(k, "POD_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var spec config.Validator
	switch component {
	case "service-mirror":
		spec = &mirrorapp.Config{}
	case "policy":
		spec = &policyapp.Config{}
	case "wireguard":
		spec = &wgapp.Config{}
	default:
		t.Fatalf("unknown component %q", component)
	}
	return spec, config.Load(nil, io.Discard, spec)
}

type projectedFile = helmchart.ProjectedFile

// volumeFiles is helmchart.VolumeFiles for a volume that must be well-formed.
func volumeFiles(t testing.TB, m *manifest, v corev1.Volume) map[string]projectedFile {
	t.Helper()
	files, err := helmchart.VolumeFiles(m, v)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// secretData is helmchart.SecretData for a Secret that must convert.
func secretData(t testing.TB, s *unstructured.Unstructured) map[string][]byte {
	t.Helper()
	data, err := helmchart.SecretData(s)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// checkRemotes checks how w gets each remote's credentials: one read-only mount per remote at
// /etc/semaphore/remotes/<name>, holding kubeconfig and (for a token) token, readable by the
// container's user; for a token, a kubeconfig Secret of the release that parses and points at
// the remote's server and CA with tokenFile "token". It returns the kubeconfig Secrets used.
func checkRemotes(t *testing.T, m *manifest, w workload, vals map[string]any) []string {
	t.Helper()
	c := mainContainer(t, w)
	spec := w.Pod.Spec
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		if rest, ok := strings.CutPrefix(path.Clean(vm.MountPath), remotesDir+"/"); ok {
			if strings.Contains(rest, "/") {
				t.Errorf("%s %s: mount %s is below a remote's directory", w.Kind, w.Name, vm.MountPath)
				continue
			}
			mounts[rest] = vm
		} else if path.Clean(vm.MountPath) == remotesDir {
			t.Errorf("%s %s: one volume mounted at %s for every remote", w.Kind, w.Name, remotesDir)
		}
	}
	var used []string
	remotes := remotesOf(t, vals)
	for _, r := range remotes {
		what := fmt.Sprintf("%s %s remote %s", w.Kind, w.Name, r.Name)
		vm, ok := mounts[r.Name]
		if !ok {
			t.Errorf("%s: nothing mounted at %s/%s", what, remotesDir, r.Name)
			continue
		}
		delete(mounts, r.Name)
		if !vm.ReadOnly {
			t.Errorf("%s: mount is not read-only", what)
		}
		if vm.SubPath != "" {
			t.Errorf("%s: mounted with subPath, which never sees a rotated token", what)
		}
		v, ok := volumes[vm.Name]
		if !ok {
			t.Errorf("%s: volume %s does not exist", what, vm.Name)
			continue
		}
		files := volumeFiles(t, m, v)
		var want []string
		switch {
		case r.TokenSecret != nil:
			want = []string{"kubeconfig", "token"}
			if f := files["token"]; f.Secret != r.TokenSecret.Name || f.Key != r.TokenSecret.Key {
				t.Errorf("%s: token comes from Secret %s key %s, want %s key %s", what, f.Secret, f.Key, r.TokenSecret.Name, r.TokenSecret.Key)
			}
			if f, ok := files["kubeconfig"]; ok {
				used = append(used, f.Secret)
				checkKubeconfigSecret(t, m, what, f, r)
			}
		case r.KubeconfigSecret != nil:
			want = []string{"kubeconfig"}
			if f := files["kubeconfig"]; f.Secret != r.KubeconfigSecret.Name || f.Key != r.KubeconfigSecret.Key {
				t.Errorf("%s: kubeconfig comes from Secret %s key %s, want %s key %s", what, f.Secret, f.Key, r.KubeconfigSecret.Name, r.KubeconfigSecret.Key)
			}
		}
		var got []string
		for p, f := range files {
			got = append(got, p)
			if !readable(w, c, f.Mode) {
				t.Errorf("%s: file %s (mode %#o) is not readable by the container's user", what, p, f.Mode)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: files %v, want %v", what, got, want)
		}
	}
	for name := range mounts {
		t.Errorf("%s %s: %s/%s is mounted but %s is not a remote", w.Kind, w.Name, remotesDir, name, name)
	}
	return used
}

// checkKubeconfigSecret checks a kubeconfig Secret the release renders for remote r.
func checkKubeconfigSecret(t *testing.T, m *manifest, what string, f projectedFile, r remoteValues) {
	t.Helper()
	s := m.Get("Secret", f.Secret)
	if s == nil {
		t.Errorf("%s: kubeconfig Secret %s is not rendered by the release", what, f.Secret)
		return
	}
	if ns := s.GetNamespace(); ns != "" && ns != m.Release.Namespace {
		t.Errorf("%s: kubeconfig Secret %s is in namespace %s, not the release's", what, f.Secret, ns)
	}
	data, ok := secretData(t, s)[f.Key]
	if !ok {
		t.Errorf("%s: Secret %s has no key %s", what, f.Secret, f.Key)
		return
	}
	kc, err := clientcmd.Load(data)
	if err != nil {
		t.Errorf("%s: kubeconfig in Secret %s does not parse: %v", what, f.Secret, err)
		return
	}
	if err := clientcmd.Validate(*kc); err != nil {
		t.Errorf("%s: kubeconfig in Secret %s is not valid: %v", what, f.Secret, err)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil || kc.Clusters[ctx.Cluster] == nil || kc.AuthInfos[ctx.AuthInfo] == nil {
		t.Errorf("%s: kubeconfig's current context %q does not resolve:\n%s", what, kc.CurrentContext, data)
		return
	}
	cl, user := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
	if cl.Server != r.Server {
		t.Errorf("%s: kubeconfig server %q, want %q", what, cl.Server, r.Server)
	}
	wantCA, err := base64.StdEncoding.DecodeString(r.CAData)
	if err != nil {
		t.Fatalf("%s: caData in the values is not base64: %v", what, err)
	}
	if string(cl.CertificateAuthorityData) != string(wantCA) || cl.CertificateAuthority != "" || cl.InsecureSkipTLSVerify {
		t.Errorf("%s: kubeconfig CA %q (file %q, insecure %v), want the values' caData %q", what, cl.CertificateAuthorityData, cl.CertificateAuthority, cl.InsecureSkipTLSVerify, wantCA)
	}
	if user.TokenFile != "token" || user.Token != "" || user.ClientCertificateData != nil || user.Exec != nil || user.Username != "" {
		t.Errorf("%s: kubeconfig user %+v, want only tokenFile \"token\"", what, user)
	}
	if len(kc.Clusters) != 1 || len(kc.AuthInfos) != 1 || len(kc.Contexts) != 1 {
		t.Errorf("%s: kubeconfig holds %d clusters, %d users, %d contexts, want one each", what, len(kc.Clusters), len(kc.AuthInfos), len(kc.Contexts))
	}
}

// readable reports whether a projected file of mode is readable by c's user: projected files
// belong to root, and to the fsGroup's group when there is one.
func readable(w workload, c corev1.Container, mode int32) bool {
	psc := ptr.Deref(w.Pod.Spec.SecurityContext, corev1.PodSecurityContext{})
	sc := ptr.Deref(c.SecurityContext, corev1.SecurityContext{})
	uid := sc.RunAsUser
	if uid == nil {
		uid = psc.RunAsUser
	}
	switch {
	case ptr.Deref(uid, 0) == 0:
		return mode&0o400 != 0
	case psc.FSGroup != nil:
		return mode&0o044 != 0
	default:
		return mode&0o004 != 0
	}
}

// checkAdminAddress checks where the admin server listens: a host-network pod (wireguard) on its
// pod IP, the node's address that probes and scrapes use, unless adminBindAddress is "all"; a
// pod with a network namespace of its own on every address of it.
func checkAdminAddress(t *testing.T, w workload, env map[string]string, sub map[string]any) {
	t.Helper()
	host, port, err := net.SplitHostPort(env["SEMAPHORE_ADMIN_ADDR"])
	if err != nil {
		t.Errorf("%s %s: SEMAPHORE_ADMIN_ADDR=%q: %v", w.Kind, w.Name, env["SEMAPHORE_ADMIN_ADDR"], err)
		return
	}
	wantHost := ""
	if w.Pod.Spec.HostNetwork && lookup(sub, "adminBindAddress") != "all" {
		wantHost = env["POD_IP"]
		if wantHost == "" {
			t.Errorf("%s %s: POD_IP is not set before SEMAPHORE_ADMIN_ADDR", w.Kind, w.Name)
		}
	}
	if host != wantHost {
		t.Errorf("%s %s: the admin server listens on %q, want %q (host network: %v)", w.Kind, w.Name, host, wantHost, w.Pod.Spec.HostNetwork)
	}
	if want := cmp.Or(str(lookup(sub, "adminPort")), "8080"); port != want {
		t.Errorf("%s %s: the admin server listens on port %s, want adminPort %s", w.Kind, w.Name, port, want)
	}
	// A pod with a network namespace of its own declares the admin port by name, which its
	// NetworkPolicy admits; a host-network pod declares none (checkNoHostPorts).
	if w.Pod.Spec.HostNetwork {
		return
	}
	c := mainContainer(t, w)
	i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "admin" })
	if i < 0 || port != strconv.Itoa(int(c.Ports[i].ContainerPort)) {
		t.Errorf("%s %s: the admin server listens on port %s, the container's ports are %v", w.Kind, w.Name, port, c.Ports)
	}
}
