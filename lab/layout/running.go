package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The lab directory: a lab takes it with its pid file, and keeps its runtime state there as
// long as it runs (the binaries and the logs stay).

// PIDFile holds the pid of the lab that runs in the directory.
const PIDFile = "lab.pid"

// ReadPID reads the pid of the lab that took dir.
func ReadPID(dir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, PIDFile))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Join(dir, PIDFile), err)
	}
	return pid, nil
}

// Running returns the pid and run record of the lab that runs in dir. ok is false when none
// does; rec is then the record a lab that died left behind, if any.
func Running(dir string) (pid int, rec *Record, ok bool, err error) {
	rec, err = LoadRecord(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, nil, false, err
	}
	pid, err = ReadPID(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, rec, false, nil
	}
	if err != nil {
		return 0, rec, false, err
	}
	return pid, rec, LabProcess(pid, rec).Alive(), nil
}

// LabProcess is the lab process pid, whose start time rec has when it is its record.
func LabProcess(pid int, rec *Record) Process {
	p := Process{PID: pid}
	if rec != nil && rec.PID == pid {
		p.Start = rec.PIDStart
	}
	return p
}
