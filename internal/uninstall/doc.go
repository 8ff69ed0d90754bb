// Package uninstall is how `helm uninstall` leaves nothing a component made. Deleting a
// component's workload stops it, but what it wrote stays: mirrors, network sets, and on every
// node WireGuard devices, their routes, keys and Node annotations. So each chart runs a
// pre-delete hook (Hook): it switches the component's workload into the uninstall mode
// (SEMAPHORE_UNINSTALL=true), in which a pod removes what its component made and then reports
// ready, and waits for that rollout to finish before Helm deletes the workload.
//
// The removal itself goes by ownership, not by configuration: every object a component wrote
// carries its managed-by label (internal/ownership), so DeleteOwned finds all of them, whichever
// remotes the release once had, and never an object without it.
package uninstall
