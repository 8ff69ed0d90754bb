package component

import (
	"runtime/debug"
	"testing"
)

// Without GOGC a component collects at DefaultGCPercent; with it, at what GOGC says.
func TestDefaultGCPercentUnlessGOGCIsSet(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tuneGC(func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(77); got != DefaultGCPercent {
		t.Errorf("without GOGC: GC percent %d, want %d", got, DefaultGCPercent)
	}
	// The runtime applied GOGC=77 at start; tuneGC leaves it.
	tuneGC(func(name string) (string, bool) { return "77", name == "GOGC" })
	if got := debug.SetGCPercent(100); got != 77 {
		t.Errorf("with GOGC=77: GC percent %d, want 77", got)
	}
}
