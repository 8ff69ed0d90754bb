package link

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"

	yaml "go.yaml.in/yaml/v3"
)

// Unlink takes a remote out of the consumer's values file by editing the file's YAML nodes, not
// its values: every other value keeps its text, order and comments (only the indentation is
// made even). The edit is then read back as a values file and compared with the values as read
// less the remote's entry and port, so that nothing else a YAML subtlety (an alias, a merge
// key) could change is written.

// valuesRemoval is a remote taken out of a values file, in memory: write writes it.
type valuesRemoval struct {
	path string
	// entry is the remote's entry the file had (nil: none), hadPort whether it gave the remote
	// a port, and port that port (0 when it was no port number).
	entry   *Entry
	hadPort bool
	port    int
	// out is the file without them; nil when there was nothing to take out.
	out []byte
}

// planRemoval takes remote's global.remotes entry and wireguard.listenPorts port out of the
// values file path, in memory. A missing file has nothing to take out; a file for another
// cluster than consumer (global.clusterName) is refused.
func planRemoval(path, consumer, remote string) (*valuesRemoval, error) {
	f, err := readValuesFile(path)
	if err != nil {
		return nil, err
	}
	if _, err := f.isOf(consumer); err != nil {
		return nil, err
	}
	r := &valuesRemoval{path: path}
	if r.entry, err = f.entry(remote); err != nil {
		return nil, err
	}
	r.port, r.hadPort = f.dropRemote(remote)
	if r.entry == nil && !r.hadPort {
		return r, nil
	}
	if r.out, err = withoutRemote(f.text, remote); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	byHand := fmt.Sprintf("take its global.remotes entry and wireguard.listenPorts.%s out by hand", remote)
	edited, err := parseValues(path, r.out)
	if err != nil {
		return nil, fmt.Errorf("taking out remote %s: %w; %s", remote, err, byHand)
	}
	if !reflect.DeepEqual(edited.vals, f.vals) {
		return nil, fmt.Errorf("%s: taking out remote %s would change other values: %s", path, remote, byHand)
	}
	return r, nil
}

// write writes the values file, when there was something to take out.
func (r *valuesRemoval) write() (changed bool, err error) {
	if r.out == nil {
		return false, nil
	}
	return true, replaceFile(r.path, r.out)
}

// dropRemote takes remote's entry out of the values as read, and its port, which it returns
// with whether there was one (0 for a value that is no port number, taken out all the same).
func (f *valuesFile) dropRemote(remote string) (port int, had bool) {
	if f.global["remotes"] != nil {
		f.remotes = slices.DeleteFunc(f.remotes, func(r any) bool {
			_, ok := named(r, remote)
			return ok
		})
		f.global["remotes"] = f.remotes
	}
	wireguard, _ := f.vals["wireguard"].(map[string]any)
	ports, _ := wireguard["listenPorts"].(map[string]any)
	value, had := ports[remote]
	delete(ports, remote)
	port, _ = portOf(value)
	return port, had
}

// withoutRemote is text, a values file, without remote's global.remotes entry and
// wireguard.listenPorts key, each with its comments; the rest keeps its comments.
func withoutRemote(text []byte, remote string) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var doc, more yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, errors.New("it holds several YAML documents, which a values file does not")
	}
	root := doc.Content[0]
	if remotes := nodeAt(root, "global", "remotes"); remotes != nil && remotes.Kind == yaml.SequenceNode {
		remotes.Content = slices.DeleteFunc(remotes.Content, func(n *yaml.Node) bool {
			name := nodeAt(n, "name")
			return name != nil && name.Kind == yaml.ScalarNode && name.Value == remote
		})
	}
	if ports := nodeAt(root, "wireguard", "listenPorts"); ports != nil && ports.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(ports.Content); i += 2 {
			if ports.Content[i].Value == remote {
				ports.Content = slices.Delete(ports.Content, i, i+2)
				break
			}
		}
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// nodeAt is the value under keys (nested) of the mapping n, nil when there is none.
func nodeAt(n *yaml.Node, keys ...string) *yaml.Node {
	for _, key := range keys {
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var value *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				value = n.Content[i+1]
			}
		}
		if value == nil {
			return nil
		}
		n = value
	}
	return n
}
