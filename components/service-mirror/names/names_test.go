package names_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-semaphore/semaphore/components/service-mirror/names"
)

// hashSuffix matches the "-<10 hex>" a shortened name ends with.
var hashSuffix = regexp.MustCompile(`-[0-9a-f]{10}$`)

func TestShortenFits(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
	}{
		{"empty", "", names.MaxLabel},
		{"short", "aws-sys-log-73736d-fluentd", names.MaxLabel},
		{"exactly max", strings.Repeat("a", names.MaxLabel), names.MaxLabel},
		{"exactly a small max", "abcdefghijklmnopqrst", 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.in, names.Shorten(tt.in, tt.max)); diff != "" {
				t.Errorf("Shorten(%q, %d) changed a name that fits (-want +got):\n%s", tt.in, tt.max, diff)
			}
		})
	}
}

func TestShortenTooLong(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		max        int
		wantPrefix string // what is kept of the name, before "-<hash>"
	}{
		{"one over", strings.Repeat("a", 64), 63, strings.Repeat("a", 52)},
		{"far over", strings.Repeat("b", 300), 63, strings.Repeat("b", 52)},
		{"small max", strings.Repeat("c", 30), 20, strings.Repeat("c", 9)},
		// The cut would leave "...-" before the hash; the dash goes, so the result is shorter.
		{"no dash before the hash", strings.Repeat("d", 51) + "-" + strings.Repeat("e", 20), 63, strings.Repeat("d", 51)},
		{"no dashes before the hash", strings.Repeat("d", 49) + "---" + strings.Repeat("e", 20), 63, strings.Repeat("d", 49)},
		{"no dot before the hash", strings.Repeat("f", 51) + "." + strings.Repeat("g", 20), 63, strings.Repeat("f", 51)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := names.Shorten(tt.in, tt.max)
			if !hashSuffix.MatchString(got) {
				t.Fatalf("Shorten(%q, %d) = %q, want it to end in -<10 hex characters>", tt.in, tt.max, got)
			}
			prefix := hashSuffix.ReplaceAllString(got, "")
			if diff := cmp.Diff(tt.wantPrefix, prefix); diff != "" {
				t.Errorf("Shorten(%q, %d) kept the wrong prefix (-want +got):\n%s", tt.in, tt.max, diff)
			}
			if len(got) > tt.max {
				t.Errorf("Shorten(%q, %d) = %q has %d characters, more than %d", tt.in, tt.max, got, len(got), tt.max)
			}
			if strings.HasSuffix(prefix, "-") || strings.HasSuffix(prefix, ".") {
				t.Errorf("Shorten(%q, %d) = %q has a dash or dot before the hash", tt.in, tt.max, got)
			}
		})
	}
}

func TestShortenExactLength(t *testing.T) {
	// Without dashes at the cut, a shortened name uses every character it may.
	for _, max := range []int{20, 40, names.MaxLabel, 253} {
		in := strings.Repeat("x", max+1)
		if got := names.Shorten(in, max); len(got) != max {
			t.Errorf("Shorten(<%d x>, %d) = %q has %d characters, want exactly %d", max+1, max, got, len(got), max)
		}
	}
}

func TestShortenDeterministicAndDistinct(t *testing.T) {
	base := strings.Repeat("n", 70)
	a, b := base+"a", base+"b"
	gotA, gotB := names.Shorten(a, names.MaxLabel), names.Shorten(b, names.MaxLabel)
	if again := names.Shorten(a, names.MaxLabel); again != gotA {
		t.Errorf("Shorten is not deterministic: %q then %q", gotA, again)
	}
	if gotA == gotB {
		t.Errorf("Shorten(%q) = Shorten(%q) = %q: names differing only at the end collide", a, b, gotA)
	}
	// Same prefix, different hash: the hash covers the whole name, not just the kept part.
	if gotA[:52] != gotB[:52] {
		t.Errorf("prefixes differ: %q vs %q", gotA, gotB)
	}
}

func FuzzShorten(f *testing.F) {
	f.Add("aws-sys-log-73736d-fluentd", 63)
	f.Add(strings.Repeat("a", 64), 63)
	f.Add(strings.Repeat("a-", 40), 20)
	f.Add(strings.Repeat("a", 51)+"-"+strings.Repeat("b", 40), 63)
	f.Add("", 20)
	f.Fuzz(func(t *testing.T, name string, limit int) {
		if limit < 20 || limit > 1000 {
			t.Skip()
		}
		got := names.Shorten(name, limit)
		if len(got) > limit {
			t.Errorf("Shorten(%q, %d) = %q has %d characters, more than %d", name, limit, got, len(got), limit)
		}
		if len(name) <= limit && got != name {
			t.Errorf("Shorten(%q, %d) = %q, want the name unchanged", name, limit, got)
		}
		if again := names.Shorten(name, limit); again != got {
			t.Errorf("Shorten(%q, %d) not deterministic: %q then %q", name, limit, got, again)
		}
		if len(validation.IsDNS1123Label(name)) == 0 {
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Errorf("Shorten(%q, %d) = %q is not a DNS label any more: %v", name, limit, got, errs)
			}
		}
	})
}
