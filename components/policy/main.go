// Command semaphore-policy turns labelled pods of remote clusters into Calico GlobalNetworkSets,
// so ordinary Calico NetworkPolicies can allow or deny cross-cluster traffic.
package main

import (
	"github.com/kube-semaphore/semaphore/components/policy/app"
	"github.com/kube-semaphore/semaphore/internal/daemon"
)

func main() { daemon.Main(app.Name, app.New, app.NewUninstalling) }
