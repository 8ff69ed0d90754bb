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

// Options are what every subcommand shares: kubectl's client flags (--kubeconfig, --context,
// --namespace, ...) and where to write.
type Options struct {
	Flags    *genericclioptions.ConfigFlags
	Out, Err io.Writer
}

// ExitError is an error that only sets the exit status: the command has printed what went wrong.
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Main runs the command line with args and returns the exit status.
func Main(args []string, out, errOut io.Writer) int {
	root := NewRoot(out, errOut)
	root.SetArgs(args)
	err := root.Execute()
	var exit ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.Code
	default:
		fmt.Fprintf(errOut, "error: %v\n", err)
		return 1
	}
}

// NewRoot returns the root command, writing to out and errOut.
func NewRoot(out, errOut io.Writer) *cobra.Command {
	o := &Options{Flags: genericclioptions.NewConfigFlags(true), Out: out, Err: errOut}
	root := &cobra.Command{
		Use:           "kubectl-semaphore",
		Short:         "Link Semaphore clusters, check them, and see the mesh",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	o.Flags.AddFlags(root.PersistentFlags())
	for _, sub := range []func(*Options) *cobra.Command{
		newLink,
		newCheck,
		newStatus,
		newGraph,
	} {
		root.AddCommand(sub(o))
	}
	return root
}

// RESTConfig is the client configuration of kubeconfig context context ("" for the current
// one, or --context), with the other client flags applied.
func (o *Options) RESTConfig(context string) (*rest.Config, error) {
	loader := o.Flags.ToRawKubeConfigLoader()
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

// Client is a client of kubeconfig context context, as RESTConfig.
func (o *Options) Client(context string) (kubernetes.Interface, *rest.Config, error) {
	cfg, err := o.RESTConfig(context)
	if err != nil {
		return nil, nil, err
	}
	c, err := kubernetes.NewForConfig(cfg)
	return c, cfg, err
}
