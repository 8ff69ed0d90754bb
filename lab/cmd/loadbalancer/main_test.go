package main

import (
	"bytes"
	"context"
	"errors"
	"log"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

var (
	lb    = netip.MustParseAddr("203.0.113.21")
	node1 = netip.MustParseAddr("198.19.2.21")
	node2 = netip.MustParseAddr("198.19.2.22")
)

// recordedRules are the rules a balancer set, and the ports whose flows it forgot.
type recordedRules struct {
	sets   []map[uint16]netip.Addr
	forgot []uint16
}

func (r *recordedRules) set(_ netip.Addr, to map[uint16]netip.Addr) error {
	r.sets = append(r.sets, to)
	return nil
}

func (r *recordedRules) forget(_ netip.Addr, port uint16) error {
	r.forgot = append(r.forgot, port)
	return nil
}

// A forward goes to the healthy target, stays there while it is healthy even when another is
// too, moves (forgetting the port's flows) when it is not, and stays put while none is.
func TestForwardFollowsTheHealthyTarget(t *testing.T) {
	healthy := map[string]map[netip.Addr]bool{"/gateway/aws": {node1: true}, "/gateway/merit": {node2: true}}
	rules := &recordedRules{}
	var logged bytes.Buffer
	b := &balancer{
		cfg: config{address: lb, targets: []netip.Addr{node1, node2}, forwards: []forward{{51821, "/gateway/aws"}, {51822, "/gateway/merit"}}},
		log: log.New(&logged, "", 0),
		check: func(_ context.Context, target netip.Addr, path string) error {
			if healthy[path][target] {
				return nil
			}
			return errors.New("503")
		},
		rules:   rules,
		current: make([]netip.Addr, 2),
	}
	round := func(want map[uint16]netip.Addr, forgot ...uint16) {
		t.Helper()
		before, forgotBefore := len(rules.sets), len(rules.forgot)
		if err := b.round(context.Background()); err != nil {
			t.Fatal(err)
		}
		switch {
		case want == nil && len(rules.sets) != before:
			t.Errorf("rules set to %v, want unchanged", rules.sets[len(rules.sets)-1])
		case want != nil && (len(rules.sets) != before+1 || !maps.Equal(rules.sets[len(rules.sets)-1], want)):
			t.Errorf("rules %v, want %v", rules.sets[before:], want)
		}
		if got := rules.forgot[forgotBefore:]; !slices.Equal(got, forgot) {
			t.Errorf("forgot the flows of %v, want %v", got, forgot)
		}
	}
	round(map[uint16]netip.Addr{51821: node1, 51822: node2}, 51821, 51822)
	healthy["/gateway/aws"][node2] = true
	round(nil)
	healthy["/gateway/aws"][node1] = false
	round(map[uint16]netip.Addr{51821: node2, 51822: node2}, 51821)
	healthy["/gateway/aws"][node2] = false
	round(nil)
	if !strings.Contains(logged.String(), "udp/51821 -> 198.19.2.22 (was 198.19.2.21): /gateway/aws: 198.19.2.21 503, 198.19.2.22 healthy") {
		t.Errorf("the move is not logged with its health checks:\n%s", logged.String())
	}
}

// The chain is declared (flushed) and holds one DNAT rule per port, in port order.
func TestDNATRules(t *testing.T) {
	got := dnatRules(lb, map[uint16]netip.Addr{51822: node2, 51821: node1})
	want := "*nat\n:SEMLAB-LB - [0:0]\n" +
		"-A SEMLAB-LB -d 203.0.113.21 -p udp --dport 51821 -j DNAT --to-destination 198.19.2.21:51821\n" +
		"-A SEMLAB-LB -d 203.0.113.21 -p udp --dport 51822 -j DNAT --to-destination 198.19.2.22:51822\n" +
		"COMMIT\n"
	if got != want {
		t.Errorf("rules:\n%s\nwant:\n%s", got, want)
	}
}

// A bad command line fails with 2, naming what is wrong.
func TestBadCommandLine(t *testing.T) {
	for _, args := range [][]string{
		{"-targets", "198.19.2.21", "-forward", "51821=/gateway/aws"},
		{"-address", "203.0.113.21", "-targets", "198.19.2.21"},
		{"-address", "203.0.113.21", "-targets", "198.19.2.21", "-forward", "51821"},
		{"-address", "203.0.113.21", "-targets", "nonsense", "-forward", "51821=/gateway/aws"},
	} {
		var out bytes.Buffer
		if code := run(context.Background(), args, &out); code != 2 || out.Len() == 0 {
			t.Errorf("%v: exit %d, output %q; want 2 and why", args, code, out.String())
		}
	}
}
