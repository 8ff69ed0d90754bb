// Command semaphore-service-mirror mirrors opted-in Services of remote clusters into the local
// cluster as selector-less ClusterIP Services with EndpointSlices pointing at the remote pods.
package main

import (
	"github.com/kube-semaphore/semaphore/components/service-mirror/app"
	"github.com/kube-semaphore/semaphore/internal/daemon"
)

func main() { daemon.Main(app.Name, app.New, app.NewUninstalling) }
