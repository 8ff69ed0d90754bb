// Command semaphore-wireguard runs on every node and keeps one WireGuard device per remote
// cluster, peered with that cluster's nodes and routing their pod CIDRs.
package main

import (
	"github.com/kube-semaphore/semaphore/components/wireguard/app"
	"github.com/kube-semaphore/semaphore/internal/daemon"
)

func main() { daemon.Main(app.Name, app.New, app.NewUninstalling) }
