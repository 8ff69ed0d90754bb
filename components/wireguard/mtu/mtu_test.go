package mtu_test

import (
	"testing"

	"github.com/kube-semaphore/semaphore/components/wireguard/mtu"
)

// auto, a number of 1280-9000, per remote with a bare value for the rest; remotes without any
// value are auto.
func TestSettingsPerRemote(t *testing.T) {
	for value, want := range map[string]map[string]int{
		"auto":              {"aws": 0, "gcp": 0},
		"1380":              {"aws": 1380, "gcp": 1380},
		"aws:1380":          {"aws": 1380, "gcp": 0},
		"aws:1380,1420":     {"aws": 1380, "gcp": 1420},
		"aws:auto,9000":     {"aws": 0, "gcp": 9000},
		"gcp:1280,aws:1300": {"aws": 1300, "gcp": 1280, "merit": 0},
	} {
		var s mtu.Settings
		if err := s.Decode(value); err != nil {
			t.Errorf("Decode(%q): %v", value, err)
			continue
		}
		for remote, w := range want {
			if got := s.For(remote); got.Fixed != w || got.Auto() != (w == 0) {
				t.Errorf("Decode(%q).For(%s) = %+v, want %d", value, remote, got, w)
			}
		}
	}
	if got := mtu.Fixed(1420).For("aws"); got.Fixed != 1420 {
		t.Errorf("Fixed(1420).For(aws) = %+v", got)
	}
}

func TestSettingsRefuseWhatIsNeitherAutoNorAnMTU(t *testing.T) {
	for _, value := range []string{"100", "1279", "9001", "big", "aws:", "aws:1380,aws:1400", "auto,1420", ":1420"} {
		var s mtu.Settings
		if err := s.Decode(value); err == nil {
			t.Errorf("Decode(%q): no error", value)
		}
	}
}

// The device carries the path less 60 bytes (IPv4 endpoints) or 80 (IPv6), never less than
// 1280; an unknown path gives 1420, which fits any Ethernet underlay.
func TestDeviceIsThePathLessTheOverhead(t *testing.T) {
	for _, tc := range []struct {
		path int
		ipv6 bool
		want int
	}{
		{1500, false, 1440},
		{1500, true, 1420},
		{1460, false, 1400}, // GCP
		{9001, false, 8941}, // AWS jumbo frames
		{1300, true, 1280},  // clamped
		{0, false, 1420},
	} {
		if got := mtu.Device(tc.path, tc.ipv6); got != tc.want {
			t.Errorf("Device(%d, ipv6 %v) = %d, want %d", tc.path, tc.ipv6, got, tc.want)
		}
	}
}

// The path is the smallest known of the node's own and what the remote publishes.
func TestPathIsTheSmallestKnown(t *testing.T) {
	for _, tc := range []struct {
		own       int
		published []int
		want      int
	}{
		{1500, nil, 1500},
		{1500, []int{9001, 1460}, 1460},
		{1400, []int{1460}, 1400},
		{0, []int{1460, 0}, 1460},
		{0, nil, 0},
	} {
		if got := mtu.Path(tc.own, tc.published); got != tc.want {
			t.Errorf("Path(%d, %v) = %d, want %d", tc.own, tc.published, got, tc.want)
		}
	}
}

// A remote may publish 1280-65535; anything else is refused.
func TestParsePublishedKeepsARemoteFromShrinkingTheDevice(t *testing.T) {
	for text, want := range map[string]int{"1280": 1280, "1460": 1460, "65535": 65535} {
		if got, err := mtu.ParsePublished(text); err != nil || got != want {
			t.Errorf("ParsePublished(%q) = %d, %v", text, got, err)
		}
	}
	for _, text := range []string{"", "576", "1279", "0", "-1500", "65536", "1500 ", "auto", "1e4"} {
		if got, err := mtu.ParsePublished(text); err == nil {
			t.Errorf("ParsePublished(%q) = %d, want an error", text, got)
		}
	}
}
