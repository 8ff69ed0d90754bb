// Package layout is what a lab is, apart from the machinery that brings it up: its clusters,
// their providers' networks, nodes and addresses, the names of its releases, workloads and
// namespaces, which every part, the status and the checks agree on; and its run record
// (state.json), what a running lab says it runs and where.
//
// It reads a running lab (Running, ReadInternetCounters) but starts nothing, so that `lab
// status` and the conformance suite depend on it alone, not on lab/env, which builds,
// installs and tears down.
package layout
