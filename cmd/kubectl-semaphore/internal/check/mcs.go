package check

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/mcsapi"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// mcsRead is what the checks of the Multi-Cluster Services API read of the local cluster: the
// API's resources it does not serve (or why that is not known), and its ServiceExports.
type mcsRead struct {
	missing []string
	apiErr  error
	exports []mcsv1beta1.ServiceExport
	listErr error
}

func (r mcsRead) served() bool { return r.apiErr == nil && len(r.missing) == 0 }

func (k *checker) readMCS(ctx context.Context) mcsRead {
	var r mcsRead
	r.missing, r.apiErr = mcsapi.Missing(k.client.Discovery())
	if r.served() {
		r.exports, r.listErr = mcsapi.ServiceExports(ctx, k.dyn)
	}
	return r
}

// checkMCS checks the Multi-Cluster Services API of the service mirror v: one result of each of
// mcs-api, mcs-exports and mcs-conflicts, which say so and pass when it does not serve the API.
func (k *checker) checkMCS(ctx context.Context, v controllers) []Result {
	res := func(check string) Result {
		return Result{Check: check, Cluster: v.c.LocalCluster(), Component: v.c.Name}
	}
	read := k.readMCS(ctx)
	if !v.c.ServesMCS() {
		return mcsOff(res, v.c, read)
	}
	out := []Result{checkMCSAPI(res(MCSAPI), v, read)}
	if !read.served() {
		for _, name := range []string{MCSExports, MCSConflicts} {
			out = append(out, pass(res(name), "the cluster does not serve %s (see %s): skipped", mcsapi.GroupVersion, MCSAPI))
		}
		return out
	}
	return append(out, checkExports(res(MCSExports), v.c, read), checkConflicts(res(MCSConflicts), read))
}

// mcsOff are the results of a service mirror that does not serve the API: skipped, but for
// ServiceExports in the cluster, which nothing of Semaphore serves then (a warning).
func mcsOff(res func(string) Result, c release.Component, read mcsRead) []Result {
	off := fmt.Sprintf("%s does not serve the Multi-Cluster Services API (%s is not true: the chart's serviceMirror.mcs.enabled)", c.WorkloadRef(), release.MCSEnabledEnv)
	exports := pass(res(MCSExports), "%s: skipped", off)
	if len(read.exports) > 0 {
		exports = warnRunbook(res(MCSExports), "check-mcs-exports", "%s, but the cluster has %d ServiceExports (%s): set serviceMirror.mcs.enabled=true to serve them, unless another implementation of the API does",
			off, len(read.exports), most(exportNames(read.exports), 5))
	}
	return []Result{pass(res(MCSAPI), "%s: skipped", off), exports, pass(res(MCSConflicts), "%s: skipped", off)}
}

// checkMCSAPI checks that the cluster serves the API, with its CRDs, and that the service mirror
// says it serves it.
func checkMCSAPI(res Result, v controllers, read mcsRead) Result {
	switch {
	case read.apiErr != nil:
		return fail(res, "check-mcs-api", "asking the API server whether it serves %s: %v", mcsapi.GroupVersion, read.apiErr)
	case len(read.missing) > 0:
		return fail(res, "check-mcs-api", "%s has %s=true, but the cluster does not serve %s (no %s): the service mirror waits for it and serves no ServiceExport; %s, or set serviceMirror.mcs.enabled=false",
			v.c.WorkloadRef(), release.MCSEnabledEnv, mcsapi.GroupVersion, strings.Join(read.missing, ", "), mcsapi.InstallCRDs)
	}
	return apiServed(res, v)
}

// apiServed checks what the service mirror's pods say in <prefix>_mcs_api_served: of replicas
// that elect a leader, which alone serves the API, the leader's when it is known, else whether
// any pod serves it.
func apiServed(res Result, v controllers) Result {
	family := v.metric("mcs_api_served")
	served := "the cluster serves " + mcsapi.GroupVersion
	pods := v.readable()
	if i := slices.IndexFunc(pods, func(p running) bool { return v.elected && p.pod.Name == v.leader }); i >= 0 {
		pods = pods[i : i+1]
	}
	var serving, waiting, older []string
	for _, p := range pods {
		switch value, ok := p.metrics.Value(family); {
		case !ok:
			older = append(older, v.where(p))
		case value == 1:
			serving = append(serving, v.where(p))
		default:
			waiting = append(waiting, v.where(p))
		}
	}
	switch {
	case len(serving) > 0:
		return pass(res, "%s, and %s serves it (%s 1)", served, most(serving, 3), family)
	case len(waiting) > 0:
		return fail(res, "check-mcs-api", "%s, but %s says %s 0: it has not found the API (it looks every 30s: when the CRDs were just installed, check again in a minute), else see its logs",
			served, most(waiting, 3), family)
	case len(older) > 0:
		return warnRunbook(res, "check-mcs-api", "%s, but %s export no %s: they run a version without the Multi-Cluster Services API, or started before %s was set; restart them",
			served, most(older, 5), family, release.MCSEnabledEnv)
	}
	return warnRunbook(res, "check-mcs-api", "%s; whether %s serves it is not known: no pod's metrics could be read through the API server's pod proxy", served, v.c.WorkloadRef())
}

// checkExports checks that every local ServiceExport is valid (names a Service it may export)
// and ready (exported): the service mirror says so in their conditions.
func checkExports(res Result, c release.Component, read mcsRead) Result {
	if read.listErr != nil {
		return fail(res, "check-mcs-exports", "listing the ServiceExports: %v", read.listErr)
	}
	var invalid, unsynced, pending []string
	for i := range read.exports {
		se := &read.exports[i]
		valid, ready := condition(se, mcsv1beta1.ServiceExportConditionValid), condition(se, mcsv1beta1.ServiceExportConditionReady)
		switch name := se.Namespace + "/" + se.Name; {
		case valid == nil:
			unsynced = append(unsynced, name)
		case valid.Status != metav1.ConditionTrue:
			invalid = append(invalid, describeCondition(name, valid))
		case ready == nil || ready.Status != metav1.ConditionTrue:
			pending = append(pending, describeCondition(name, ready))
		}
	}
	what := drift(
		finding{"ServiceExports not valid", invalid},
		finding{"ServiceExports without conditions (the service mirror has not synced them)", unsynced},
		finding{"ServiceExports valid but not ready", pending})
	switch {
	case len(invalid) > 0:
		return fail(res, "check-mcs-exports", "%s: a ServiceExport must have the name of a Service of its namespace that is not of type ExternalName; create that Service, or delete the ServiceExport", what)
	case what != "":
		return warnRunbook(res, "check-mcs-exports", "%s; see the logs of %s", what, c.WorkloadRef())
	case len(read.exports) == 0:
		return pass(res, "no ServiceExport in this cluster")
	}
	return pass(res, "%d ServiceExports, each valid and ready", len(read.exports))
}

// checkConflicts checks that no local ServiceExport is in conflict: the exporting clusters
// define the Service alike. A conflict is a warning: the import still serves, with the oldest
// export's properties.
func checkConflicts(res Result, read mcsRead) Result {
	if read.listErr != nil {
		return fail(res, "check-mcs-conflicts", "listing the ServiceExports: %v", read.listErr)
	}
	var conflicts []string
	for i := range read.exports {
		se := &read.exports[i]
		if c := condition(se, mcsv1beta1.ServiceExportConditionConflict); c != nil && c.Status == metav1.ConditionTrue {
			conflicts = append(conflicts, fmt.Sprintf("%s: its %s differ (%s)", se.Namespace+"/"+se.Name, properties(c.Reason), c.Reason))
		}
	}
	if len(conflicts) > 0 {
		return warnRunbook(res, "check-mcs-conflicts", "%d ServiceExports in conflict, %s: the exporting clusters define these Services differently; the oldest export wins each conflicting property and a port defined differently reaches only the clusters that define it as the import does; define each Service alike in every cluster that exports it",
			len(conflicts), most(conflicts, 5))
	}
	return pass(res, "no ServiceExport in conflict (%d ServiceExports)", len(read.exports))
}

// condition is se's condition of type t, nil when it has none.
func condition(se *mcsv1beta1.ServiceExport, t mcsv1beta1.ServiceExportConditionType) *metav1.Condition {
	return meta.FindStatusCondition(se.Status.Conditions, string(t))
}

// describeCondition names an export with what its condition c says: "namespace/name (Reason:
// message)".
func describeCondition(name string, c *metav1.Condition) string {
	if c == nil {
		return name + " (no Ready condition)"
	}
	return fmt.Sprintf("%s (%s: %s)", name, c.Reason, c.Message)
}

// conflictingProperty is what the exporting clusters disagree on, by the Conflict condition's
// reason.
var conflictingProperty = map[mcsv1beta1.ServiceExportConditionReason]string{
	mcsv1beta1.ServiceExportReasonPortConflict:                  "ports",
	mcsv1beta1.ServiceExportReasonTypeConflict:                  "types (headless or not)",
	mcsv1beta1.ServiceExportReasonSessionAffinityConflict:       "session affinities",
	mcsv1beta1.ServiceExportReasonSessionAffinityConfigConflict: "session affinity configs",
	mcsv1beta1.ServiceExportReasonLabelsConflict:                "exported labels",
	mcsv1beta1.ServiceExportReasonAnnotationsConflict:           "exported annotations",
	mcsv1beta1.ServiceExportReasonInternalTrafficPolicyConflict: "internal traffic policies",
	mcsv1beta1.ServiceExportReasonTrafficDistributionConflict:   "traffic distributions",
	mcsv1beta1.ServiceExportReasonIPFamilyConflict:              "IP families",
}

// properties names the properties a Conflict condition's reason says differ: "ports and types
// (headless or not)" of "PortConflict,TypeConflict".
func properties(reason string) string {
	var out []string
	for _, r := range strings.Split(reason, ",") {
		r = strings.TrimSpace(r)
		out = append(out, cmp.Or(conflictingProperty[mcsv1beta1.ServiceExportConditionReason(r)], r))
	}
	return strings.Join(out, " and ")
}

// exportNames are the namespace/names of exports.
func exportNames(exports []mcsv1beta1.ServiceExport) []string {
	out := make([]string, 0, len(exports))
	for _, se := range exports {
		out = append(out, se.Namespace+"/"+se.Name)
	}
	return out
}
