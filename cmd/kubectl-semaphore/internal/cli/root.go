// Package cli is the command line of kubectl-semaphore: the root command with kubectl's client
// flags, and one file per subcommand.
package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// options are what every subcommand shares: kubectl's client flags (--kubeconfig, --context,
// --namespace, ...) and where to write.
type options struct {
	flags       *genericclioptions.ConfigFlags
	out, errOut io.Writer
}

// exitError is an error that only sets the exit status: the command has printed what went wrong.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Main runs the command line with args and returns the exit status.
func Main(args []string, out, errOut io.Writer) int {
	root := newRoot(out, errOut)
	root.SetArgs(args)
	err := root.Execute()
	var exit exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.code
	default:
		fmt.Fprintf(errOut, "error: %v\n", err)
		return 1
	}
}

// newRoot returns the root command, writing to out and errOut.
func newRoot(out, errOut io.Writer) *cobra.Command {
	o := &options{flags: genericclioptions.NewConfigFlags(true), out: out, errOut: errOut}
	root := &cobra.Command{
		Use:           "kubectl-semaphore",
		Short:         "Link Semaphore clusters, check them, and see the mesh",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	o.flags.AddFlags(root.PersistentFlags())
	for _, sub := range []func(*options) *cobra.Command{
		newLink,
		newCheck,
		newStatus,
		newGraph,
		newVersion,
	} {
		root.AddCommand(sub(o))
	}
	return root
}

// restConfig is the client configuration of kubeconfig context context ("" for the current
// one, or --context), with the other client flags applied.
func (o *options) restConfig(context string) (*rest.Config, error) {
	loader := o.flags.ToRawKubeConfigLoader()
	if context == "" {
		return loader.ClientConfig()
	}
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, err
	}
	if _, ok := raw.Contexts[context]; !ok {
		return nil, fmt.Errorf("no context %q in the kubeconfig", context)
	}
	return clientcmd.NewNonInteractiveClientConfig(raw, context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
}

// client is a client of kubeconfig context context, as restConfig.
func (o *options) client(context string) (kubernetes.Interface, *rest.Config, error) {
	cfg, err := o.restConfig(context)
	if err != nil {
		return nil, nil, err
	}
	c, err := kubernetes.NewForConfig(cfg)
	return c, cfg, err
}
