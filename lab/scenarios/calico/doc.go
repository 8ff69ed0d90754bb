// Package calico holds the lab's scenarios of Semaphore with Calico: the policy (CheckPolicy),
// a NetworkPolicy of docs/policy.md that Felix enforces on semaphore-policy's network sets,
// and the calico-ipam blocks (CheckBlocks), which semaphore-wireguard's peers in the other
// clusters follow as the nodes claim, borrow from and release them. Each file's first
// comment says what its scenario does and asserts.
package calico
