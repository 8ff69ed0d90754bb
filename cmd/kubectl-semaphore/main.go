// Command kubectl-semaphore is the kubectl plugin of Semaphore (`kubectl semaphore ...`): it links
// clusters, checks that they work together, and shows the mesh. docs/cli.md describes it.
package main

import (
	"os"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
