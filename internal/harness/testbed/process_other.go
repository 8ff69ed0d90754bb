//go:build !linux

package testbed

import (
	"errors"
	"os"
	"syscall"
)

// Outside Linux there is no /proc: a process is known to run or not, and nothing more.

var errNoProc = errors.New("no /proc on this system")

// ProcessStat is what /proc/<pid>/stat tells of a process (see process_linux.go).
type ProcessStat struct {
	State string
	PPID  int
	Start uint64
}

func ReadProcessStat(int) (ProcessStat, error) { return ProcessStat{}, errNoProc }

func ProcessRunning(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

func ProcessName(int) string { return "" }

func ProcessCmdline(int) string { return "" }

func Processes() ([]int, error) { return nil, errNoProc }

func ChildProcesses(int) ([]int, error) { return nil, errNoProc }

func PodNetns(string) (string, error) { return "", errNoProc }

func PeakRSS(int) (float64, error) { return 0, errNoProc }

func PodProcessRoot(string, string) (string, error) { return "", errNoProc }

func PodProcessWith(string, string) (int, error) { return 0, errNoProc }
