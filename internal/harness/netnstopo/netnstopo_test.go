package netnstopo_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/netnstopo"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// Two nodes joined by the underlay reach each other, and each its own local address; nothing of
// the topology appears in the machine's namespace, and deleting the namespaces leaves nothing.
func TestTwoNodesOnAnUnderlay(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces (and is skipped in -short mode)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		testenv.SkipForMissing(t, "needs ip (iproute2, which bash ci/node-packages.sh installs): %v", err)
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	underlay := netnstopo.Underlay{Netns: "ntt-" + id + "-ul", Bridge: "br" + id}
	nodes := []netnstopo.Node{
		{Netns: "ntt-" + id + "-1", Link: "ul" + id, Port: "v" + id + "1", Addr: "192.0.2.1/24"},
		{Netns: "ntt-" + id + "-2", Link: "ul" + id, Port: "v" + id + "2", Addr: "192.0.2.2/24"},
	}
	namespaces := []string{underlay.Netns, nodes[0].Netns, nodes[1].Netns}
	t.Cleanup(func() {
		for _, ns := range namespaces {
			if netnstopo.Exists(ns) {
				if err := netnstopo.DeleteNetns(ns); err != nil {
					t.Error(err)
				}
			}
		}
	})
	for _, ns := range namespaces {
		if err := netnstopo.AddNetns(ns); err != nil {
			t.Fatal(err)
		}
		if !netnstopo.Exists(ns) {
			t.Fatalf("%s does not exist after AddNetns", ns)
		}
	}
	if err := underlay.AddBridge("192.0.2.254/24"); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := underlay.Join(n); err != nil {
			t.Fatal(err)
		}
	}
	if err := netnstopo.AddLocalAddrs(nodes[0].Netns, "pod"+id, "198.18.0.1"); err != nil {
		t.Fatal(err)
	}
	if err := netnstopo.AddRoutes(nodes[1].Netns, []string{"198.18.0.0/24", "via", "192.0.2.1"}); err != nil {
		t.Fatal(err)
	}
	for _, ping := range [][3]string{
		{nodes[0].Netns, "192.0.2.1", "192.0.2.2"},
		{nodes[1].Netns, "192.0.2.2", "192.0.2.254"},
		{nodes[1].Netns, "192.0.2.2", "198.18.0.1"},
	} {
		if _, err := testbed.Ping(ping[0], ping[1], ping[2], 2*time.Second); err != nil {
			t.Errorf("in %s, %s -> %s: %v", ping[0], ping[1], ping[2], err)
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show").CombinedOutput(); err != nil {
		t.Error(err)
	} else if strings.Contains(string(out), id) {
		t.Errorf("links of the topology in the machine's namespace:\n%s", out)
	}
	if err := netnstopo.IP([]string{"-n", nodes[0].Netns, "link", "add", nodes[0].Link, "type", "dummy"}); err == nil || !strings.Contains(err.Error(), "ip -n "+nodes[0].Netns+" link add") {
		t.Errorf("adding a link that exists: error %v, want one naming the command", err)
	}
}
