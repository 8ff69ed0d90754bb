//go:build unix && !linux

package main

import (
	"errors"
	"time"
)

// Outside Linux there are no network namespaces: the lab runs without nodes, semaphore-wireguard
// and the ping, and says so.

var errNoNetns = errors.New("network namespaces need Linux")

func nodesUnsupported() string { return "network namespaces need Linux" }

func forwardIntoNetns(string, string) (func(), error) { return nil, errNoNetns }

func forwardFromNetns(string, string) (string, func(), error) { return "", nil, errNoNetns }

func pingInNetns(string, string, string, time.Duration) (time.Duration, error) {
	return 0, errNoNetns
}
