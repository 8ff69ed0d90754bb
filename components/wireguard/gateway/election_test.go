package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-semaphore/semaphore/components/wireguard/gateway"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

var cluster *testenv.Cluster

func TestMain(m *testing.M) {
	if testenv.Short() {
		os.Exit(m.Run())
	}
	os.Exit(func() int {
		c, err := testenv.StartCluster("gcp", testenv.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer c.Stop()
		cluster = c
		return m.Run()
	}())
}

// timing is short, for the tests to run quickly: what it is in production does not change
// what the election does.
var timing = gateway.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond}

// candidate is one gateway node taking part in the election, through a connection that can be
// cut, and when it last became or stopped being the gateway.
type candidate struct {
	node     string
	election *gateway.Election
	cut      atomic.Bool
	stop     context.CancelFunc
	done     chan struct{}

	mu                sync.Mutex
	started, stopped  time.Time
	becameActiveTimes int
}

// stand has node take part in the election toward remote until the test ends or it is stopped.
func stand(t *testing.T, remote, node string) *candidate {
	t.Helper()
	c := &candidate{node: node, done: make(chan struct{})}
	cfg := rest.CopyConfig(cluster.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if c.cut.Load() {
				return nil, errors.New("cut off")
			}
			return rt.RoundTrip(r)
		})
	})
	cfg.Timeout = time.Second
	client := kubernetes.NewForConfigOrDie(cfg)
	log := slog.New(slog.NewTextHandler(testenv.LogWriter(t), nil)).With("node", node)
	c.election = gateway.NewElection(client, "default", remote, node, timing, log, c.changed)
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = func() {
		cancel()
		<-c.done
	}
	go func() {
		defer close(c.done)
		c.election.Run(ctx)
	}()
	t.Cleanup(c.stop)
	return c
}

func (c *candidate) changed() {
	active, _ := c.election.State()
	c.mu.Lock()
	defer c.mu.Unlock()
	if active {
		c.started = time.Now()
		c.becameActiveTimes++
	} else {
		c.stopped = time.Now()
	}
}

func (c *candidate) times() (started, stopped time.Time, becameActive int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started, c.stopped, c.becameActiveTimes
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// activeOf is the one active candidate and its term; it fails when more than one is.
func activeOf(cs ...*candidate) (*candidate, uint64, error) {
	var found *candidate
	var term uint64
	for _, c := range cs {
		if active, t := c.election.State(); active {
			if found != nil {
				return nil, 0, fmt.Errorf("%s and %s are both the gateway", found.node, c.node)
			}
			found, term = c, t
		}
	}
	if found == nil {
		return nil, 0, errors.New("no gateway")
	}
	return found, term, nil
}

// waitActive waits until exactly one of cs is the gateway, other than not, and returns it.
func waitActive(t *testing.T, what string, not *candidate, cs ...*candidate) (*candidate, uint64) {
	t.Helper()
	var active *candidate
	var term uint64
	testenv.Eventually(t, 20*time.Second, what, func() error {
		var err error
		if active, term, err = activeOf(cs...); err != nil {
			return err
		}
		if active == not {
			return fmt.Errorf("%s is still the gateway", not.node)
		}
		return nil
	})
	return active, term
}

// Of three gateway nodes exactly one is the gateway, with term 1, and stays it while all are
// healthy; each remote has its own election.
func TestOneGatewayAtATimeAndNoFlapping(t *testing.T) {
	testenv.SkipIfShort(t, "kube-apiserver and etcd")
	cs := []*candidate{stand(t, "aws", "gw-1"), stand(t, "aws", "gw-2"), stand(t, "aws", "gw-3")}
	other := stand(t, "merit", "gw-1")
	active, term := waitActive(t, "one gateway toward aws", nil, cs...)
	if term != 1 {
		t.Errorf("the first gateway's term is %d, want 1", term)
	}
	if a, _ := other.election.State(); !a {
		testenv.Eventually(t, 20*time.Second, "a gateway toward merit too", func() error {
			if a, _ := other.election.State(); !a {
				return errors.New("gw-1 is not the gateway toward merit")
			}
			return nil
		})
	}
	testenv.Hold(t, 3*timing.LeaseDuration, "the same gateway while all are healthy", func() error {
		now, nowTerm, err := activeOf(cs...)
		if err != nil {
			return err
		}
		if now != active || nowTerm != term {
			return fmt.Errorf("the gateway moved from %s (term %d) to %s (term %d)", active.node, term, now.node, nowTerm)
		}
		return nil
	})
}

// A gateway that stops releases its Lease: a standby takes over with the next term, well before
// the Lease would have run out.
func TestAGatewayThatStopsHandsOver(t *testing.T) {
	testenv.SkipIfShort(t, "kube-apiserver and etcd")
	cs := []*candidate{stand(t, "gcp-stop", "gw-1"), stand(t, "gcp-stop", "gw-2")}
	first, term := waitActive(t, "a gateway", nil, cs...)
	first.stop()
	stopped := time.Now()
	if a, _ := first.election.State(); a {
		t.Errorf("%s still says it is the gateway after it stopped", first.node)
	}
	next, nextTerm := waitActive(t, "the standby takes over", first, cs...)
	started, _, _ := next.times()
	if nextTerm != term+1 {
		t.Errorf("the next gateway's term is %d, want %d", nextTerm, term+1)
	}
	if took := started.Sub(stopped); took >= timing.LeaseDuration {
		t.Errorf("the standby took over %s after the gateway stopped, as if the Lease had not been released (it runs for %s)", took, timing.LeaseDuration)
	}
}

// A gateway cut off from its API server stops being the gateway before a standby becomes it (so
// that never two act at once), the standby takes over with the next term, and the one cut off,
// back, stays a standby: it does not take the traffic back.
func TestAGatewayCutOffIsReplacedAndDoesNotTakeBack(t *testing.T) {
	testenv.SkipIfShort(t, "kube-apiserver and etcd")
	cs := []*candidate{stand(t, "gcp-cut", "gw-1"), stand(t, "gcp-cut", "gw-2")}
	first, term := waitActive(t, "a gateway", nil, cs...)
	first.cut.Store(true)
	next, nextTerm := waitActive(t, "the standby takes over", first, cs...)
	if nextTerm != term+1 {
		t.Errorf("the next gateway's term is %d, want %d", nextTerm, term+1)
	}
	_, firstStopped, _ := first.times()
	nextStarted, _, _ := next.times()
	if firstStopped.IsZero() || !firstStopped.Before(nextStarted) {
		t.Errorf("the gateway cut off stopped at %v, its successor started at %v: want the one before the other", firstStopped, nextStarted)
	}
	first.cut.Store(false)
	testenv.Hold(t, 3*timing.LeaseDuration, "the successor stays the gateway", func() error {
		now, nowTerm, err := activeOf(cs...)
		if err != nil {
			return err
		}
		if now != next || nowTerm != nextTerm {
			return fmt.Errorf("the gateway moved back to %s (term %d)", now.node, nowTerm)
		}
		return nil
	})
	if _, _, n := first.times(); n != 1 {
		t.Errorf("%s became the gateway %d times, want once", first.node, n)
	}
}

// The health endpoint a load balancer in front of the gateway nodes checks: 200 on the active
// gateway alone, 503 on a standby and on a node that is no gateway node, 404 for a remote not
// reached through gateways.
func TestHealthIsOKOnTheActiveGatewayAlone(t *testing.T) {
	testenv.SkipIfShort(t, "kube-apiserver and etcd")
	cs := []*candidate{stand(t, "gcp-health", "gw-1"), stand(t, "gcp-health", "gw-2")}
	active, _ := waitActive(t, "a gateway", nil, cs...)
	remotes := []string{"gcp-health"}
	get := func(elections map[string]*gateway.Election, remote string) (int, string) {
		mux := http.NewServeMux()
		mux.Handle(gateway.HealthPattern, gateway.Health(remotes, elections))
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/gateway/"+remote, nil))
		return rec.Code, rec.Body.String()
	}
	for _, c := range cs {
		code, body := get(map[string]*gateway.Election{"gcp-health": c.election}, "gcp-health")
		want := http.StatusServiceUnavailable
		if c == active {
			want = http.StatusOK
		}
		if code != want {
			t.Errorf("%s (active: %v): %d %q, want %d", c.node, c == active, code, body, want)
		}
	}
	if code, body := get(nil, "gcp-health"); code != http.StatusServiceUnavailable || !strings.Contains(body, "no gateway node") {
		t.Errorf("a node that is no gateway node: %d %q, want 503 saying so", code, body)
	}
	if code, _ := get(map[string]*gateway.Election{"gcp-health": active.election}, "aws"); code != http.StatusNotFound {
		t.Errorf("a remote not reached through gateways: %d, want 404", code)
	}
}
