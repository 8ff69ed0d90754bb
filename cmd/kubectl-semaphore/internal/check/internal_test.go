package check

import (
	"context"
	"encoding/base64"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// The Corefile of docs/coredns.md maps each remote it lists, and the global services' names,
// to the Services the service mirror makes, rewriting the answers back; a rule in a rewrite block
// is read as well.
func TestCorefileRulesMapTheDocsNames(t *testing.T) {
	docs, err := testbed.DocsCorefile()
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseCorefile(docs)
	if len(blocks) != 1 || !blocks[0].serves("fluentd.sys-log.svc.cluster.aws.") || blocks[0].clusterDomain() != "cluster.local" {
		t.Fatalf("blocks %+v: want one serving every name, of cluster.local", blocks)
	}
	mapped := func(b serverBlock, query string) (string, bool) {
		for _, r := range b.rewrites() {
			if got, ok := r.apply(query); ok {
				return got, r.answers
			}
		}
		return "", false
	}
	for query, want := range map[string]string{
		"fluentd.sys-log.svc.cluster.aws.":    "aws-sys-log-73736d-fluentd.semaphore.svc.cluster.local.",
		"pg-0.pg.db.svc.cluster.merit.":       "pg-0.merit-db-73736d-pg.semaphore.svc.cluster.local.",
		"fluentd.sys-log.svc.cluster.global.": "gl-sys-log-73736d-fluentd.semaphore.svc.cluster.local.",
		"fluentd.sys-log.svc.cluster.local.":  "",
	} {
		if got, answers := mapped(blocks[0], query); got != want || (want != "" && !answers) {
			t.Errorf("%s maps to %q (answers rewritten: %v), want %q", query, got, answers, want)
		}
	}

	block := parseCorefile(`example.org:53 {
    errors
}
dns://.:5353 {
    rewrite stop {
        name regex ^(.+\.)?([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.(aws)\.$ {1}{4}-{3}-73736d-{2}.mirrors.svc.k8s.internal.
        answer auto
    }
    kubernetes k8s.internal in-addr.arpa
}
`)
	if len(block) != 2 || block[0].serves("a.b.svc.cluster.aws.") || !block[1].serves("a.b.svc.cluster.aws.") || block[1].clusterDomain() != "k8s.internal" {
		t.Fatalf("blocks %+v: want example.org's not to serve cluster.aws, the root's to, of k8s.internal", block)
	}
	if got, answers := mapped(block[1], "a.b.svc.cluster.aws."); got != "aws-b-73736d-a.mirrors.svc.k8s.internal." || !answers {
		t.Errorf("the rule of a rewrite block maps to %q (answers %v)", got, answers)
	}
}

// The expected identity is the subject of the ServiceAccount token the pods mount.
func TestTokenSubject(t *testing.T) {
	payload := base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"https://aws","sub":"system:serviceaccount:semaphore-remote:semaphore-remote-gcp"}`))
	for token, want := range map[string]string{
		"eyJhbGciOiJSUzI1NiJ9." + payload + ".c2ln": "system:serviceaccount:semaphore-remote:semaphore-remote-gcp",
		"not-a-jwt": "",
		"a.%%%.c":   "",
		"a." + base64.RawURLEncoding.EncodeToString([]byte("[]")) + ".c": "",
	} {
		if got := tokenSubject(token); got != want {
			t.Errorf("tokenSubject(%q) = %q, want %q", token, got, want)
		}
	}
	want := expected{name: "semaphore-remote-gcp"}
	for user, ok := range map[string]bool{"system:serviceaccount:semaphore-remote:semaphore-remote-gcp": true, "system:serviceaccount:x:semaphore-remote-gcp-2": false, "semaphore-remote-gcp": false} {
		if want.matches(user) != ok {
			t.Errorf("%s matches the ServiceAccount semaphore-remote-gcp: %v, want %v", user, !ok, ok)
		}
	}
}

// Two remotes whose ranges overlap fail, naming both.
func TestRangesOfTwoRemotesMustNotOverlap(t *testing.T) {
	k := &checker{client: fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gcp-1"}, Spec: corev1.NodeSpec{PodCIDRs: []string{"10.2.0.0/24"}}})}
	ranges := addrguard.Ranges{"aws": {netip.MustParsePrefix("10.1.0.0/16")}, "merit": {netip.MustParsePrefix("10.1.128.0/17"), netip.MustParsePrefix("10.3.0.0/16")}}
	r := k.checkRangesApart(context.Background(), Result{Check: PodRanges}, ranges, nil)
	if r.OK || !strings.Contains(r.Message, "remote aws 10.1.0.0/16 overlaps remote merit 10.1.128.0/17") || strings.Contains(r.Message, "10.3.0.0/16") {
		t.Errorf("%+v: want a failure naming the overlap of aws and merit, and no other", r)
	}
	delete(ranges, "merit")
	if r := k.checkRangesApart(context.Background(), Result{Check: PodRanges}, ranges, nil); !r.OK || !strings.Contains(r.Message, "this cluster's 1") {
		t.Errorf("%+v: want aws apart from gcp-1's pod CIDR", r)
	}
}

// Without Calico, the IP pools are not checked, and it says so.
func TestIPPoolsSkippedWithoutCalico(t *testing.T) {
	res := func(remote string) Result { return Result{Check: IPPools, Remote: remote} }
	out := checkIPPools(res, []string{"aws"}, nil, nil, false, nil)
	if len(out) != 1 || !out[0].OK || !strings.Contains(out[0].Message, "Calico not found") {
		t.Errorf("%+v: want one pass saying Calico was not found", out)
	}
}

// Every runbook a result links has its section in docs/runbooks.md ("### check: <name>", whose
// anchor is check-<name>).
func TestEveryRunbookHasItsSection(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testbed.RepoRoot(), "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	anchor := regexp.MustCompile(`"(check-[a-z-]+)"`)
	seen := 0
	for _, f := range sources {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range anchor.FindAllStringSubmatch(string(src), -1) {
			seen++
			if heading := "### check: " + strings.TrimPrefix(m[1], "check-"); !strings.Contains(string(doc), "\n"+heading+"\n") {
				t.Errorf("%s links runbook #%s, but docs/runbooks.md has no %q", f, m[1], heading)
			}
		}
	}
	if seen == 0 {
		t.Error("no runbook anchor found in the sources")
	}
}
