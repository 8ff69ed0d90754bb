package scenarios

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-semaphore/semaphore/lab/env"
)

func names(list []Scenario) []string {
	var out []string
	for _, s := range list {
		out = append(out, s.Name)
	}
	return out
}

func TestSelectPicksScenariosByNameInTheirOrderAndRepeatsThem(t *testing.T) {
	list := []Scenario{{Name: "between providers"}, {Name: "hostile remote"}, {Name: "unreachable peers"}}
	for _, tc := range []struct {
		pattern string
		count   int
		want    []string
	}{
		{"", 1, []string{"between providers", "hostile remote", "unreachable peers"}},
		{"hostile", 3, []string{"hostile remote", "hostile remote", "hostile remote"}},
		{"peers|providers", 2, []string{"between providers", "unreachable peers", "between providers", "unreachable peers"}},
	} {
		got, err := Select(list, tc.pattern, tc.count)
		if err != nil {
			t.Fatalf("Select(%q, %d): %v", tc.pattern, tc.count, err)
		}
		if diff := cmp.Diff(tc.want, names(got)); diff != "" {
			t.Errorf("Select(%q, %d) (-want +got):\n%s", tc.pattern, tc.count, diff)
		}
	}
}

func TestSelectRefusesWhatPicksNothing(t *testing.T) {
	list := []Scenario{{Name: "hostile remote"}}
	for _, tc := range []struct {
		pattern string
		count   int
		want    string
	}{
		{"nothing", 1, `matches no scenario; they are "hostile remote"`},
		{"(", 1, "-run: error parsing regexp"},
		{"", 0, "-count must be at least 1"},
	} {
		if _, err := Select(list, tc.pattern, tc.count); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Select(%q, %d) = %v, want an error containing %q", tc.pattern, tc.count, err, tc.want)
		}
	}
}

func TestEveryScenarioCanBePickedAloneByItsName(t *testing.T) {
	for _, s := range All {
		got, err := Select(All, "^"+regexp.QuoteMeta(s.Name)+"$", 1)
		if err != nil || len(got) != 1 {
			t.Errorf("scenario %q: Select picked %v, %v", s.Name, names(got), err)
		}
	}
}

// Run stops at the first scenario that finds problems and returns them after its name, which
// the lab prints again at its very end; the scenarios after it do not run. It says how long
// each that ran took, the slowest first.
func TestRunStopsAtTheFirstFailureAndNamesIt(t *testing.T) {
	var ran []string
	scenario := func(name string, problems ...string) Scenario {
		return Scenario{Name: name, Run: func(context.Context, *env.Lab) []string {
			ran = append(ran, name)
			if name == "upgrade" {
				time.Sleep(200 * time.Millisecond) // the slower of the two that run
			}
			return problems
		}}
	}
	list := []Scenario{scenario("quiet"), scenario("upgrade", "the tunnel a -> b was down for 8s"), scenario("after")}
	var out bytes.Buffer
	got := run(context.Background(), nil, &out, list)
	if diff := cmp.Diff([]string{`scenario "upgrade":`, "the tunnel a -> b was down for 8s"}, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"quiet", "upgrade"}, ran); diff != "" {
		t.Errorf("scenarios run (-want +got):\n%s", diff)
	}
	if !strings.Contains(out.String(), "PROBLEMS\n  - the tunnel a -> b was down for 8s") {
		t.Errorf("printed %q, want the problems listed", out.String())
	}
	// quiet returned at once, as a skipped scenario does: it is left out of the times.
	if !regexp.MustCompile(`the scenarios took [0-9.]+m?s: upgrade [0-9.]+m?s\n$`).MatchString(out.String()) {
		t.Errorf("printed %q, want the time of the scenario that ran, last", out.String())
	}
}

func TestScenarioTimesListWhatRanTheSlowestFirstAndLeaveOutTheSkipped(t *testing.T) {
	for _, tc := range []struct {
		name string
		took []scenarioTime
		want string
	}{
		{"some ran", []scenarioTime{{"identities", 40 * time.Millisecond}, {"upgrade", 3 * time.Minute}, {"hostile remote", 70 * time.Second}},
			"the scenarios took 4m10s: upgrade 3m0s, hostile remote 1m10s\n"},
		{"none ran", []scenarioTime{{"upgrade", 0}, {"identities", time.Millisecond}}, ""},
		{"none at all", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			printTimes(&out, tc.took)
			if out.String() != tc.want {
				t.Errorf("printed %q, want %q", out.String(), tc.want)
			}
		})
	}
}
