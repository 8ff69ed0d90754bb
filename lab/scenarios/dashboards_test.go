package scenarios

import (
	"slices"
	"strings"
	"testing"
)

// Every dashboard query reads the metrics of at least one component, which tells the lab
// whether its lack of data is a problem, or Prometheus' own up, which every scrape gives.
func TestDashboardQueriesBelongToComponents(t *testing.T) {
	queries, err := dashboardQueries()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		if len(componentsOf(q.Expr)) == 0 && !strings.Contains(q.Expr, "up{") {
			t.Errorf("%s reads no component's metrics: %s", q.Where, q.Expr)
		}
	}
	if got := componentsOf(`rate(semaphore_wg_peers[1m]) + semaphore_policy_sets`); !slices.Equal(got, []string{"semaphore-wireguard", "semaphore-policy"}) {
		t.Errorf("componentsOf = %v", got)
	}
}
