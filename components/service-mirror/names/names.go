// Package names derives Kubernetes object names that always fit the API server's limits.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxLabel is the longest DNS label, the limit for Service names and label values.
const MaxLabel = 63

// hashLen is the number of hex characters of the hash a shortened name ends with: 40 bits, so
// two different long names collide with negligible probability.
const hashLen = 10

// minShortened is the smallest limit Shorten accepts: one character of prefix, a dash and the hash.
const minShortened = hashLen + 2

// Shorten returns name unchanged when it fits limit characters. Otherwise it returns a prefix of
// name, a dash and a short hash of the whole name, limit characters in all. The result is
// deterministic, still a DNS label when name is one, and differs for different long names.
// limit must be at least MinShortened.
func Shorten(name string, limit int) string {
	if len(name) <= limit {
		return name
	}
	if limit < minShortened {
		panic("names.Shorten: limit below MinShortened")
	}
	sum := sha256.Sum256([]byte(name))
	suffix := hex.EncodeToString(sum[:])[:hashLen]
	// A prefix must not end in a dash ("a--hash" is valid but confusing) or a dot.
	prefix := strings.TrimRight(name[:limit-hashLen-1], "-.")
	return prefix + "-" + suffix
}
