package component

import "runtime/debug"

// DefaultGCPercent is the collector's target (GOGC) of every component unless the environment
// sets GOGC. A controller's heap is mostly its caches, which live as long as the process; Go's
// default of 100 lets garbage grow as large as all of them before a collection, which doubles
// the memory to reserve for each controller. At 33 the heap peaks a third above what is live,
// for more frequent collections while a controller converges, when it has CPU to spare: it
// waits on the API server's rate limit (docs/performance.md has both sides' figures).
const DefaultGCPercent = 33

// tuneGC sets DefaultGCPercent unless lookup (os.LookupEnv) finds GOGC, which the runtime has
// applied already: an operator's setting wins.
func tuneGC(lookup func(string) (string, bool)) {
	if _, set := lookup("GOGC"); !set {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
