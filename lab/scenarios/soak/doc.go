// Package soak is the soak (`bash ci/lab soak`, `make soak`): the lab under churn for a while, then the mesh
// must be exactly what the clusters hold, with the controllers' goroutines and memory within
// bounds and every alert quiet. The churn, all at once:
//   - every soakChurnEvery, one change in a random cluster: a workload scaled (pods created and
//     deleted: in mirrored and global Services, in network sets, one set that comes and goes), a
//     mirrored Service created, deleted or given another port, a global Service created in or
//     deleted from the cluster;
//   - every minute a remote cut (the other clusters' packets to its API server dropped on the
//     lab's internet: the controllers' watches hang, as behind a lost link) for soakCutFor, and
//     restored;
//   - every two minutes a controller pod deleted: the leader of a Deployment's Lease, or a
//     semaphore-wireguard pod, in turn.
//
// The churn's objects live in soakNamespace of every cluster, and go with it at the end.
//
// Run churns and checks; drift.go compares the mesh with what the clusters hold.
package soak
