// Package podlog reads what the lab's sample program (lab/cmd/sample) writes, as the kubelet
// keeps it in a node's /var/log/pods: one line per record, "<time> <stream> <tag> <line>" (the
// CRI log format), <line> one of the program's JSON records. The status reads fluentd's with it,
// and the checks the echo pods' and the senders'.
package podlog

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"time"
)

// Record is one line of the sample program's output, with the time the kubelet's log has for
// it: a request served ("request", with its client), or one sent ("sent", with the status and
// the reply, or the error).
type Record struct {
	Time   time.Time `json:"-"`
	Msg    string    `json:"msg"`
	Client string    `json:"client"`
	Status int       `json:"status"`
	Reply  string    `json:"reply"`
	Err    string    `json:"err"`
	// Duration is how long a "sent" attempt took ("1.2ms").
	Duration string `json:"duration"`
}

// Failed tells whether a "sent" record is a failed attempt.
func (r Record) Failed() bool { return r.Err != "" || r.Status != 200 }

// Read reads the records of the log at path.
func Read(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if r, ok := Parse(sc.Text()); ok {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

// Parse parses a line of the kubelet's log; ok is false for anything but one of the sample
// program's records.
func Parse(line string) (r Record, ok bool) {
	fields := strings.SplitN(line, " ", 4)
	if len(fields) < 4 {
		return Record{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, fields[0])
	if err != nil || json.Unmarshal([]byte(fields[3]), &r) != nil {
		return Record{}, false
	}
	r.Time = t
	return r, true
}
