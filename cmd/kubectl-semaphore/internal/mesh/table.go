package mesh

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// age is how long before now t was, the way kubectl prints ages ("never" for zero).
func age(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return duration.HumanDuration(now.Sub(t))
}

// WriteTables writes the states as text, a few tables per cluster: the remotes at a glance,
// the global services, the ServiceExports and ServiceImports, the WireGuard peers, and what
// could not be read or reached.
func WriteTables(w io.Writer, states []ClusterState, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for i, st := range states {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		writeCluster(tw, st, now)
	}
	return tw.Flush()
}

func writeCluster(w *tabwriter.Writer, st ClusterState, now time.Time) {
	title := "CLUSTER " + orNone(st.Cluster)
	if st.Context != "" {
		title += " (context " + st.Context + ")"
	}
	fmt.Fprintln(w, title)
	fmt.Fprintln(w)
	writeRemotes(w, st.Remotes, now)
	writeGlobalServices(w, st.GlobalServices)
	writeMultiCluster(w, st.MultiCluster)
	writePeers(w, st.Remotes, now)
	writeProblems(w, st)
}

// writeRemotes writes the remotes at a glance, one line each.
func writeRemotes(w io.Writer, remotes []RemoteState, now time.Time) {
	fmt.Fprintln(w, "REMOTE\tREACHABLE\tMIRRORS\tENDPOINTS\tNETWORK SETS\tNETS\tPEERS\tOLDEST HANDSHAKE")
	if len(remotes) == 0 {
		fmt.Fprintln(w, "(none)\t")
	}
	for _, r := range remotes {
		ready, all, nets := 0, 0, 0
		for _, m := range r.Mirrors {
			ready += m.Ready
			all += m.Endpoints
		}
		for _, s := range r.NetworkSets {
			nets += s.Nets
		}
		oldest := "-"
		if len(r.Peers) > 0 {
			oldest = age(oldestHandshake(r.Peers), now)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d/%d\t%d\t%d\t%d\t%s\n", r.Name, reachable(r), len(r.Mirrors), ready, all, len(r.NetworkSets), nets, len(r.Peers), oldest)
	}
}

// writeGlobalServices writes the global services with their endpoints by cluster, if any.
func writeGlobalServices(w io.Writer, services []GlobalService) {
	if len(services) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "GLOBAL SERVICE\tENDPOINTS BY CLUSTER")
	for _, g := range services {
		fmt.Fprintf(w, "%s\t%s\n", g.Service, byCluster(g.Endpoints))
	}
}

// writeMultiCluster writes the ServiceExports with their conditions and the ServiceImports with
// their endpoints by cluster, when the service mirror serves the Multi-Cluster Services API.
func writeMultiCluster(w io.Writer, m *MultiCluster) {
	if m == nil {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "SERVICE EXPORT\tVALID\tREADY\tCONFLICT")
	if len(m.Exports) == 0 {
		fmt.Fprintln(w, "(none)")
	}
	for _, e := range m.Exports {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", e.Name, e.Valid.cell("True"), e.Ready.cell("True"), e.Conflict.cell("False"))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "SERVICE IMPORT\tTYPE\tIPS\tENDPOINTS\tBY CLUSTER")
	if len(m.Imports) == 0 {
		fmt.Fprintln(w, "(none)")
	}
	for _, i := range m.Imports {
		ips := strings.Join(i.IPs, ",")
		if ips == "" {
			ips = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d/%d\t%s\n", i.Name, i.Type, ips, i.Ready, i.Endpoints, byCluster(i.Clusters))
	}
}

// cell is the condition's status, with its reason when it is not the status wanted; "-" when
// the export does not have it.
func (c Condition) cell(wanted string) string {
	switch {
	case c.Status == "":
		return "-"
	case c.Status == wanted || c.Reason == "":
		return c.Status
	}
	return c.Status + " (" + c.Reason + ")"
}

// byCluster lists counts by cluster as cluster=count, in cluster order: "(none)" when empty.
func byCluster(counts map[string]int) string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", c, counts[c]))
	}
	return orNone(strings.Join(parts, " "))
}

// writePeers writes the WireGuard peers of every remote with their last handshake, if any.
func writePeers(w io.Writer, remotes []RemoteState, now time.Time) {
	var peers []Peer
	for _, r := range remotes {
		peers = append(peers, r.Peers...)
	}
	if len(peers) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "NODE\tREMOTE\tPEER\tLAST HANDSHAKE")
	for _, p := range peers {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", p.Node, p.Remote, p.Peer, age(p.LastHandshake, now))
	}
}

// writeProblems writes what could not be read, and the remotes not known to answer some
// components (as their metrics say, or, probed, with their credentials from this machine), if
// any.
func writeProblems(w io.Writer, st ClusterState) {
	problems := slices.Clone(st.Problems)
	for _, r := range st.Remotes {
		// Components usually share the credentials of a remote, and so the error.
		var errs []string
		byError := map[string][]string{}
		for _, a := range r.Access {
			if !a.Reachable {
				if _, ok := byError[a.Error]; !ok {
					errs = append(errs, a.Error)
				}
				byError[a.Error] = append(byError[a.Error], a.Component)
			}
		}
		for _, e := range errs {
			who := strings.Join(byError[e], ", ")
			if st.ProbedRemotes {
				problems = append(problems, fmt.Sprintf("remote %s is not reachable with the credentials of %s: %s", r.Name, who, e))
			} else {
				problems = append(problems, fmt.Sprintf("remote %s: the metrics of %s do not say it answers: %s", r.Name, who, e))
			}
		}
	}
	if len(problems) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Problems:")
	for _, p := range problems {
		fmt.Fprintln(w, "  - "+strings.ReplaceAll(p, "\t", " "))
	}
}

// reachable is "yes" when the remote answers every component, else "no" with the components it
// is not known to answer.
func reachable(r RemoteState) string {
	if len(r.Access) == 0 {
		return "unknown"
	}
	var failed []string
	for _, a := range r.Access {
		if !a.Reachable {
			failed = append(failed, a.Component)
		}
	}
	if len(failed) == 0 {
		return "yes"
	}
	if len(failed) == len(r.Access) {
		return "no"
	}
	return "no (" + strings.Join(failed, ",") + ")"
}

// oldestHandshake is the oldest last handshake of peers, zero when one has had none.
func oldestHandshake(peers []Peer) time.Time {
	var oldest time.Time
	for i, p := range peers {
		if p.LastHandshake.IsZero() {
			return time.Time{}
		}
		if i == 0 || p.LastHandshake.Before(oldest) {
			oldest = p.LastHandshake
		}
	}
	return oldest
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
