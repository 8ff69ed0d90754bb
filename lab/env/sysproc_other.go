//go:build unix && !linux

package env

import "syscall"

// Outside Linux there is no parent-death signal: children are stopped by the lab's teardown
// and by `lab down` only, and a lab killed hard leaves its API servers running.
func sysProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
