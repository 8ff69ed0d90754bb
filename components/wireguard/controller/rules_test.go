package controller_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/wireguard/controller"
	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers/peerstest"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// expectPeers waits until wg-aws holds exactly the peers want (public key -> endpoint) and the
// routes, and the skipped-peers gauge of aws reads skips (reason -> nodes).
func expectPeers(t *testing.T, r *running, devs *devicetest.Devices, what string, want map[string]string, routes []string, skips map[string]float64) {
	t.Helper()
	sort.Strings(routes)
	testenv.Eventually(t, 30*time.Second, what, func() error {
		for reason, n := range skips {
			if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_skipped_peers", map[string]string{"remote": "aws", "reason": reason}); v != n {
				return fmt.Errorf("skipped_peers{reason=%s} = %v, want %v", reason, v, n)
			}
		}
		got, gotRoutes := devs.Endpoints("wg-aws"), devs.Routes("wg-aws")
		if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(gotRoutes) != fmt.Sprint(routes) {
			return fmt.Errorf("peers %v routes %v, want %v %v", got, gotRoutes, want, routes)
		}
		return nil
	})
}

// A remote's Nodes that publish an endpoint not their own (one of another node's addresses, or
// an address only their host name claims), two Nodes publishing the same endpoint, and the
// Nodes beyond the remote's peer limit get no peer and no route; each is counted by reason,
// and the honest nodes, one behind a NAT in the remote's endpoint ranges, keep their peers.
// The limit keeps the first nodes by name: when one of them goes, the next takes its place.
func TestRemoteNodesWithEndpointsNotTheirsOrOverTheLimitGetNoPeerAndNoRoute(t *testing.T) {
	needClusters(t)
	peerstest.CreateNode(t, local.Client, "gcp-node-1", "192.0.2.21", nil, "198.18.21.0/24")
	var ranges addrguard.Ranges
	if err := ranges.Decode("aws:203.0.113.0/24"); err != nil {
		t.Fatal(err)
	}

	honest, nat, over1, over2 := devicetest.Key(t), devicetest.Key(t), devicetest.Key(t), devicetest.Key(t)
	remoteNode(t, "aws-honest", honest.PublicKey(), "192.0.2.61:51822", "198.18.61.0/24")
	peerstest.CreateNode(t, aws.Client, "aws-nat", "10.0.0.66", peerstest.Annotations("gcp", nat.PublicKey(), "203.0.113.66:51822"), "198.18.66.0/24")
	// At the honest node's address: its traffic would go there.
	peerstest.CreateNode(t, aws.Client, "aws-foreign", "192.0.2.62", peerstest.Annotations("gcp", devicetest.Key(t).PublicKey(), "192.0.2.61:51823"), "198.18.62.0/24")
	// A host name is not an address, whatever it holds.
	peerstest.CreateNode(t, aws.Client, "aws-hostname", "", peerstest.Annotations("gcp", devicetest.Key(t).PublicKey(), "192.0.2.63:51822"), "198.18.63.0/24")
	peerstest.SetAddresses(t, aws.Client, "aws-hostname", corev1.NodeAddress{Type: corev1.NodeHostName, Address: "192.0.2.63"})
	remoteNode(t, "aws-dup-1", devicetest.Key(t).PublicKey(), "192.0.2.64:51822", "198.18.64.0/24")
	remoteNode(t, "aws-dup-2", devicetest.Key(t).PublicKey(), "192.0.2.64:51822", "198.18.65.0/24")
	remoteNode(t, "aws-over-1", over1.PublicKey(), "192.0.2.67:51822", "198.18.67.0/24")
	remoteNode(t, "aws-over-2", over2.PublicKey(), "192.0.2.68:51822", "198.18.68.0/24")

	devs := devicetest.New()
	r := startWith(t, devs, devicetest.Key(t), controller.Options{Guard: addrguard.New(nil), EndpointRanges: ranges, MaxPeersPerRemote: 3})
	expectPeers(t, r, devs, "only the honest nodes up to the limit are peers",
		map[string]string{honest.PublicKey().String(): "192.0.2.61:51822", nat.PublicKey().String(): "203.0.113.66:51822", over1.PublicKey().String(): "192.0.2.67:51822"},
		[]string{"198.18.61.0/24", "198.18.66.0/24", "198.18.67.0/24"},
		map[string]float64{peers.ReasonForeignEndpoint: 2, peers.ReasonDuplicateEndpoint: 2, peers.ReasonPeerLimit: 1})
	if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_peers", map[string]string{"remote": "aws"}); v != 3 {
		t.Errorf("peers metric = %v, want 3", v)
	}

	if err := aws.Client.CoreV1().Nodes().Delete(context.Background(), "aws-over-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectPeers(t, r, devs, "the next node by name takes the place of one that went",
		map[string]string{honest.PublicKey().String(): "192.0.2.61:51822", nat.PublicKey().String(): "203.0.113.66:51822", over2.PublicKey().String(): "192.0.2.68:51822"},
		[]string{"198.18.61.0/24", "198.18.66.0/24", "198.18.68.0/24"},
		map[string]float64{peers.ReasonForeignEndpoint: 2, peers.ReasonDuplicateEndpoint: 2, peers.ReasonPeerLimit: 0})
}

// A hostile remote API server can send Nodes with names no conforming one accepts, bytes that
// are not UTF-8 included, which no metric label may carry (a peer's name labels its handshake
// and traffic series). Such nodes are skipped as invalid_name, counted without their names,
// and the metrics are still scraped, with the honest node's peer series.
func TestRemoteNodesWithNamesNoAPIServerAcceptsAreRefusedAndScrapesStillWork(t *testing.T) {
	needClusters(t)
	peerstest.CreateNode(t, local.Client, "gcp-node-1", "192.0.2.21", nil, "198.18.21.0/24")
	honest := devicetest.Key(t)
	remoteNode(t, "aws-honest-name", honest.PublicKey(), "192.0.2.51:51822", "198.18.51.0/24")
	remoteNode(t, "aws-bad-name-1", devicetest.Key(t).PublicKey(), "192.0.2.52:51822", "198.18.52.0/24")
	remoteNode(t, "aws-bad-name-2", devicetest.Key(t).PublicKey(), "192.0.2.53:51822", "198.18.53.0/24")

	// The names as the controller receives them: of the same length, so that the lengths in
	// the protobuf encoding the remote client asks for still hold.
	hostile := map[string]string{"aws-bad-name-1": "aws-\xff\xfe\xfd-name-1", "aws-bad-name-2": "AWS_BAD_NAME_2"}
	devs := devicetest.New()
	r := startThrough(t, devs, devicetest.Key(t), controller.Options{}, func(next http.RoundTripper) http.RoundTripper {
		return renamingTransport{next: next, names: hostile}
	})
	expectPeers(t, r, devs, "only the node with a valid name is a peer",
		map[string]string{honest.PublicKey().String(): "192.0.2.51:51822"}, []string{"198.18.51.0/24"},
		map[string]float64{peers.ReasonInvalidName: 2})

	families, err := r.Registry.Gather()
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	var peerLabels []string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if !utf8.ValidString(l.GetValue()) || strings.Contains(l.GetValue(), "AWS_BAD") {
					t.Errorf("%s has the label %s=%q", f.GetName(), l.GetName(), l.GetValue())
				}
				if f.GetName() == "semaphore_wg_peer_last_handshake_timestamp_seconds" && l.GetName() == "peer" {
					peerLabels = append(peerLabels, l.GetValue())
				}
			}
		}
	}
	if fmt.Sprint(peerLabels) != "[aws-honest-name]" {
		t.Errorf("handshake series of peers %q, want the honest node's alone", peerLabels)
	}
}

// renamingTransport is a remote API server that lies about its Nodes' names: in every response
// about Nodes, each key of names is replaced by its value.
type renamingTransport struct {
	next  http.RoundTripper
	names map[string]string
}

func (rt renamingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.next.RoundTrip(req)
	if err != nil || !strings.Contains(req.URL.Path, "/nodes") {
		return resp, err
	}
	resp.Body = &replacingBody{body: resp.Body, names: rt.names}
	return resp, nil
}

// replacingBody replaces, in body, each key of names by its value of the same length, also where
// a read ends inside one: a watch's events come in reads of their own.
type replacingBody struct {
	body    io.ReadCloser
	names   map[string]string
	pending []byte // read, not yet returned: the start of a name at the end of a read
	out     []byte // ready to return
	err     error
}

func (b *replacingBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		chunk := make([]byte, 32<<10)
		n, err := b.body.Read(chunk)
		b.err = err
		b.pending = append(b.pending, chunk[:n]...)
		for old, replacement := range b.names {
			b.pending = bytes.ReplaceAll(b.pending, []byte(old), []byte(replacement))
		}
		hold := 0
		if err == nil {
			hold = b.partial()
		}
		b.out = append(b.out, b.pending[:len(b.pending)-hold]...)
		b.pending = bytes.Clone(b.pending[len(b.pending)-hold:])
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// partial is the length of the longest end of pending that starts a name.
func (b *replacingBody) partial() int {
	longest := 0
	for old := range b.names {
		for k := min(len(old)-1, len(b.pending)); k > longest; k-- {
			if bytes.HasSuffix(b.pending, []byte(old[:k])) {
				longest = k
				break
			}
		}
	}
	return longest
}

func (b *replacingBody) Close() error { return b.body.Close() }

// The replacing body replaces names split across reads, and holds back nothing that cannot
// start one: a watch's last event is not kept from the reader.
func TestReplacingBodyReplacesAcrossReads(t *testing.T) {
	names := map[string]string{"aws-bad-name-1": "AWS_BAD_NAME_1"}
	for _, split := range []int{0, 1, 5, 13, 14, 20} {
		in := "x aws-bad-name-1 y aws-bad-name-1"
		body := &replacingBody{body: io.NopCloser(&chunked{parts: []string{in[:min(split, len(in))], in[min(split, len(in)):], " aws-bad"}}), names: names}
		got, err := io.ReadAll(body)
		if err != nil {
			t.Fatal(err)
		}
		if want := "x AWS_BAD_NAME_1 y AWS_BAD_NAME_1 aws-bad"; string(got) != want {
			t.Errorf("split at %d: %q, want %q", split, got, want)
		}
	}
	// A read that ends in no name's start is returned whole at once.
	body := &replacingBody{body: io.NopCloser(&chunked{parts: []string{"event 1", "event 2"}}), names: names}
	p := make([]byte, 100)
	if n, _ := body.Read(p); string(p[:n]) != "event 1" {
		t.Errorf("first read %q, want the whole first event", p[:n])
	}
}

// chunked returns parts, one per read.
type chunked struct{ parts []string }

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	if c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}
