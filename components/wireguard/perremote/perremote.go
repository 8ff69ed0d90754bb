// Package perremote reads the settings of semaphore-wireguard that take a value per remote
// cluster (SEMAPHORE_WG_POD_CIDRS_FROM, SEMAPHORE_WG_ENDPOINT_ADDRESS_TYPES, SEMAPHORE_WG_MTU):
// comma-separated items, split by package remotepairs, each "remote:value" for a remote it names
// or a bare "value" for the remotes not named. What a value is, each setting says with the
// function that parses it.
package perremote

import (
	"fmt"
	"maps"
	"slices"

	"github.com/kube-semaphore/semaphore/internal/remotepairs"
)

// Values are a setting's values: one for each remote in ByRemote, and Rest for the others when
// HasRest.
type Values[T any] struct {
	Rest     T
	HasRest  bool
	ByRemote map[string]T
}

// For is the value of remote: its own, else Rest, else fallback.
func (v Values[T]) For(remote string, fallback T) T {
	if own, ok := v.ByRemote[remote]; ok {
		return own
	}
	if v.HasRest {
		return v.Rest
	}
	return fallback
}

// CheckRemotes reports a remote named in v that is not one of remotes.
func (v Values[T]) CheckRemotes(remotes []string) error {
	for _, name := range slices.Sorted(maps.Keys(v.ByRemote)) {
		if !slices.Contains(remotes, name) {
			return fmt.Errorf("%q is not in SEMAPHORE_REMOTES", name)
		}
	}
	return nil
}

// Parse reads one value per remote: a remote named twice, or two bare items, is an error. what
// names a value in messages ("source", "MTU").
func Parse[T any](value, what string, parse func(string) (T, error)) (Values[T], error) {
	var v Values[T]
	for _, item := range remotepairs.Split(value) {
		val, err := parseItem(item, what, parse)
		if err != nil {
			return Values[T]{}, err
		}
		if item.Remote == "" {
			if v.HasRest {
				return Values[T]{}, fmt.Errorf("more than one %s for the remotes not named (%q)", what, item.Text)
			}
			v.Rest, v.HasRest = val, true
			continue
		}
		if _, dup := v.ByRemote[item.Remote]; dup {
			return Values[T]{}, fmt.Errorf("remote %q is named twice", item.Remote)
		}
		if v.ByRemote == nil {
			v.ByRemote = map[string]T{}
		}
		v.ByRemote[item.Remote] = val
	}
	return v, nil
}

// ParseLists reads a list per remote: each item adds its value to the list of the remote it
// names, or to the list of the remotes not named, in the order written.
func ParseLists[T any](value, what string, parse func(string) (T, error)) (Values[[]T], error) {
	var v Values[[]T]
	for _, item := range remotepairs.Split(value) {
		val, err := parseItem(item, what, parse)
		if err != nil {
			return Values[[]T]{}, err
		}
		if item.Remote == "" {
			v.Rest, v.HasRest = append(v.Rest, val), true
			continue
		}
		if v.ByRemote == nil {
			v.ByRemote = map[string][]T{}
		}
		v.ByRemote[item.Remote] = append(v.ByRemote[item.Remote], val)
	}
	return v, nil
}

// parseItem parses the value of one item; a pair must name its remote.
func parseItem[T any](item remotepairs.Item, what string, parse func(string) (T, error)) (T, error) {
	if item.Pair && item.Remote == "" {
		var zero T
		return zero, fmt.Errorf("%q is not remote:%s", item.Text, what)
	}
	val, err := parse(item.Value)
	if err != nil {
		return val, fmt.Errorf("%q: %w", item.Text, err)
	}
	return val, nil
}
