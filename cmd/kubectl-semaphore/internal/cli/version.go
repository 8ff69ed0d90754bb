package cli

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/internal/version"
)

// clientVersion is what `kubectl semaphore version` says of the plugin itself.
type clientVersion struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func newVersion(o *options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Long: `Prints the version of kubectl-semaphore (the release it comes from, "dev" for a build of
its own), the Go version it was built with and its platform.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := clientVersion{Version: version.Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
			switch output {
			case "":
				_, err := fmt.Fprintf(o.out, "kubectl-semaphore %s (%s, %s)\n", v.Version, v.GoVersion, v.Platform)
				return err
			case "json":
				enc := json.NewEncoder(o.out)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			case "yaml":
				b, err := yaml.Marshal(v)
				if err != nil {
					return err
				}
				_, err = o.out.Write(b)
				return err
			}
			return fmt.Errorf("--output %q: json or yaml (default: one line)", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: one line)")
	return cmd
}
