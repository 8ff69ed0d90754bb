package mcs

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// Conditions are the desired conditions of a local ServiceExport e, given what every cluster's
// exports merged into (imp; ok false when none is valid) and whether the local ServiceImport is
// written (imported):
//   - Valid: the Service exists and may be exported (Export.Invalid);
//   - Ready: the Service is exported (the import holds it) or, when not yet, pending;
//   - Conflict: the properties the exports disagree on, raised on every export as the API
//     recommends, not only on those whose properties lost.
func Conditions(e Export, imp Import, ok, imported bool) []metav1.Condition {
	if reason, msg := e.Invalid(); reason != "" {
		return []metav1.Condition{
			condition(mcsv1beta1.ServiceExportConditionValid, metav1.ConditionFalse, reason, msg),
			condition(mcsv1beta1.ServiceExportConditionReady, metav1.ConditionFalse, mcsv1beta1.ServiceExportReasonFailed, "the ServiceExport is not valid"),
			noConflict("an export that is not valid takes no part in the ServiceImport"),
		}
	}
	out := []metav1.Condition{condition(mcsv1beta1.ServiceExportConditionValid, metav1.ConditionTrue, mcsv1beta1.ServiceExportReasonValid, "the Service is exported")}
	if ok && imported {
		out = append(out, condition(mcsv1beta1.ServiceExportConditionReady, metav1.ConditionTrue, mcsv1beta1.ServiceExportReasonExported, "the ServiceImport holds this cluster's endpoints"))
	} else {
		out = append(out, condition(mcsv1beta1.ServiceExportConditionReady, metav1.ConditionFalse, mcsv1beta1.ServiceExportReasonPending, "the ServiceImport is not written yet"))
	}
	if len(imp.Conflicts) == 0 {
		return append(out, noConflict("every exporting cluster defines the Service alike"))
	}
	return append(out, condition(mcsv1beta1.ServiceExportConditionConflict, metav1.ConditionTrue, mcsv1beta1.ServiceExportConditionReason(imp.ConflictReason()),
		"the exporting clusters define the Service differently; the oldest export ("+imp.From+") wins each conflicting property, ports are merged by name"))
}

func noConflict(msg string) metav1.Condition {
	return condition(mcsv1beta1.ServiceExportConditionConflict, metav1.ConditionFalse, "NoConflicts", msg)
}

func condition(t mcsv1beta1.ServiceExportConditionType, status metav1.ConditionStatus, reason mcsv1beta1.ServiceExportConditionReason, msg string) metav1.Condition {
	return metav1.Condition{Type: string(t), Status: status, Reason: string(reason), Message: msg}
}

// SetConditions returns actual with desired set (meta.SetStatusCondition: a condition whose
// status did not change keeps its transition time), conditions of other types kept, and whether
// anything changed: an export whose conditions hold is never written.
func SetConditions(actual []metav1.Condition, desired []metav1.Condition, generation int64) ([]metav1.Condition, bool) {
	next := append([]metav1.Condition(nil), actual...)
	changed := false
	for _, d := range desired {
		d.ObservedGeneration = generation
		changed = meta.SetStatusCondition(&next, d) || changed
	}
	return next, changed
}

// KeepRaisedConflict returns desired with the Conflict condition of actual when actual raises
// one and desired does not: while a cluster cannot be read, its export may still conflict, and
// a conflict is lowered only once every cluster is known.
func KeepRaisedConflict(desired, actual []metav1.Condition) []metav1.Condition {
	raised := meta.FindStatusCondition(actual, string(mcsv1beta1.ServiceExportConditionConflict))
	if raised == nil || raised.Status != metav1.ConditionTrue {
		return desired
	}
	out := append([]metav1.Condition(nil), desired...)
	for i := range out {
		if out[i].Type == raised.Type && out[i].Status != metav1.ConditionTrue {
			out[i] = *raised
		}
	}
	return out
}
