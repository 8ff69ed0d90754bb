package mcs

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ClusterIDProperty is the name of the about.k8s.io ClusterProperty that holds a cluster's ID in
// its clusterset (KEP-2149). Where a cluster has one, its ID is the source-cluster label of the
// endpoints it exports, and the <clusterid> of their <hostname>.<clusterid>.<svc>.<ns>.svc.clusterset.local
// names; where it has none, the cluster's Semaphore name is.
const ClusterIDProperty = "cluster.clusterset.k8s.io"

// ClusterIDs resolves the ID of every cluster from the IDs they claim, by cluster name (a
// cluster without a ClusterProperty claims nothing: ""). A claimed ID is taken only when it is a
// DNS label (it becomes one in DNS names and a label value), no other cluster claims it and it
// is not another cluster's name; else the cluster keeps its name and refused says why. A remote
// is another trust domain: a hostile or mistaken one cannot take the name of another cluster's
// endpoints. The IDs returned are distinct, as the names are.
func ClusterIDs(claimed map[string]string) (ids, refused map[string]string) {
	claimants := map[string][]string{}
	for name, id := range claimed {
		if id != "" {
			claimants[id] = append(claimants[id], name)
		}
	}
	ids, refused = make(map[string]string, len(claimed)), map[string]string{}
	for name, id := range claimed {
		ids[name] = name
		if id == "" {
			continue
		}
		if reason := idRefused(name, id, claimed, claimants[id]); reason != "" {
			refused[name] = reason
			continue
		}
		ids[name] = id
	}
	return ids, refused
}

// idRefused is why cluster name may not have id, "" when it may.
func idRefused(name, id string, claimed map[string]string, claimants []string) string {
	if errs := validation.IsDNS1123Label(id); len(errs) > 0 {
		return fmt.Sprintf("cluster ID %q is not a DNS label: %s", id, strings.Join(errs, "; "))
	}
	if len(claimants) > 1 {
		others := slices.DeleteFunc(slices.Clone(claimants), func(c string) bool { return c == name })
		slices.Sort(others)
		return fmt.Sprintf("cluster ID %q is claimed by %s too", id, strings.Join(others, ", "))
	}
	if _, isName := claimed[id]; isName && id != name {
		return fmt.Sprintf("cluster ID %q is the name of another cluster", id)
	}
	return ""
}
