package status

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// networkStatus is the providers' networks and what the lab's internet between them carried.
type networkStatus struct {
	counters layout.InternetCounters
	err      error
}

func (s *networkStatus) collect(_ context.Context, rec *layout.Record) {
	if rec.Nodes == nil || rec.Nodes.Skipped != "" {
		return
	}
	s.counters, s.err = layout.ReadInternetCounters()
}

// problems: a pod's address seen in clear on the internet is traffic between clusters that
// left WireGuard.
func (s *networkStatus) problems(rec *layout.Record) []string {
	if rec.Nodes == nil || rec.Nodes.Skipped != "" {
		return nil
	}
	if s.err != nil {
		return []string{fmt.Sprintf("the internet's counters: %v", s.err)}
	}
	if s.counters.Cleartext > 0 {
		return []string{fmt.Sprintf("the internet carried %d packets with a pod's address (%s) in clear: traffic between clusters left WireGuard", s.counters.Cleartext, layout.PodsCIDR)}
	}
	return nil
}

func (s *networkStatus) print(w io.Writer, rec *layout.Record) {
	if rec.Nodes == nil || rec.Nodes.Skipped != "" {
		return
	}
	section(w, fmt.Sprintf("Networks (each provider's router is the network namespace %s<cluster>-vpc; they meet on the internet, %s)", layout.NetnsPrefix, layout.InternetNetns))
	tw := table(w)
	fmt.Fprintf(tw, "  cluster\tprovider\tnodes' network\tMTU\tNAT\tpublic addresses\tAPI server (private, published)\n")
	for _, spec := range layout.ClusterSpecs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s, %s\n", spec.Name, spec.Network.Provider, spec.Network.CIDR, spec.Network.MTU, spec.Network.NAT,
			strings.Join(layout.PublicAddrs(spec, rec.Nodes.Nodes), " "), spec.APIAddr, spec.PublicAPIAddr)
	}
	tw.Flush()
	fmt.Fprintf(w, "  internet: forwards only UDP to the WireGuard ports and answers, accepts only TCP to the API servers; no ICMP\n")
	fmt.Fprintf(w, "  firewalls: 1:1 NAT lets in UDP to the WireGuard ports; source NAT lets in nothing but answers\n")
	if s.err != nil {
		fmt.Fprintf(w, "  counters: %v\n", s.err)
		return
	}
	fmt.Fprintf(w, "  internet carried: %d WireGuard packets, %d packets with a pod's address in clear (must be 0)\n", s.counters.WireGuard, s.counters.Cleartext)
}
