package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// outputFormat is the value of -o: json or yaml, or "" for the command's own text. Any other
// value is refused as the flag is parsed, a usage error.
type outputFormat string

// addOutput adds -o to cmd; text says what the command prints without it.
func addOutput(cmd *cobra.Command, text string) *outputFormat {
	f := new(outputFormat)
	cmd.Flags().VarP(f, "output", "o", "output format: json or yaml (default: "+text+")")
	return f
}

func (f *outputFormat) String() string { return string(*f) }

// Type names the flag's value in the help.
func (f *outputFormat) Type() string { return "json|yaml" }

// Set takes json, yaml, or "" for the default.
func (f *outputFormat) Set(s string) error {
	switch s {
	case "", "json", "yaml":
		*f = outputFormat(s)
		return nil
	}
	return fmt.Errorf("%q is not json or yaml", s)
}

// print writes v to w as JSON or YAML (the same fields: YAML is made from the JSON), or calls
// text to write the command's own format.
func (f outputFormat) print(w io.Writer, v any, text func() error) error {
	switch f {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return text()
}
