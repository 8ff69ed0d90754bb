// Package scenarios holds what the lab does to the mesh once it is up and its status is good,
// and what it asserts meanwhile: traffic between the providers' networks, Calico enforcing a
// policy built on semaphore-policy's sets, WireGuard peers following calico-ipam's blocks,
// every identity, the dashboards, a global service's failover, a hostile remote, kubectl
// semaphore check with a revoked token and a rollout during the outage, the upstream MCS
// conformance suite's Required specs, the global service moved to a ServiceExport without a
// failed request, a cluster uninstalled clean and installed again (All, which `lab check`
// runs), and the soak (Soak, which `lab soak` runs): churn, remote cuts and controller pods
// deleted, then the mesh compared with what the clusters hold.
//
// Each check is a Scenario: a name and a function of the running lab (env.Lab) that prints
// what it measured and returns the problems it found. Adding one is a new file in this
// package and a line in All: Run runs them in that order, each on the lab the ones before
// left. The scenarios that grew beyond a few files are packages of their own (hostile, soak,
// calico), and what several share is observe's.
package scenarios

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/scenarios/calico"
	"github.com/kube-semaphore/semaphore/lab/scenarios/hostile"
	"github.com/kube-semaphore/semaphore/lab/scenarios/soak"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// Scenario is one check of the running lab: Run prints what it does and measures, and returns
// the problems it found (none when the lab passes it).
type Scenario struct {
	Name string
	Run  func(ctx context.Context, l *env.Lab) []string
}

// All are the scenarios of `lab check`, in the order they run.
var All = []Scenario{
	{"the release's images by digest", checkReleaseImages},
	{"between providers", checkProviders},
	{"Calico policy", calico.CheckPolicy},
	{"calico-ipam blocks", calico.CheckBlocks},
	{"the getting-started guide's check", checkGuide},
	{"unreachable peers", checkUnreachablePeers},
	{"identities", checkIdentities},
	{"dashboards", checkDashboards},
	{"global service failover", checkGlobalFailover},
	{"gateway failover", checkGatewayFailover},
	// Before the plugin's check, which cuts gcp off aws: the honest traffic between them must
	// flow through the hostile remote's flood.
	{"hostile remote", hostile.Check},
	// Before the plugin's check too, which revokes gcp's token in aws: both need every cluster
	// to read every other.
	{"MCS conformance (Required)", checkConformance},
	{"from a global service to a ServiceExport", checkMigration},
	// Before the plugin's check, which then checks the upgraded release.
	{"upgrade from the previous release", checkUpgrade},
	{"kubectl semaphore check", checkWithPlugin},
	// Last: it uninstalls a cluster and installs every cluster again, mending what the
	// plugin's check broke.
	{"uninstall", checkUninstall},
}

// Soak is the scenario of `lab soak`: the lab churned for d, then checked.
func Soak(d time.Duration) []Scenario {
	return []Scenario{{"soak", func(ctx context.Context, l *env.Lab) []string { return soak.Run(ctx, l, d) }}}
}

// Run runs the scenarios of list in order, printing the problems of each, and stops at the
// first that finds any: the lab is not what the next ones expect then. It returns those
// problems, after the name of the scenario that found them.
func Run(ctx context.Context, l *env.Lab, list []Scenario) []string {
	return run(ctx, l, l.Out(), list)
}

// run is Run printing to out; at the end it says how long each scenario that ran took.
func run(ctx context.Context, l *env.Lab, out io.Writer, list []Scenario) []string {
	var took []scenarioTime
	defer func() { printTimes(out, took) }()
	for _, s := range list {
		start := time.Now()
		problems := s.Run(ctx, l)
		took = append(took, scenarioTime{s.Name, time.Since(start)})
		status.PrintProblems(out, problems)
		if len(problems) > 0 {
			return append([]string{fmt.Sprintf("scenario %q:", s.Name)}, problems...)
		}
	}
	return nil
}

// scenarioTime is how long a scenario took.
type scenarioTime struct {
	name string
	took time.Duration
}

// printTimes says how long the scenarios took in all and each, the slowest first: where a lab
// check's time goes. A scenario that took under a tenth of a second only said why it was
// skipped (a lab without nodes skips most), so it is left out, and so is the line when no
// scenario ran.
func printTimes(out io.Writer, took []scenarioTime) {
	took = slices.DeleteFunc(took, func(t scenarioTime) bool { return t.took < skippedUnder })
	if len(took) == 0 {
		return
	}
	var all time.Duration
	for _, t := range took {
		all += t.took
	}
	slices.SortStableFunc(took, func(a, b scenarioTime) int { return cmp.Compare(b.took, a.took) })
	each := make([]string, len(took))
	for i, t := range took {
		each[i] = fmt.Sprintf("%s %s", t.name, t.took.Round(skippedUnder))
	}
	fmt.Fprintf(out, "the scenarios took %s: %s\n", all.Round(skippedUnder), strings.Join(each, ", "))
}

// skippedUnder is how long a scenario that ran nothing may take: it prints why it skipped.
const skippedUnder = 100 * time.Millisecond

// Select returns the scenarios of list whose names match the regular expression pattern (all
// of them for ""), in their order, count times over: how a developer runs one scenario, or
// repeats a flaky one on a single bring-up, without the whole check.
func Select(list []Scenario, pattern string, count int) ([]Scenario, error) {
	if count < 1 {
		return nil, fmt.Errorf("-count must be at least 1, got %d", count)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("-run: %w", err)
	}
	var picked []Scenario
	for _, s := range list {
		if re.MatchString(s.Name) {
			picked = append(picked, s)
		}
	}
	if len(picked) == 0 {
		var names []string
		for _, s := range list {
			names = append(names, fmt.Sprintf("%q", s.Name))
		}
		return nil, fmt.Errorf("-run %q matches no scenario; they are %s", pattern, strings.Join(names, ", "))
	}
	var out []Scenario
	for range count {
		out = append(out, picked...)
	}
	return out, nil
}
