// Command chartschema writes the values.schema.json of the umbrella chart and of each component's
// subchart from the sources in charts/schema (run by `make generate`). Helm checks a chart's
// values against that chart's own file, and a subchart is installable alone, so every file must
// be complete; yet most of a subchart's schema (the global values, image, resources, monitoring,
// RBAC, ...) is the same in every chart. The sources say it once:
//
//	every-chart.json      what the umbrella and every subchart have (global and its definition,
//	                      semaphore-common, prometheusRule, dashboards)
//	every-component.json  what every component's subchart has
//	<chart>.json          a chart's own part, named after its directory: semaphore.json (the
//	                      umbrella), service-mirror.json, policy.json, wireguard.json
//
// A chart's file is the shared sources and its own part merged: objects merge key by key, so an
// own part may add to a shared property (its description, one more property); a value that two
// sources both set is an error naming it. Order of keys: the document's as in the own part, then
// what only the shared sources have (definitions); the chart's properties in the order of its
// values.yaml (a key it lacks stays after the key before it); below that, the first source's keys
// first. Files are written indented by two spaces, in ASCII, and only when they changed.
//
//	chartschema [-sources DIR] [-umbrella DIR] [COMPONENT...]
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf16"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kube-semaphore/semaphore/internal/ownership"
)

func main() {
	sources := flag.String("sources", "charts/schema", "the directory of the schema sources")
	umbrella := flag.String("umbrella", "charts/semaphore", "the umbrella chart")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: chartschema [-sources DIR] [-umbrella DIR] [COMPONENT...] (each with a subchart of that name under the umbrella's charts/; all components by default)")
		flag.PrintDefaults()
	}
	flag.Parse()
	components := flag.Args()
	if len(components) == 0 {
		components = ownership.Components
	}
	for _, c := range Plan(*sources, *umbrella, components) {
		changed, err := write(c)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chartschema:", err)
			os.Exit(1)
		}
		if changed {
			fmt.Println("generate: wrote " + c.File())
		}
	}
}

// Chart is one chart whose schema is generated, and its sources: the shared ones, then its own.
type Chart struct {
	Dir     string
	Sources []string
}

// File is the chart's schema file.
func (c Chart) File() string { return filepath.Join(c.Dir, "values.schema.json") }

// Plan lists the umbrella and the components' subcharts with their sources.
func Plan(sources, umbrella string, components []string) []Chart {
	everyChart := filepath.Join(sources, "every-chart.json")
	charts := []Chart{{umbrella, []string{everyChart, filepath.Join(sources, filepath.Base(umbrella)+".json")}}}
	for _, c := range components {
		charts = append(charts, Chart{filepath.Join(umbrella, "charts", c),
			[]string{everyChart, filepath.Join(sources, "every-component.json"), filepath.Join(sources, c+".json")}})
	}
	return charts
}

// write composes the chart's schema and writes it when it changed.
func write(c Chart) (bool, error) {
	data, err := Compose(c)
	if err != nil {
		return false, err
	}
	if old, err := os.ReadFile(c.File()); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	return true, os.WriteFile(c.File(), data, 0o644)
}

// Compose merges the chart's sources into its values.schema.json.
func Compose(c Chart) ([]byte, error) {
	parts := make([]*object, len(c.Sources))
	doc := &object{}
	for i, src := range c.Sources {
		var err error
		if parts[i], err = readObject(src); err != nil {
			return nil, err
		}
		if path := merge(doc, parts[i], ""); path != "" {
			return nil, clash(src, path, c.Sources[:i], parts[:i])
		}
	}
	own := parts[len(parts)-1]
	rest := slices.DeleteFunc(slices.Clone(doc.keys), own.has)
	doc.keys = append(slices.Clone(own.keys), rest...)
	if props, ok := doc.vals["properties"].(*object); ok {
		order, err := valuesOrder(filepath.Join(c.Dir, "values.yaml"))
		if err != nil {
			return nil, err
		}
		sortByValues(props, order)
	}
	var b bytes.Buffer
	encode(&b, doc, "")
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// clash says which earlier source already set path, which src sets again.
func clash(src, path string, earlier []string, parts []*object) error {
	for i, p := range parts {
		if p.lookup(strings.Split(path, ".")) {
			return fmt.Errorf("%s: %s is set by %s too", src, path, earlier[i])
		}
	}
	return fmt.Errorf("%s: %s is set twice", src, path)
}

// object is a JSON object that keeps its keys in order.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) has(k string) bool { _, ok := o.vals[k]; return ok }

func (o *object) set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if !o.has(k) {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// lookup says whether o has the value at path (keys of nested objects).
func (o *object) lookup(path []string) bool {
	v, ok := o.vals[path[0]]
	if len(path) == 1 || !ok {
		return ok
	}
	sub, ok := v.(*object)
	return ok && sub.lookup(path[1:])
}

// merge adds src's keys to dst, copying src's objects (so that src stays as it is): an object both
// have merges key by key; any other value both have is a clash. It returns the dotted path of the
// first clash, "" when there is none.
func merge(dst, src *object, path string) string {
	for _, k := range src.keys {
		p := strings.TrimPrefix(path+"."+k, ".")
		v := src.vals[k]
		sub, isObject := v.(*object)
		old, ok := dst.vals[k]
		if !ok && !isObject {
			dst.set(k, v)
			continue
		}
		if !ok {
			old = &object{}
			dst.set(k, old)
		}
		into, ok := old.(*object)
		if !ok || !isObject {
			return p
		}
		if p := merge(into, sub, p); p != "" {
			return p
		}
	}
	return ""
}

// sortByValues puts the properties in the order of the top-level keys of values.yaml; a property
// that values.yaml lacks stays right after the one before it.
func sortByValues(props *object, order []string) {
	index := map[string]int{}
	for i, k := range order {
		index[k] = i
	}
	rank, last := map[string]int{}, -1
	for _, k := range props.keys {
		if i, ok := index[k]; ok {
			last = i
		}
		rank[k] = last
	}
	slices.SortStableFunc(props.keys, func(a, b string) int { return cmp.Compare(rank[a], rank[b]) })
}

// valuesOrder is the top-level keys of the values file at path, in order (none without the file).
func valuesOrder(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var keys []string
	if len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode {
		for i, n := range doc.Content[0].Content {
			if i%2 == 0 {
				keys = append(keys, n.Value)
			}
		}
	}
	return keys, nil
}

// readObject reads the JSON object in the file at path, keeping the order of keys.
func readObject(path string) (*object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decode(dec)
	if err == nil {
		if _, end := dec.Token(); end != io.EOF {
			err = errors.New("more after the object")
		}
	}
	o, ok := v.(*object)
	if err == nil && !ok {
		err = errors.New("not a JSON object")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return o, nil
}

// decode reads one JSON value: an *object, []any, string, json.Number, bool or nil.
func decode(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		o := &object{vals: map[string]any{}}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			if o.has(k.(string)) {
				return nil, fmt.Errorf("key %q twice in an object", k)
			}
			v, err := decode(dec)
			if err != nil {
				return nil, err
			}
			o.set(k.(string), v)
		}
		_, err := dec.Token()
		return o, err
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := decode(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return t, nil
}

// encode writes v indented by two spaces a level, one value a line; empty objects and arrays as {}
// and [].
func encode(b *bytes.Buffer, v any, indent string) {
	inner := indent + "  "
	switch v := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, k := range v.keys {
			next(b, i, inner)
			encodeString(b, k)
			b.WriteString(": ")
			encode(b, v.vals[k], inner)
		}
		end(b, len(v.keys), indent, '}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			next(b, i, inner)
			encode(b, e, inner)
		}
		end(b, len(v), indent, ']')
	case string:
		encodeString(b, v)
	default: // json.Number, bool, nil
		data, _ := json.Marshal(v)
		b.Write(data)
	}
}

// next starts the i-th item of an object or array on a line of its own.
func next(b *bytes.Buffer, i int, indent string) {
	if i > 0 {
		b.WriteByte(',')
	}
	b.WriteString("\n" + indent)
}

// end closes an object or array of n items with its closing bracket.
func end(b *bytes.Buffer, n int, indent string, bracket byte) {
	if n > 0 {
		b.WriteString("\n" + indent)
	}
	b.WriteByte(bracket)
}

// encodeString writes s as a JSON string in ASCII: <, > and & as they are, every other character
// outside ASCII as \u escapes.
func encodeString(b *bytes.Buffer, s string) {
	var q bytes.Buffer
	enc := json.NewEncoder(&q)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	for _, r := range strings.TrimSuffix(q.String(), "\n") {
		if r < 0x80 {
			b.WriteRune(r)
			continue
		}
		for _, u := range utf16.Encode([]rune{r}) {
			fmt.Fprintf(b, `\u%04x`, u)
		}
	}
}
