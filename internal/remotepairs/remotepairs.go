// Package remotepairs splits the value of a per-remote setting (SEMAPHORE_REMOTE_POD_RANGES,
// SEMAPHORE_WITHDRAW_AFTER, SEMAPHORE_WG_POD_CIDRS_FROM, ...): comma-separated items, each
// "remote:value" or, where the setting has one for every remote, a bare "value". The remote's
// name ends at the first colon, so a value may hold colons (an IPv6 CIDR). What the values mean,
// and which items a setting allows, each setting decides.
package remotepairs

import "strings"

// Item is one item of a value.
type Item struct {
	// Text is the item as written, without surrounding space: for messages.
	Text string
	// Pair is whether the item is remote:value (it has a colon); Remote is then the part before
	// the first colon, possibly empty, and Value the rest. A bare item's Value is all of it.
	Pair          bool
	Remote, Value string
}

// Split returns the items of value, empty ones left out.
func Split(value string) []Item {
	var items []Item
	for text := range strings.SplitSeq(value, ",") {
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		remote, v, pair := strings.Cut(text, ":")
		if !pair {
			remote, v = "", text
		}
		items = append(items, Item{Text: text, Pair: pair, Remote: remote, Value: v})
	}
	return items
}
