// Package observe is how the lab's scenarios look at the sample workloads and the
// controllers' workloads: the sample program's logs read as traffic (what a client sent, how
// it went, which servers served it) and the waits for pods and rollouts, which several
// scenarios share.
package observe
