package clustertest

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// Server is an API server Main starts for the tests of a package: *Into is the cluster named
// Name, started with Options.
type Server struct {
	Into    **testenv.Cluster
	Name    string
	Options testenv.Options
}

// Main runs the tests of m with the API servers started once for all of them, and stops them
// when the tests end. Under -short it starts none: the tests that need them skip.
func Main(m *testing.M, servers ...Server) {
	if testenv.Short() {
		os.Exit(m.Run())
	}
	os.Exit(runWith(m, servers))
}

// runWith starts the servers in parallel, runs the tests if they all started, and stops those
// that did.
func runWith(m *testing.M, servers []Server) int {
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { *s.Into, errs[i] = testenv.StartCluster(s.Name, s.Options) })
	}
	wg.Wait()
	defer func() {
		for _, s := range servers {
			if *s.Into != nil {
				(*s.Into).Stop()
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
