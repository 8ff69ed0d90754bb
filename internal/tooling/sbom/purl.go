package sbom

import (
	"fmt"
	"strings"
)

// purl is the package URL pkg:<typ>/<name>@<version>?<qualifiers>: name may hold a namespace
// ("github.com/spf13/cobra", "debian/ca-certificates"), each of its segments percent-encoded;
// qualifiers are key/value pairs, given sorted by key as the purl specification wants them.
func purl(typ, name, version string, qualifiers ...string) string {
	segments := strings.Split(name, "/")
	for i, s := range segments {
		segments[i] = purlEscape(s, "")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pkg:%s/%s", typ, strings.Join(segments, "/"))
	if version != "" {
		b.WriteString("@" + purlEscape(version, ""))
	}
	for i := 0; i+1 < len(qualifiers); i += 2 {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		// A qualifier's value keeps its slashes (repository_url=ghcr.io/kube-semaphore/...),
		// as purls are commonly written and every parser reads them.
		b.WriteString(sep + qualifiers[i] + "=" + purlEscape(qualifiers[i+1], "/"))
	}
	return b.String()
}

// purlEscape percent-encodes s as a purl component: everything but ASCII letters and digits,
// '.', '-', '_', '~', the colon (which the specification leaves as it is) and the characters
// in keep. A '+' in a version (v28.0.0+incompatible, 20230311+deb12u1) so becomes %2B.
func purlEscape(s, keep string) string {
	var b strings.Builder
	for i := range len(s) {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			strings.IndexByte(".-_~:", c) >= 0, strings.IndexByte(keep, c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
