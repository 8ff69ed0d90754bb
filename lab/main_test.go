package main

import (
	"bytes"
	"strings"
	"testing"
)

// A failed check ends with what failed, so that the end of a long output, all a CI system
// keeps, says it; a passed one ends with PASSED.
func TestVerdictEndsWithWhatFailed(t *testing.T) {
	var out bytes.Buffer
	if code := verdict(&out, "lab check", "5m0s", []string{`scenario "upgrade":`, "the tunnel a -> b was down for 8s"}); code != 1 {
		t.Errorf("exit code %d for a failed check, want 1", code)
	}
	want := "lab check: FAILED after 5m0s:\n  - scenario \"upgrade\":\n  - the tunnel a -> b was down for 8s\n"
	if out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	out.Reset()
	if code := verdict(&out, "lab check", "5m0s", nil); code != 0 || !strings.HasPrefix(out.String(), "lab check: PASSED in 5m0s") {
		t.Errorf("exit code %d and %q for a passed check, want 0 and PASSED", code, out.String())
	}
}
