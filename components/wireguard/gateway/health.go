package gateway

import (
	"fmt"
	"net/http"
	"slices"
)

// HealthPattern is the admin endpoint that says whether this node is the active gateway toward
// a remote.
const HealthPattern = "GET /gateway/{remote}"

// Health answers HealthPattern for the remotes reached through gateways: 200 when this node is
// the active gateway toward the remote, 503 when it is not (a standby, or no gateway node:
// elections holds none of its), 404 for a remote not reached through gateways. A UDP load
// balancer in front of the gateway nodes (a cloud load balancer's HTTP health check) then sends
// a remote's traffic to the one node that answers 200.
func Health(remotes []string, elections map[string]*Election) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remote := r.PathValue("remote")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !slices.Contains(remotes, remote) {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, "remote %q is not reached through gateways\n", remote)
			return
		}
		e := elections[remote]
		if e == nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "this node is no gateway node toward %s\n", remote)
			return
		}
		active, term := e.State()
		if !active {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "this node is a standby gateway toward %s\n", remote)
			return
		}
		fmt.Fprintf(w, "this node is the active gateway toward %s (term %d)\n", remote, term)
	})
}
