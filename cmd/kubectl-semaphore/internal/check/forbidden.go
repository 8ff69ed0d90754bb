package check

import (
	"fmt"
	"slices"
	"strings"
)

// checkForbidden says whether remote forbade the component's pods anything: the requests to its
// API server (at host, the address in the Secrets) that their clients counted as answered 403
// Forbidden since the pods started, by method. What the credentials may do beyond what they need
// is not seen here: --probe-remotes asks the remote (access reviews).
func checkForbidden(v controllers, remote, host string, hostErr error, res Result) Result {
	if hostErr != nil {
		return warnRunbook(res, "check-access", "the address of remote %s is not known (%v): its forbidden answers cannot be told from the other clusters'", remote, hostErr)
	}
	family := v.metric("client_requests_total")
	var older, forbidden []string
	total := 0.0
	for _, p := range v.readable() {
		if !p.metrics.Has(family) {
			older = append(older, v.where(p))
			continue
		}
		total += p.metrics.Sum(family, "host", host)
		if p.metrics.Sum(family, "host", host, "code", "403") > 0 {
			forbidden = append(forbidden, fmt.Sprintf("%s: %s", v.where(p), byMethod(p.metrics.Where(family, "host", host, "code", "403"))))
		}
	}
	switch {
	case len(forbidden) > 0:
		return fail(res, "check-access", "remote %s (%s) forbade %s requests (403 Forbidden, since the pods started): %s; its semaphore-remote release does not grant this cluster what %s needs (--probe-remotes names what is missing)",
			remote, host, v.c.Name, most(forbidden, 5), v.c.Name)
	case len(older) > 0 && total == 0:
		return warnRunbook(res, "check-access", "%s export no %s: whether remote %s forbids them anything is not known here", most(older, 5), family, remote)
	case total == 0:
		return warnRunbook(res, "check-access", "the pods counted no request to %s, remote %s's address in the Secrets they mount: they talk to another address; restart them if the Secrets changed since they started",
			host, remote)
	}
	return pass(res, "%d requests to remote %s (%s) since the pods started, none forbidden", int(total), remote, host)
}

// byMethod describes the counts of some requests by method: "GET 12, POST 1".
func byMethod(found []series) string {
	counts := map[string]float64{}
	for _, s := range found {
		counts[s.Labels["method"]] += s.Value
	}
	var parts []string
	for m, n := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", m, int(n)))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
