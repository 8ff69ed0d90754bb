//go:build unix && !linux

package main

import (
	"errors"
	"syscall"
)

// Outside Linux there is no /proc and no parent-death signal: children are stopped by the
// lab's teardown and by `lab down` only, and a lab killed hard leaves its API servers running.

var errNoProc = errors.New("no /proc on this system")

func sysProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func procStart(int) (uint64, error) { return 0, errNoProc }

func procRunning(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func procName(int) string { return "" }

func procCmdline(int) string { return "" }

func allPIDs() ([]int, error) { return nil, errNoProc }

func childrenOf(int) ([]int, error) { return nil, errNoProc }

func containerRoot(string) (string, error) { return "", errNoProc }
