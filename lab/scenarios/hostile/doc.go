// Package hostile is the hostile remote scenario (lab check, after the global service's
// failover): merit turns hostile towards gcp. With merit's admin credentials the lab creates in
// merit what a hostile or broken remote would publish: Nodes no kubelet runs, claiming half the
// internet, gcp's own pod range, the metadata range, endpoints that are not theirs; a mirrored
// Service whose EndpointSlice points at a gcp pod, a special address and one outside merit's
// range; a pod claiming a gcp pod's address and a host-network pod; more mirrored Services than
// gcp mirrors of one remote, one with 200 KiB of annotations; and a flood of EndpointSlice
// updates. Meanwhile gcp's forwarders keep sending to aws's fluentd. The lab then asserts that
// nothing of it reached gcp's (and aws's, merit's other consumer) mirrors, network sets,
// WireGuard devices or routes, that every refusal was counted and alerted on, that the honest
// traffic kept flowing and the controllers stayed within their memory limits, and, once the
// objects are deleted, that the lab is as healthy as before.
//
// The remote, the consumer, the namespace, the label and the limit the remote goes over are
// lab/layout's (HostileRemote...): lab/env sets the limit up, and the status shows the objects.
//
// Check runs it; Flood is the flood's client, which the lab runs as a program of its own
// (FloodCommand) in a CPU share that another cluster's machines would give it.
package hostile
