package perremote_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-semaphore/semaphore/components/wireguard/perremote"
)

func parseNumber(s string) (int, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	return strconv.Atoi(s)
}

// One value per remote: a bare item is the value of the remotes not named, a named remote has
// its own; remotes named nowhere fall back.
func TestParseGivesEachRemoteItsValue(t *testing.T) {
	v, err := perremote.Parse(" aws:1, 3 ,, gcp:2", "number", parseNumber)
	if err != nil {
		t.Fatal(err)
	}
	for remote, want := range map[string]int{"aws": 1, "gcp": 2, "merit": 3} {
		if got := v.For(remote, 9); got != want {
			t.Errorf("For(%s) = %d, want %d", remote, got, want)
		}
	}
	pairs, err := perremote.Parse("aws:1", "number", parseNumber)
	if err != nil {
		t.Fatal(err)
	}
	if got := pairs.For("merit", 9); got != 9 {
		t.Errorf("For a remote not named, without a bare item: %d, want the fallback 9", got)
	}
	if err := pairs.CheckRemotes([]string{"gcp"}); err == nil || !strings.Contains(err.Error(), `"aws"`) {
		t.Errorf("CheckRemotes with aws unknown: %v", err)
	}
	if err := pairs.CheckRemotes([]string{"aws", "gcp"}); err != nil {
		t.Errorf("CheckRemotes: %v", err)
	}
}

// Each item adds to its remote's list in the order written; bare items make the list of the
// remotes not named.
func TestParseListsKeepsTheOrderOfEachRemote(t *testing.T) {
	v, err := perremote.ParseLists("aws:2,gcp:1,aws:1,3,gcp:3,4", "number", parseNumber)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int{"aws": {2, 1}, "gcp": {1, 3}, "merit": {3, 4}}
	for remote, w := range want {
		if diff := cmp.Diff(w, v.For(remote, nil)); diff != "" {
			t.Errorf("For(%s) (-want +got):\n%s", remote, diff)
		}
	}
}

// A pair without a remote, a bad value, a remote named twice and two bare values are errors that
// quote what is wrong.
func TestParseRefusesWhatItCannotRead(t *testing.T) {
	for value, want := range map[string]string{
		":1":          `":1" is not remote:number`,
		"aws:x":       `"aws:x"`,
		"aws:":        `"aws:"`,
		"aws:1,aws:2": `remote "aws" is named twice`,
		"1,2":         `more than one number`,
	} {
		if _, err := perremote.Parse(value, "number", parseNumber); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): %v, want an error with %s", value, err, want)
		}
	}
	for _, value := range []string{":1", "aws:x", "x"} {
		if _, err := perremote.ParseLists(value, "number", parseNumber); err == nil {
			t.Errorf("ParseLists(%q): no error", value)
		}
	}
}
