//go:build linux

package env

import "syscall"

// sysProcAttr puts a child in its own process group and, when dieWithLab is set, has the
// kernel kill it when the lab dies, even by SIGKILL (PR_SET_PDEATHSIG). The signal is tied to
// the OS thread that started the child; Go only retires threads that a goroutine locked and
// left locked, which the lab does only when testbed.InNetns cannot switch a thread back from a
// node's network namespace. The setting survives exec, so a node's semaphore-wireguard, started
// through ip netns exec, unshare and sh, dies with the lab too.
func sysProcAttr(dieWithLab bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if dieWithLab {
		attr.Pdeathsig = syscall.SIGKILL
	}
	return attr
}
