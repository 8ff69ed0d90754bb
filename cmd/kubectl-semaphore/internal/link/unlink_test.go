package link_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/link"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// unlink runs unlink as run runs link.
func unlink(t *testing.T, kubeconfig string, args ...string) (int, string, string) {
	t.Helper()
	return command(t, kubeconfig, "unlink", args...)
}

// tokenCopy is c's copy of the token of remote (Secret semaphore/semaphore-remote-<remote>), nil
// when it has none.
func tokenCopy(t *testing.T, c *testenv.Cluster, remote string) *corev1.Secret {
	t.Helper()
	s, err := c.Client.CoreV1().Secrets("semaphore").Get(context.Background(), link.SecretName(remote), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// handMade creates gcp's copy of aws's token as the user, not link, would, labelled with
// labels, as field manager manager.
func handMade(t *testing.T, gcp *testenv.Cluster, manager string, labels map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "semaphore-remote-aws", Labels: labels}, Data: map[string][]byte{"token": []byte("by-hand")}}
	if _, err := gcp.Client.CoreV1().Secrets("semaphore").Create(context.Background(), s, metav1.CreateOptions{FieldManager: manager}); err != nil {
		t.Fatal(err)
	}
}

// says fails the test unless text holds every one of want.
func says(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%q does not say %q", text, w)
		}
	}
}

// unlink undoes link: it deletes the consumer's copy of the token, which link labels as its
// own, and takes the remote's entry and listen port out of the values file, keeping the file's
// other values and comments, so that the chart installs the file as it did before the link. Run
// again, it finds nothing to remove. A Secret of that name that link did not make is refused
// and kept, with the values file, even when link updated its token; one an older link made is
// deleted. --both-ways undoes link --both-ways.
func TestUnlink(t *testing.T) {
	clusters := testenv.Start(t, testenv.Options{}, "aws", "gcp")
	aws, gcp := clusters[0], clusters[1]
	ctx := context.Background()
	kc := kubeconfig(t, aws, gcp)
	for _, c := range clusters {
		if err := c.EnsureNamespace(ctx, remoteNamespace); err != nil {
			t.Fatal(err)
		}
	}
	installRemote(t, aws, "gcp")
	installRemote(t, gcp, "aws")
	fillToken(t, aws, "gcp")
	fillToken(t, gcp, "aws")

	values := filepath.Join(t.TempDir(), "gcp.yaml")
	if err := os.WriteFile(values, []byte("global:\n  clusterName: gcp\n  remotes:\n    - name: merit\n      server: https://merit.example.net\n      allowAnyPodAddress: true\n      tokenSecret: {name: semaphore-remote-merit, key: token}\nwireguard:\n  keepalive: 5s\n  listenPorts: {merit: 51830}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	linkArgs := []string{"--from", "aws", "--to", "gcp", "--to-cluster", "gcp", "--values-out", values, "--pod-ranges", "198.18.1.0/24"}
	args := []string{"--remote-name", "aws", "--to", "gcp", "--to-cluster", "gcp", "--values-out", values}
	relink := func(t *testing.T) {
		t.Helper()
		if code, _, errOut := run(t, kc, linkArgs...); code != 0 {
			t.Fatalf("link: exit %d: %s", code, errOut)
		}
	}

	t.Run("link, then unlink", func(t *testing.T) {
		relink(t)
		if s := tokenCopy(t, gcp, "aws"); s == nil || s.Labels["semaphore.uw.io/linked-remote"] != "aws" {
			t.Fatalf("link's Secret %+v is not labelled as link's", s)
		}
		linked, err := os.ReadFile(values)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(values, append([]byte("# gcp's values, kept\n"), linked...), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := unlink(t, kc, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		says(t, out, "Secret semaphore/semaphore-remote-aws in context gcp: deleted",
			"global.remotes entry aws and wireguard.listenPorts.aws=51821 in "+values+": removed",
			"next: helm upgrade the semaphore release in context gcp with -f "+values+", so that it stops reading aws",
			"the token stays valid in aws until its semaphore-remote no longer has gcp among its consumers")
		if s := tokenCopy(t, gcp, "aws"); s != nil {
			t.Errorf("Secret %s/%s is still there", s.Namespace, s.Name)
		}
		if e, err := link.EntryIn(values, "aws"); e != nil || err != nil {
			t.Errorf("entry of aws %+v, %v; want none", e, err)
		}
		data, _ := os.ReadFile(values)
		vals := umbrellaValues(t, values)
		if !strings.HasPrefix(string(data), "# gcp's values, kept\n") || vals["global"].(map[string]any)["clusterName"] != "gcp" || vals["wireguard"].(map[string]any)["keepalive"] != "5s" {
			t.Errorf("the values file lost other values or comments:\n%s", data)
		}
		if e, _ := link.EntryIn(values, "merit"); e == nil || e.Server != "https://merit.example.net" {
			t.Errorf("entry of merit %+v, want it kept", e)
		}
		if got := listenPortsEnv(t, values); got != "merit:51830" {
			t.Errorf("the values file installs semaphore-wireguard with listen ports %q, want merit's alone", got)
		}
	})

	t.Run("again: nothing to remove", func(t *testing.T) {
		before, _ := os.ReadFile(values)
		code, out, errOut := unlink(t, kc, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		says(t, out, "Secret semaphore/semaphore-remote-aws in context gcp: none, nothing to remove",
			values+": no global.remotes entry aws nor wireguard.listenPorts.aws, nothing to remove")
		if strings.Contains(out, "next:") {
			t.Errorf("with nothing removed, unlink still says what to do next: %s", out)
		}
		if after, _ := os.ReadFile(values); string(after) != string(before) {
			t.Errorf("the values file changed:\n%s", after)
		}
	})

	// Labelled part-of=semaphore by the user, with its token written by link: still not link's.
	t.Run("a Secret link did not make", func(t *testing.T) {
		handMade(t, gcp, "kubectl-create", map[string]string{"app.kubernetes.io/part-of": "semaphore"})
		relink(t)
		before, _ := os.ReadFile(values)
		code, _, errOut := unlink(t, kc, args...)
		if code != 2 {
			t.Errorf("exit %d, want 2", code)
		}
		says(t, errOut, "context gcp: Secret semaphore/semaphore-remote-aws was not made by kubectl semaphore link", "semaphore.uw.io/linked-remote=aws",
			"removed nothing", "kubectl --context gcp -n semaphore delete secret semaphore-remote-aws")
		if s := tokenCopy(t, gcp, "aws"); s == nil || len(s.Data["token"]) == 0 {
			t.Errorf("the Secret: %+v, want it kept", s)
		}
		if after, _ := os.ReadFile(values); string(after) != string(before) {
			t.Errorf("the values file changed:\n%s", after)
		}
		if err := gcp.Client.CoreV1().Secrets("semaphore").Delete(ctx, "semaphore-remote-aws", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	// Before the label, link labelled what it made part-of=semaphore, as field manager
	// kubectl-semaphore.
	t.Run("a Secret an older link made", func(t *testing.T) {
		handMade(t, gcp, "kubectl-semaphore", map[string]string{"app.kubernetes.io/part-of": "semaphore"})
		code, out, errOut := unlink(t, kc, append(args, "-o", "json")...)
		var got []struct {
			From, To, Remote, Consumer, Secret, Action, ValuesFile string
			ValuesChanged                                          bool
			Entry                                                  *link.Entry
			ListenPort                                             *int
			Notes                                                  []string
		}
		if err := yaml.UnmarshalStrict([]byte(out), &got); code != 0 || err != nil || len(got) != 1 || !strings.HasPrefix(out, "[") {
			t.Fatalf("exit %d, %v: %s%s", code, err, out, errOut)
		}
		u := got[0]
		if u.From != "" || u.To != "gcp" || u.Remote != "aws" || u.Consumer != "gcp" || u.Secret != "semaphore/semaphore-remote-aws" || u.Action != "deleted" ||
			u.ValuesFile != values || !u.ValuesChanged || u.Entry == nil || u.Entry.Server != aws.Config.Host || u.ListenPort == nil || *u.ListenPort != 51821 || len(u.Notes) != 2 {
			t.Errorf("-o json: %+v", u)
		}
		if s := tokenCopy(t, gcp, "aws"); s != nil {
			t.Error("the Secret is still there")
		}
	})

	t.Run("the consumer's name for its values file", func(t *testing.T) {
		code, _, errOut := unlink(t, kc, "--remote-name", "aws", "--to", "gcp", "--values-out-dir", t.TempDir())
		if code != 2 || !strings.Contains(errOut, "--to-cluster") {
			t.Errorf("exit %d, want 2 and the flag that names the consumer: %s", code, errOut)
		}
	})

	t.Run("both ways", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "values")
		if code, _, errOut := run(t, kc, "--from", "aws", "--to", "gcp", "--both-ways", "--values-out-dir", dir, "--pod-ranges", "198.18.1.0/24", "--to-pod-ranges", "198.18.2.0/24"); code != 0 {
			t.Fatalf("link --both-ways: exit %d: %s", code, errOut)
		}
		both := []string{"--from", "aws", "--to", "gcp", "--both-ways", "--values-out-dir", dir, "-o", "yaml"}
		code, out, errOut := unlink(t, kc, both...)
		type unlinked struct{ From, To, Remote, Consumer, Action string }
		var got []unlinked
		if err := yaml.Unmarshal([]byte(out), &got); code != 0 || err != nil {
			t.Fatalf("exit %d, %v: %s%s", code, err, out, errOut)
		}
		if diff := cmp.Diff([]unlinked{{"aws", "gcp", "aws", "gcp", "deleted"}, {"gcp", "aws", "gcp", "aws", "deleted"}}, got); diff != "" {
			t.Errorf("-o yaml (-want +got):\n%s", diff)
		}
		for consumer, remote := range map[string]string{"gcp": "aws", "aws": "gcp"} {
			c := map[string]*testenv.Cluster{"gcp": gcp, "aws": aws}[consumer]
			if s := tokenCopy(t, c, remote); s != nil {
				t.Errorf("%s's copy of %s's token is still there", consumer, remote)
			}
			path := filepath.Join(dir, consumer+".yaml")
			if e, err := link.EntryIn(path, remote); e != nil || err != nil {
				t.Errorf("%s: entry of %s %+v, %v", path, remote, e, err)
			}
			if name := umbrellaValues(t, path)["global"].(map[string]any)["clusterName"]; name != consumer {
				t.Errorf("%s: global.clusterName %v, want %s", path, name, consumer)
			}
		}
		code, out, _ = unlink(t, kc, both[:len(both)-2]...)
		if code != 0 || strings.Count(out, "nothing to remove") != 4 {
			t.Errorf("again: exit %d, want nothing to remove in either cluster or file: %s", code, out)
		}
	})
}
