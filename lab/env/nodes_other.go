//go:build unix && !linux

package env

// Outside Linux there are no network namespaces: the lab runs without nodes, semaphore-wireguard
// and the ping, and says so.
func nodesUnsupported() string { return "network namespaces need Linux" }
