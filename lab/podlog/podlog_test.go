package podlog

import (
	"testing"
	"time"
)

// A line of the kubelet's log is the time, the stream, the tag and one of the sample program's
// JSON records; anything else is no record.
func TestParse(t *testing.T) {
	r, ok := Parse(`2026-05-01T10:00:00.123456789Z stdout F {"time":"x","level":"INFO","msg":"request","listen":8080,"client":"198.18.2.5","method":"GET","path":"/","from":"echo-client-1"}`)
	if !ok || r.Msg != "request" || r.Client != "198.18.2.5" || r.Time != time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC) {
		t.Errorf("request line: %+v, %v", r, ok)
	}
	r, ok = Parse(`2026-05-01T10:00:01Z stdout F {"level":"WARN","msg":"sent","url":"http://x/","err":"connection refused","duration":"1ms"}`)
	if !ok || r.Msg != "sent" || !r.Failed() {
		t.Errorf("failed attempt: %+v, %v", r, ok)
	}
	r, ok = Parse(`2026-05-01T10:00:01Z stdout F {"level":"INFO","msg":"sent","status":200,"reply":"served by echo-1"}`)
	if !ok || r.Failed() || r.Reply != "served by echo-1" {
		t.Errorf("attempt served: %+v, %v", r, ok)
	}
	for _, bad := range []string{"", "2026-05-01T10:00:01Z stdout F", "yesterday stdout F {}", "2026-05-01T10:00:01Z stdout F not json"} {
		if r, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) = %+v, true", bad, r)
		}
	}
}
