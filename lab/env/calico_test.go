package env

import (
	"fmt"
	"slices"
	"testing"
)

// aws's blocks are those docs/lab.md describes: aws-node-1's range in two blocks of its own,
// aws-node-2's lower half its own and its upper half aws-node-1's, from which aws-node-2's CNI
// hands out the addresses its pods borrow.
func TestCalicoBlocks(t *testing.T) {
	var got []string
	for _, b := range CalicoBlocks() {
		got = append(got, fmt.Sprintf("%s %s", b.CIDR, b.Node))
	}
	want := []string{"198.18.1.0/26 aws-node-1", "198.18.1.64/26 aws-node-1", "198.18.1.128/26 aws-node-2", "198.18.1.192/26 aws-node-1"}
	if !slices.Equal(got, want) {
		t.Errorf("blocks %v, want %v", got, want)
	}
	if start, end, ok := CalicoBorrowed("aws-node-2"); !ok || start != "198.18.1.200" || end != "198.18.1.250" {
		t.Errorf("aws-node-2's CNI range %s-%s (%v), want 198.18.1.200-198.18.1.250", start, end, ok)
	}
	if _, _, ok := CalicoBorrowed("aws-node-1"); ok {
		t.Error("aws-node-1 borrows")
	}
}
