// Command loadbalancer is the lab's stand-in for a cloud's UDP network load balancer in front of
// a private cluster's gateway nodes: one public address whose WireGuard ports are each forwarded
// to the one node that a health check finds healthy, as an AWS NLB's target group does.
//
//	loadbalancer -address ADDR -targets IP,IP... [-health-port 8080] [-interval 1s]
//	             -forward PORT=PATH [-forward PORT=PATH ...]
//
// The lab runs it inside the private cluster's provider router (ip netns exec), where the nodes'
// addresses route. Every interval it asks each target GET http://TARGET:HEALTH-PORT/PATH for each
// forward; the targets answering 200 are healthy. A forward keeps its target while that one is
// healthy (no flapping between two healthy ones), and moves to the first healthy one otherwise;
// while none is, it stays where it is, as a load balancer whose targets are all unhealthy sends
// to them anyway. Each forward is one DNAT rule in the nat table's chain layout.LoadBalancerChain
// (the router's rules jump there for what comes from the internet to ADDR): UDP to ADDR:PORT goes
// to TARGET:PORT. When a forward moves, the connection tracking entries of ADDR:PORT are deleted,
// so that the flows already seen go to the new target from their next packet, not to the old
// one for as long as they last.
//
// It logs every move with the health checks that decided it, and exits 0 on SIGTERM or SIGINT,
// 2 on a bad command line and 1 when it cannot set its rules.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

// run runs the command line args until ctx is done and returns the exit code.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	cfg, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "loadbalancer: %v\n", err)
		}
		return 2
	}
	logger := log.New(stderr, "loadbalancer: ", log.LstdFlags|log.Lmicroseconds)
	b := &balancer{cfg: cfg, log: logger, check: httpCheck(cfg.healthPort, cfg.interval/2), rules: kernelRules{}}
	logger.Printf("forwarding %s to the healthy one of %v, checked every %s", cfg.address, cfg.targets, cfg.interval)
	if err := b.run(ctx); err != nil {
		logger.Print(err)
		return 1
	}
	logger.Printf("stopped")
	return 0
}

// config is the command line.
type config struct {
	address    netip.Addr
	targets    []netip.Addr
	healthPort int
	interval   time.Duration
	forwards   []forward
}

// forward is one forwarded port and the health check path that picks its target.
type forward struct {
	port uint16
	path string
}

func parse(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("loadbalancer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	address := fs.String("address", "", "the load balancer's public `address` (required)")
	targets := fs.String("targets", "", "the targets' addresses, comma-separated (required)")
	cfg := config{}
	fs.IntVar(&cfg.healthPort, "health-port", 8080, "the `port` the health checks ask on each target")
	fs.DurationVar(&cfg.interval, "interval", time.Second, "how often each target is checked")
	fs.Func("forward", "`PORT=PATH`: UDP PORT goes to the target whose PATH answers 200 (repeatable)", func(s string) error {
		port, path, ok := strings.Cut(s, "=")
		n, err := strconv.ParseUint(port, 10, 16)
		if !ok || err != nil || n == 0 || !strings.HasPrefix(path, "/") {
			return fmt.Errorf("want PORT=/PATH, got %q", s)
		}
		cfg.forwards = append(cfg.forwards, forward{port: uint16(n), path: path})
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var err error
	if cfg.address, err = netip.ParseAddr(*address); err != nil {
		return cfg, fmt.Errorf("-address: %w", err)
	}
	for t := range strings.SplitSeq(*targets, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(t))
		if err != nil {
			return cfg, fmt.Errorf("-targets: %w", err)
		}
		cfg.targets = append(cfg.targets, a)
	}
	switch {
	case len(cfg.forwards) == 0:
		return cfg, errors.New("no -forward")
	case cfg.interval <= 0:
		return cfg, errors.New("-interval must be positive")
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	return cfg, nil
}

// balancer forwards each port to its healthy target.
type balancer struct {
	cfg   config
	log   *log.Logger
	check func(ctx context.Context, target netip.Addr, path string) error
	rules rules
	// current is each forward's target (invalid: none yet), in the order of cfg.forwards.
	current []netip.Addr
}

// rules sets the DNAT rules and forgets the flows of a moved forward.
type rules interface {
	set(address netip.Addr, to map[uint16]netip.Addr) error
	forget(address netip.Addr, port uint16) error
}

// run checks the targets every interval and moves the forwards, until ctx is done.
func (b *balancer) run(ctx context.Context) error {
	b.current = make([]netip.Addr, len(b.cfg.forwards))
	t := time.NewTicker(b.cfg.interval)
	defer t.Stop()
	for {
		if err := b.round(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// round checks every target of every forward once, and moves those whose target changed.
func (b *balancer) round(ctx context.Context) error {
	var moved []int
	for i, f := range b.cfg.forwards {
		health := b.health(ctx, f.path)
		next := choose(b.current[i], b.cfg.targets, health)
		if next != b.current[i] {
			b.log.Printf("udp/%d -> %s (was %s): %s", f.port, next, describe(b.current[i]), healthSummary(b.cfg.targets, health, f.path))
			b.current[i] = next
			moved = append(moved, i)
		}
	}
	if len(moved) == 0 {
		return nil
	}
	to := map[uint16]netip.Addr{}
	for i, f := range b.cfg.forwards {
		if b.current[i].IsValid() {
			to[f.port] = b.current[i]
		}
	}
	if err := b.rules.set(b.cfg.address, to); err != nil {
		return err
	}
	for _, i := range moved {
		if err := b.rules.forget(b.cfg.address, b.cfg.forwards[i].port); err != nil {
			b.log.Printf("udp/%d: forgetting its flows: %v", b.cfg.forwards[i].port, err)
		}
	}
	return nil
}

// health is the outcome of path's check on every target (nil: healthy).
func (b *balancer) health(ctx context.Context, path string) []error {
	out := make([]error, len(b.cfg.targets))
	var wg sync.WaitGroup
	for i, t := range b.cfg.targets {
		wg.Go(func() { out[i] = b.check(ctx, t, path) })
	}
	wg.Wait()
	return out
}

// choose is the target a forward goes to: the current one while it is healthy, else the first
// healthy one, else the current one (none healthy: nothing better to do).
func choose(current netip.Addr, targets []netip.Addr, health []error) netip.Addr {
	first := netip.Addr{}
	for i, t := range targets {
		if health[i] != nil {
			continue
		}
		if t == current {
			return current
		}
		if !first.IsValid() {
			first = t
		}
	}
	if first.IsValid() {
		return first
	}
	return current
}

func describe(a netip.Addr) string {
	if !a.IsValid() {
		return "none"
	}
	return a.String()
}

// healthSummary says what each target answered on path.
func healthSummary(targets []netip.Addr, health []error, path string) string {
	parts := make([]string, len(targets))
	for i, t := range targets {
		if health[i] == nil {
			parts[i] = t.String() + " healthy"
		} else {
			parts[i] = fmt.Sprintf("%s %v", t, health[i])
		}
	}
	return path + ": " + strings.Join(parts, ", ")
}

// chain is where the DNAT rules go.
const chain = layout.LoadBalancerChain
